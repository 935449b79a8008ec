/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * storm_sha256.c - SHA-256 (storm_sha256.h).
 */
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

#include "storm_sha256.h"

struct storm_sha256 {
	EVP_MD_CTX *ctx;
};

storm_sha256_t *storm_sha256_new(void)
{
	storm_sha256_t *h = malloc(sizeof(*h));

	if (!h)
		return NULL;
	if (!(h->ctx = EVP_MD_CTX_new()) ||
	    EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL) != 1) {
		storm_sha256_free(h);
		return NULL;
	}
	return h;
}

int storm_sha256_update(storm_sha256_t *h, const void *p, size_t n)
{
	return EVP_DigestUpdate(h->ctx, p, n) == 1 ? 0 : -1;
}

int storm_sha256_final(storm_sha256_t *h, uint8_t out[STORM_SHA256_LEN])
{
	unsigned int len = 0;

	if (EVP_DigestFinal_ex(h->ctx, out, &len) != 1 ||
	    len != STORM_SHA256_LEN)
		return -1;
	return 0;
}

void storm_sha256_free(storm_sha256_t *h)
{
	if (!h)
		return;
	EVP_MD_CTX_free(h->ctx);
	free(h);
}

int storm_sha256_buf(const void *p, size_t n, uint8_t out[STORM_SHA256_LEN])
{
	storm_sha256_t *h = storm_sha256_new();
	int rc = -1;

	if (h && !storm_sha256_update(h, p, n) && !storm_sha256_final(h, out))
		rc = 0;
	storm_sha256_free(h);
	return rc;
}

void storm_sha256_hex(const uint8_t sha[STORM_SHA256_LEN],
		      char out[STORM_SHA256_HEX])
{
	static const char digit[] = "0123456789abcdef";

	for (int i = 0; i < STORM_SHA256_LEN; i++) {
		out[2 * i] = digit[sha[i] >> 4];
		out[2 * i + 1] = digit[sha[i] & 15];
	}
	out[2 * STORM_SHA256_LEN] = '\0';
}

static int nibble(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int storm_sha256_parse(const char *hex, uint8_t sha[STORM_SHA256_LEN])
{
	uint8_t out[STORM_SHA256_LEN];

	for (int i = 0; i < STORM_SHA256_LEN; i++) {
		int hi = nibble(hex[2 * i]), lo = hi < 0 ? -1 : nibble(hex[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -1;
		out[i] = (uint8_t) (hi << 4 | lo);
	}
	if (hex[2 * STORM_SHA256_LEN])
		return -1;
	memcpy(sha, out, sizeof(out));
	return 0;
}
