/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_mech_client.c - libstormmech client ranks (sm_client.c): a transient
 * root outside the node table (srun on a login node) that the nodes learn
 * per operation from the address its messages carry.
 *
 * Two node contexts with progress threads and one client context, all in
 * this process on loopback (tcp;ofi_rxm), ports from the PID so that
 * parallel runs do not collide.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/stormmech/stormmech.h"

#include "check_run.h"

/* internal, in libstormmech.a */
extern int sm_client_addr_ok(const char *a, size_t maxlen);

static storm_ctx_t *node[2];
static char addr[2][32];

static void quiet(void *arg, storm_log_level_t lvl, const char *msg)
{
	if (lvl == STORM_LOG_ERROR)
		fprintf(stderr, "stormmech: %s\n", msg);
}

/* Opens the two nodes on ports below Linux's ephemeral range (32768 up),
 * where no outgoing connection of another test or cluster on the host can
 * sit; a port taken anyway moves both to another pair. */
static int open_nodes(int base)
{
	const char *nodes[2] = { addr[0], addr[1] };

	for (int i = 0; i < 2; i++)
		snprintf(addr[i], sizeof(addr[i]), "127.0.0.1:%d", base + i);
	for (int i = 0; i < 2; i++) {
		storm_cfg_t cfg;

		storm_cfg_init(&cfg);
		cfg.port = base + i;
		cfg.rank = i;
		cfg.nodes = nodes;
		cfg.nnodes = 2;
		cfg.region_size = 4 << 20;
		cfg.nvars = 32;
		cfg.timeout_ms = 3000;
		if (storm_ctx_open(&cfg, &node[i]) != 0) {
			for (int j = 0; j < i; j++) {
				storm_ctx_close(node[j]);
				node[j] = NULL;
			}
			return -1;
		}
		storm_set_log_fn(node[i], quiet, NULL, STORM_LOG_ERROR);
	}
	return 0;
}

static void setup(void)
{
	int rc = -1;

	for (int tries = 0; rc != 0 && tries < 50; tries++)
		rc = open_nodes(24000 + ((getpid() + tries * 389) % 2000) * 4);
	ck_assert_int_eq(rc, 0);
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(storm_ctx_start_progress(node[i], 0), 0);
}

static void teardown(void)
{
	for (int i = 0; i < 2; i++) {
		storm_ctx_close(node[i]);
		node[i] = NULL;
	}
}

static storm_ctx_t *client(int rank)
{
	storm_ctx_t *c = NULL;
	storm_cfg_t cfg;

	storm_cfg_init(&cfg);
	cfg.port = 0;
	cfg.rank = rank;
	cfg.region_size = 0;
	cfg.nvars = 32;
	cfg.timeout_ms = 3000;
	ck_assert_int_eq(storm_ctx_open(&cfg, &c), 0);
	storm_set_log_fn(c, quiet, NULL, STORM_LOG_ERROR);
	ck_assert_int_eq(storm_ctx_set_peer(c, 0, addr[0]), 0);
	ck_assert_int_eq(storm_ctx_set_peer(c, 1, addr[1]), 0);
	return c;
}

START_TEST(test_addr_validation)
{
	ck_assert(sm_client_addr_ok("127.0.0.1:7100", 48));
	ck_assert(sm_client_addr_ok("10.1.2.3:1", 48));
	ck_assert(!sm_client_addr_ok("", 48));
	ck_assert(!sm_client_addr_ok("127.0.0.1", 48));
	ck_assert(!sm_client_addr_ok("127.0.0.1:0", 48));
	ck_assert(!sm_client_addr_ok("127.0.0.1:65536", 48));
	ck_assert(!sm_client_addr_ok("127.0.0.1:7x", 48));
	ck_assert(!sm_client_addr_ok("host.example:7100", 48));
	ck_assert(!sm_client_addr_ok("1.2.3.4.5:7100", 48));
	ck_assert(!sm_client_addr_ok("127.0.0.1:7100", 5));	/* unterminated */
	ck_assert(storm_rank_is_client(STORM_CLIENT_RANK_FIRST));
	ck_assert(storm_rank_is_client(STORM_CLIENT_RANK_LAST));
	ck_assert(!storm_rank_is_client(STORM_CLIENT_RANK_FIRST - 1));
	ck_assert(!storm_rank_is_client(0));
}
END_TEST

START_TEST(test_client_is_root_and_origin)
{
	storm_ctx_t *c = client(STORM_CLIENT_RANK_FIRST + 33);
	static char buf[3 * 512 * 1024 + 17];
	storm_set_t set, failed, unr;
	char a[64];
	size_t sz;

	ck_assert_int_eq(storm_ctx_addr(c, a, sizeof(a)), 0);
	ck_assert(strncmp(a, "127.0.0.1:", 10) == 0);
	ck_assert(strcmp(a, "127.0.0.1:0") != 0);	/* a real port */
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (char) (i * 7 + 1);
	storm_set_clear(&set);
	storm_set_add(&set, 0);
	storm_set_add(&set, 1);
	/* XFER-AND-SIGNAL rooted at the client, multi-chunk */
	ck_assert_int_eq(storm_xfer_sync(c, &set, buf, sizeof(buf), 4096, 3,
					 &failed), 0);
	for (int i = 0; i < 2; i++) {
		char *r = storm_region_ptr(node[i], &sz);
		uint64_t ev = 0;

		ck_assert(memcmp(r + 4096, buf, sizeof(buf)) == 0);
		ck_assert_int_eq(storm_event_wait(node[i], 3, 1, 3000), 0);
		ck_assert_int_eq(storm_event_test(node[i], 3, &ev), 0);
		ck_assert(ev >= 1);
	}
	/* COMPARE-AND-WRITE with the client as origin: the serializer (rank 0)
	 * answers the client it learned from the request */
	storm_var_set(node[0], 20, 5);
	storm_var_set(node[1], 20, 5);
	ck_assert_int_eq(storm_caw(c, &set, 20, STORM_EQ, 5, 21, 9, &unr), 1);
	for (int i = 0; i < 2; i++) {
		uint64_t v = 0;

		storm_var_get(node[i], 21, &v);
		ck_assert_int_eq(v, 9);
	}
	storm_var_set(node[1], 20, 6);
	ck_assert_int_eq(storm_caw(c, &set, 20, STORM_EQ, 5, -1, 0, &unr), 0);
	ck_assert_int_eq(storm_set_count(&unr), 0);
	storm_ctx_close(c);
}
END_TEST

START_TEST(test_client_moves)
{
	/* the same client rank from a new endpoint (new port): the nodes
	 * follow the address carried by the messages */
	storm_set_t set, failed;
	char b = 42;

	storm_set_clear(&set);
	storm_set_add(&set, 0);
	storm_set_add(&set, 1);
	for (int round = 0; round < 2; round++) {
		storm_ctx_t *c = client(STORM_CLIENT_RANK_LAST);

		ck_assert_int_eq(storm_xfer_sync(c, &set, &b, 1, 100 + round,
						 STORM_NO_EVENT, &failed), 0);
		storm_ctx_close(c);
	}
	for (int i = 0; i < 2; i++) {
		char *r = storm_region_ptr(node[i], NULL);

		ck_assert_int_eq(r[100], 42);
		ck_assert_int_eq(r[101], 42);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("stormmech client ranks");
	TCase *t = tcase_create("client");

	tcase_add_test(t, test_addr_validation);
	tcase_add_checked_fixture(t, setup, teardown);
	tcase_add_test(t, test_client_is_root_and_origin);
	tcase_add_test(t, test_client_moves);
	tcase_set_timeout(t, 60);
	suite_add_tcase(s, t);
	return storm_check_run(s);
}
