/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * storm_sha256.h - SHA-256 through OpenSSL's libcrypto (EVP), which picks
 * the CPU's SHA instructions where there are some: the content names of
 * the node-local broadcast cache, computed by srun and by the node
 * manager alike.  In its own library (libstormsha) so that only the
 * programs that hash link libcrypto.
 */
#ifndef STORM_SHA256_H
#define STORM_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define STORM_SHA256_LEN 32
#define STORM_SHA256_HEX (2 * STORM_SHA256_LEN + 1)	/* with the NUL */

typedef struct storm_sha256 storm_sha256_t;

/* A fresh hash; NULL on ENOMEM. */
extern storm_sha256_t *storm_sha256_new(void);
/* 0, or -1 (libcrypto failed; nothing a caller can mend). */
extern int storm_sha256_update(storm_sha256_t *h, const void *p, size_t n);
/* The digest; h is spent (free it).  0 or -1. */
extern int storm_sha256_final(storm_sha256_t *h,
			      uint8_t out[STORM_SHA256_LEN]);
extern void storm_sha256_free(storm_sha256_t *h);

/* The digest of n bytes at p; 0 or -1. */
extern int storm_sha256_buf(const void *p, size_t n,
			    uint8_t out[STORM_SHA256_LEN]);

/* Lowercase hex, NUL-terminated. */
extern void storm_sha256_hex(const uint8_t sha[STORM_SHA256_LEN],
			     char out[STORM_SHA256_HEX]);
/* Exactly 64 hex digits (either case) into sha; 0 or -1. */
extern int storm_sha256_parse(const char *hex,
			      uint8_t sha[STORM_SHA256_LEN]);

#endif /* STORM_SHA256_H */
