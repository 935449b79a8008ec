/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_nm_relay_req.c - srun's broadcast request as the relay's door reads
 * it: whole or byte by byte, never a byte of the file after it, refusals
 * with their reasons, and memory that follows what was sent; and how long
 * the relay then waits for its nodes to hold a file of that size.
 */
#include <arpa/inet.h>
#include <check.h>
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "src/nm/nm_relay_req.h"
#include "src/nm/nm_relay_state.h"

#include "check_run.h"

static char err[256];

/* header + cred + nodes + "FILE" (the file's first bytes) */
static size_t build(char *out, uint32_t magic, const char *cred,
		    const char *nodes, uint64_t key, uint64_t size)
{
	storm_relay_req_t h = {
		.magic = htonl(magic),
		.cred_len = htonl((uint32_t) strlen(cred)),
		.nodes_len = htonl((uint32_t) strlen(nodes)),
		.key = htobe64(key), .size = htobe64(size),
	};
	size_t n = 0;

	memcpy(out, &h, sizeof(h));
	n += sizeof(h);
	memcpy(out + n, cred, strlen(cred));
	n += strlen(cred);
	memcpy(out + n, nodes, strlen(nodes));
	n += strlen(nodes);
	memcpy(out + n, "FILE", 4);
	return n + 4;
}

/* Feed buf in pieces of at most `step`, as the door does: never more than
 * the reader wants.  Returns the final rc and how many bytes it took. */
static int feed_all(nm_relay_req_t *r, const char *buf, size_t len,
		    size_t step, size_t *taken)
{
	size_t off = 0;
	int rc = NM_RELAY_REQ_MORE;

	while (off < len && rc == NM_RELAY_REQ_MORE) {
		size_t n = nm_relay_req_want(r, step);

		if (!n)
			break;
		if (n > len - off)
			n = len - off;
		rc = nm_relay_req_feed(r, buf + off, n, err, sizeof(err));
		off += n;
	}
	*taken = off;
	return rc;
}

START_TEST(whole_request_then_stops_before_the_file)
{
	char buf[512];
	size_t len = build(buf, STORM_RELAY_MAGIC, "MUNGE:abc:", "node[1-8]",
			   0x1234, 4096), taken;
	nm_relay_req_t r = { 0 };

	ck_assert_int_eq(feed_all(&r, buf, len, 4096, &taken), NM_RELAY_REQ_DONE);
	ck_assert_uint_eq(taken, len - 4);	/* "FILE" left on the socket */
	ck_assert_uint_eq(nm_relay_req_want(&r, 4096), 0);
	ck_assert_str_eq(nm_relay_req_cred(&r), "MUNGE:abc:");
	ck_assert_str_eq(nm_relay_req_nodes(&r), "node[1-8]");
	ck_assert_uint_eq(r.key, 0x1234);
	ck_assert_uint_eq(r.hdr.size, 4096);
	nm_relay_req_free(&r);
}
END_TEST

START_TEST(byte_by_byte)
{
	char buf[512];
	size_t len = build(buf, STORM_RELAY_MAGIC, "MUNGE:xyz:", "node1",
			   7, 1), taken;
	nm_relay_req_t r = { 0 };

	ck_assert_int_eq(feed_all(&r, buf, len, 1, &taken), NM_RELAY_REQ_DONE);
	ck_assert_uint_eq(taken, len - 4);
	ck_assert_str_eq(nm_relay_req_cred(&r), "MUNGE:xyz:");
	ck_assert_str_eq(nm_relay_req_nodes(&r), "node1");
	nm_relay_req_free(&r);
}
END_TEST

static int refused(uint32_t magic, const char *cred, const char *nodes,
		   uint64_t key)
{
	char buf[512];
	size_t len = build(buf, magic, cred, nodes, key, 10), taken;
	nm_relay_req_t r = { 0 };
	int rc = feed_all(&r, buf, len, 4096, &taken);

	nm_relay_req_free(&r);
	return rc;
}

START_TEST(refusals)
{
	ck_assert_int_eq(refused(0x47455420, "c", "n", 1), -EBADMSG); /* "GET " */
	ck_assert_str_eq(err, "malformed request (not a STORM broadcast, or sizes out of range)");
	ck_assert_int_eq(refused(STORM_RELAY_MAGIC, "", "n", 1), -EBADMSG);
	ck_assert_int_eq(refused(STORM_RELAY_MAGIC, "c", "", 1), -EBADMSG);
	ck_assert_int_eq(refused(STORM_RELAY_MAGIC, "c", "n", 0), -EBADMSG);
	/* a key with only bits outside the transfer key is no key */
	ck_assert_int_eq(refused(STORM_RELAY_MAGIC, "c", "n",
				 ~STORM_BCAST_KEY_MASK), -EBADMSG);
}
END_TEST

START_TEST(sizes_out_of_range_refused_at_the_header)
{
	storm_relay_req_t h = { .magic = htonl(STORM_RELAY_MAGIC),
				.cred_len = htonl(STORM_BCAST_MAX_CRED + 1),
				.nodes_len = htonl(1), .key = htobe64(1) };
	nm_relay_req_t r = { 0 };

	ck_assert_int_eq(nm_relay_req_feed(&r, &h, sizeof(h), err, sizeof(err)),
			 -EBADMSG);
	nm_relay_req_free(&r);
	h.cred_len = htonl(1);
	h.nodes_len = htonl(STORM_RELAY_MAX_NODELIST + 1);
	ck_assert_int_eq(nm_relay_req_feed(&r, &h, sizeof(h), err, sizeof(err)),
			 -EBADMSG);
	nm_relay_req_free(&r);
}
END_TEST

START_TEST(nul_inside_credential_or_nodes)
{
	char buf[512];
	size_t len = build(buf, STORM_RELAY_MAGIC, "MUNGE:ab:", "node1", 9, 1),
	       taken;
	nm_relay_req_t r = { 0 };

	buf[sizeof(storm_relay_req_t) + 3] = '\0';
	ck_assert_int_eq(feed_all(&r, buf, len, 4096, &taken), -EBADMSG);
	ck_assert_str_eq(err, "malformed request (NUL in the credential or node list)");
	nm_relay_req_free(&r);
	len = build(buf, STORM_RELAY_MAGIC, "MUNGE:ab:", "node1", 9, 1);
	buf[len - 4 - 1] = '\0';	/* last byte of the node list */
	ck_assert_int_eq(feed_all(&r, buf, len, 4096, &taken), -EBADMSG);
	nm_relay_req_free(&r);
}
END_TEST

/* A header that announces the largest node list costs nothing until the
 * list arrives, and then about what arrived. */
START_TEST(memory_follows_what_was_sent)
{
	storm_relay_req_t h = { .magic = htonl(STORM_RELAY_MAGIC),
				.cred_len = htonl(STORM_BCAST_MAX_CRED),
				.nodes_len = htonl(STORM_RELAY_MAX_NODELIST),
				.key = htobe64(1) };
	nm_relay_req_t r = { 0 };
	char junk[100];

	memset(junk, 'x', sizeof(junk));
	ck_assert_int_eq(nm_relay_req_feed(&r, &h, sizeof(h), err, sizeof(err)),
			 NM_RELAY_REQ_MORE);
	ck_assert_uint_eq(nm_relay_req_bytes(&r), sizeof(r));
	ck_assert_int_eq(nm_relay_req_feed(&r, junk, sizeof(junk), err,
					   sizeof(err)), NM_RELAY_REQ_MORE);
	ck_assert_uint_le(nm_relay_req_bytes(&r), sizeof(r) + 4096);
	/* more than the request lacks is refused, not consumed */
	ck_assert_uint_eq(nm_relay_req_want(&r, SIZE_MAX),
			  STORM_BCAST_MAX_CRED + STORM_RELAY_MAX_NODELIST - 100);
	nm_relay_req_free(&r);
	ck_assert_uint_eq(nm_relay_req_bytes(&r), sizeof(r));
}
END_TEST

/* Timeout, and a second more for every 64 MiB the nodes must allocate
 * or check: a big file on a busy node is not a node that never answers. */
START_TEST(nodes_wait_grows_with_the_file)
{
	ck_assert_int_eq(nm_relay_wait_ms(5000000, 0), 5000);
	ck_assert_int_eq(nm_relay_wait_ms(5000000, 192ull << 20), 8000);
	ck_assert_int_eq(nm_relay_wait_ms(1000, 1ull << 30), 1 + 16000);
	ck_assert_int_eq(nm_relay_wait_ms(UINT64_MAX, UINT64_MAX), INT32_MAX);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("nm_relay_req");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, whole_request_then_stops_before_the_file);
	tcase_add_test(tc, byte_by_byte);
	tcase_add_test(tc, refusals);
	tcase_add_test(tc, sizes_out_of_range_refused_at_the_header);
	tcase_add_test(tc, nul_inside_credential_or_nodes);
	tcase_add_test(tc, memory_follows_what_was_sent);
	tcase_add_test(tc, nodes_wait_grows_with_the_file);
	suite_add_tcase(s, tc);
	return storm_check_run(s);
}
