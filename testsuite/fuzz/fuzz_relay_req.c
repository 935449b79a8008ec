/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_relay_req.c - libFuzzer target: whatever a connection to BcastPort
 * sends, read by the relay's door in the pieces the network cuts it into
 * (the first byte picks the piece size).  The reader never takes more
 * than the request lacks, holds no more than was sent, and a complete
 * request yields NUL-terminated strings of the announced lengths.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "src/nm/nm_relay_req.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	nm_relay_req_t r = { 0 };
	char err[256];
	size_t step, off = 1, sent = 0;
	int rc = NM_RELAY_REQ_MORE;

	if (!size)
		return 0;
	step = (size_t) data[0] + 1;
	while (off < size && rc == NM_RELAY_REQ_MORE) {
		size_t n = nm_relay_req_want(&r, step);

		if (n > size - off)
			n = size - off;
		rc = nm_relay_req_feed(&r, data + off, n, err, sizeof(err));
		off += n;
		sent += n;
		if (nm_relay_req_bytes(&r) > sizeof(r) + sent + 4096 + 2)
			abort();	/* memory beyond what was sent */
	}
	if (rc == NM_RELAY_REQ_DONE &&
	    (strlen(nm_relay_req_cred(&r)) != r.hdr.cred_len ||
	     strlen(nm_relay_req_nodes(&r)) != r.hdr.nodes_len ||
	     sent != sizeof(storm_relay_req_t) + r.hdr.cred_len + r.hdr.nodes_len))
		abort();
	if (rc < 0 && rc != -EBADMSG && rc != -ENOMEM)
		abort();
	nm_relay_req_free(&r);
	return 0;
}
