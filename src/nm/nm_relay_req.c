/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nm_relay_req.c - srun's broadcast request, read incrementally
 * (nm_relay_req.h).  No sockets here, so the parser is unit-tested and
 * fuzzed on its own.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nm_relay_req.h"

/* The body grows in steps of this as bytes arrive. */
#define BODY_STEP 4096

static size_t body_len(const nm_relay_req_t *r)
{
	return (size_t) r->hdr.cred_len + r->hdr.nodes_len;
}

static size_t total_len(const nm_relay_req_t *r)
{
	return sizeof(storm_relay_req_t) + body_len(r);
}

extern size_t nm_relay_req_want(const nm_relay_req_t *r, size_t max)
{
	size_t left;

	if (r->have < sizeof(storm_relay_req_t))
		left = sizeof(storm_relay_req_t) - r->have;
	else
		left = total_len(r) - r->have;
	return left < max ? left : max;
}

/* The header is in: byte order, then the same checks the relay always
 * made.  The file's size is checked later against the credential and
 * BcastMaxSize, where the answer can say which node refused. */
static int header_done(nm_relay_req_t *r, char *err, size_t errlen)
{
	storm_relay_req_t *h = &r->hdr;

	h->magic = ntohl(h->magic);
	h->cred_len = ntohl(h->cred_len);
	h->nodes_len = ntohl(h->nodes_len);
	h->key = be64toh(h->key);
	h->size = be64toh(h->size);
	r->key = h->key & STORM_BCAST_KEY_MASK;
	if (h->magic != STORM_RELAY_MAGIC || !h->cred_len ||
	    h->cred_len > STORM_BCAST_MAX_CRED || !h->nodes_len ||
	    h->nodes_len > STORM_RELAY_MAX_NODELIST || !r->key) {
		snprintf(err, errlen, "malformed request (not a STORM broadcast, or sizes out of range)");
		return -EBADMSG;
	}
	return NM_RELAY_REQ_MORE;
}

static int body_room(nm_relay_req_t *r, size_t need, char *err, size_t errlen)
{
	size_t cap;
	char *p;

	if (need <= r->body_cap)
		return 0;
	cap = (need + BODY_STEP - 1) / BODY_STEP * BODY_STEP;
	if (cap > body_len(r) + 2)
		cap = body_len(r) + 2;	/* + the two NULs */
	p = realloc(r->body, cap);
	if (!p) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	r->body = p;
	r->body_cap = cap;
	return 0;
}

/* Credential and node list are in: split them with NULs and refuse a NUL
 * inside either (the relay passes both on as C strings). */
static int body_done(nm_relay_req_t *r, char *err, size_t errlen)
{
	size_t cl = r->hdr.cred_len, nl = r->hdr.nodes_len;

	memmove(r->body + cl + 1, r->body + cl, nl);
	r->body[cl] = '\0';
	r->body[cl + 1 + nl] = '\0';
	if (strlen(r->body) != cl || strlen(r->body + cl + 1) != nl) {
		snprintf(err, errlen, "malformed request (NUL in the credential or node list)");
		return -EBADMSG;
	}
	return NM_RELAY_REQ_DONE;
}

extern int nm_relay_req_feed(nm_relay_req_t *r, const void *buf, size_t n,
			     char *err, size_t errlen)
{
	const size_t hl = sizeof(storm_relay_req_t);
	size_t off;
	int rc;

	if (n > nm_relay_req_want(r, n)) {
		snprintf(err, errlen, "more bytes than the request");
		return -EBADMSG;
	}
	if (r->have < hl) {
		memcpy((char *) &r->hdr + r->have, buf, n);
		r->have += n;
		if (r->have < hl)
			return NM_RELAY_REQ_MORE;
		return header_done(r, err, errlen);
	}
	off = r->have - hl;
	if ((rc = body_room(r, off + n + 2, err, errlen)))
		return rc;
	memcpy(r->body + off, buf, n);
	r->have += n;
	if (r->have < total_len(r))
		return NM_RELAY_REQ_MORE;
	return body_done(r, err, errlen);
}

extern const char *nm_relay_req_cred(const nm_relay_req_t *r)
{
	return r->body;
}

extern const char *nm_relay_req_nodes(const nm_relay_req_t *r)
{
	return r->body + r->hdr.cred_len + 1;
}

extern size_t nm_relay_req_bytes(const nm_relay_req_t *r)
{
	return sizeof(*r) + r->body_cap;
}

extern void nm_relay_req_free(nm_relay_req_t *r)
{
	free(r->body);
	memset(r, 0, sizeof(*r));
}
