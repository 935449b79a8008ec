/* SPDX-License-Identifier: GPL-2.0-or-later */
/* a rogue endpoint sends garbage, lies and oversized messages: the victims
 * count and drop them, and keep working */
#include "mech_test.h"
#include "sm_internal.h"
#include <unistd.h>

static int rogue_send(storm_ctx_t *rg, int dest, const void *buf, size_t len)
{
	/* a context the rogue's own progress engine frees on completion */
	struct sm_tx *tx = calloc(1, sizeof(*tx));
	int rc;
	tx->kind = SM_CTX_TX;
	tx->child = -1;
	for (int i = 0; i < 2000; i++) {
		/* under the lock, as the library's own sends: its completion
		 * cannot run before it is on the posted list, and close frees
		 * it if the victim never completes it */
		pthread_mutex_lock(&rg->lock);
		rc = (int)fi_send(rg->ep, buf, len, NULL, rg->peer[dest],
				  &tx->fctx);
		if (!rc)
			sm_tx_posted(rg, tx);
		pthread_mutex_unlock(&rg->lock);
		if (rc != -FI_EAGAIN)
			break;
		storm_progress(rg, 100);
	}
	if (rc) {
		fprintf(stderr, "rogue send of %zu: %d\n", len, rc);
		free(tx);
	}
	return rc;
}

static void base_hdr(storm_ctx_t *rg, struct sm_hdr *h, int claim_src,
		     int nmemb)
{
	sm_hdr_init(rg, h, SM_DATA, NULL);
	h->src = (uint32_t)claim_src;
	h->root = (uint32_t)nmemb;          /* the driver */
	h->op_id = 0xdead0000ull + (uint64_t)rand();
	h->arity = 4;
	h->chunk = STORM_DEF_CHUNK;
	h->timeout_ms = 1000;
	h->rev = 1;
	storm_set_range(&h->set, 0, nmemb - 1);
}

START_TEST(rogue)
{
	const char *prov = PROV_OR_SKIP(_i);
	storm_cfg_t cfg, rcfg;
	struct harness h;
	const int N = 3;
	storm_ctx_t *rg = NULL;
	char hp[64];

	if (strcmp(prov, "shm") == 0 && !getenv("STORM_TEST_SHM_ROGUE")) {
		/* Known gap: with libfabric 1.17 shm, a receiver that gets
		 * messages from an endpoint outside its AV spins inside
		 * fi_cq_read; tcp;ofi_rxm covers the validation code. */
		fprintf(stderr, "SKIP: rogue test on shm (provider hangs on "
			"messages from unknown endpoints)\n");
		return;
	}
	h_cfg(&cfg, prov);
	START_OR_FAIL(&h, N, &cfg);
	rcfg = cfg;
	rcfg.rank = 30;
	rcfg.region_size = 4096;
	for (int t = 0; t < 20 && !rg; t++) {
		rcfg.port = 50000 + (getpid() * 13 + t * 101) % 10000;
		if (storm_ctx_open(&rcfg, &rg))
			rg = NULL;
	}
	ck_assert_ptr_nonnull(rg);
	for (int r = 0; r <= N; r++) {
		snprintf(hp, sizeof(hp), "127.0.0.1:%d", h.sh->port[r]);
		ck_assert_int_eq(storm_ctx_set_peer(rg, r, hp), 0);
	}
	size_t big = sizeof(struct sm_hdr) + STORM_DEF_CHUNK + 8192;
	uint8_t *buf = calloc(1, big);
	struct sm_hdr *hd = (struct sm_hdr *)buf;
	int sent = 0;
	bool shm = strcmp(prov, "shm") == 0;
	for (int v = 0; v < N; v++) {
		/* short garbage, long garbage, wrong magic/version */
		memset(buf, 0xa5, 400);
		rogue_send(rg, v, buf, 10);
		rogue_send(rg, v, buf, 400);
		base_hdr(rg, hd, N, N);
		hd->version = 99;
		rogue_send(rg, v, buf, sizeof(*hd));
		/* unknown sender */
		base_hdr(rg, hd, 30, N);
		rogue_send(rg, v, buf, sizeof(*hd));
		/* posing as the driver: offset outside the region */
		base_hdr(rg, hd, N, N);
		hd->offset = (20u << 20) - 10;
		hd->total = 100;
		hd->payload = 100;
		rogue_send(rg, v, buf, sizeof(*hd) + 100);
		/* huge length */
		base_hdr(rg, hd, N, N);
		hd->total = (1ull << 40) + 10;
		hd->chunk_idx = (uint32_t)((1ull << 40) / STORM_DEF_CHUNK);
		hd->payload = 10;
		rogue_send(rg, v, buf, sizeof(*hd) + 10);
		/* payload field lies about the message size */
		base_hdr(rg, hd, N, N);
		hd->total = 100;
		hd->payload = 100;
		rogue_send(rg, v, buf, sizeof(*hd) + 50);
		/* chunk larger than the victim's buffers */
		base_hdr(rg, hd, N, N);
		hd->chunk = 4u << 20;
		hd->total = 10;
		hd->payload = 10;
		rogue_send(rg, v, buf, sizeof(*hd) + 10);
		/* oversized message: truncated by the provider.  Known gap:
		 * on shm (1.17) a receiver then spins in the provider, so
		 * the case runs on the other providers only. */
		base_hdr(rg, hd, N, N);
		if (!shm)
			rogue_send(rg, v, buf, big);
		/* ack and result for ops that do not exist */
		base_hdr(rg, hd, N, N);
		hd->type = SM_ACK;
		rogue_send(rg, v, buf, sizeof(*hd));
		base_hdr(rg, hd, N, N);
		hd->type = SM_CAW_RESULT;
		rogue_send(rg, v, buf, sizeof(*hd));
		/* a real member that is not this victim's parent */
		base_hdr(rg, hd, (v + 1) % N, N);
		hd->total = 10;
		hd->payload = 10;
		rogue_send(rg, v, buf, sizeof(*hd) + 10);
		/* unknown message type */
		base_hdr(rg, hd, N, N);
		hd->type = 77;
		rogue_send(rg, v, buf, sizeof(*hd));
		sent = shm ? 12 : 13;
		if (getenv("STORM_TEST_VERBOSE"))
			fprintf(stderr, "rogue: sent to %d\n", v);
	}
	/* let everything arrive */
	for (uint64_t dl = h_now_ms() + H_WAIT_MS; h_now_ms() < dl;) {
		storm_progress(rg, 10000);
		h_cmd(&h, -1, H_SUM, 0, 0, 0, 0, 0, 0);
		int ok = 1;
		for (int v = 0; v < N; v++)
			ok &= h.sh->res[v].st.rx_dropped >= (uint64_t)sent;
		if (ok)
			break;
	}
	uint64_t drop0[N];
	for (int v = 0; v < N; v++) {
		storm_stats_t *st = &h.sh->res[v].st;
		if (getenv("STORM_TEST_VERBOSE"))
			fprintf(stderr, "victim %d: rx %lu drop %lu hdr %lu "
				"range %lu sender %lu stale %lu err %lu\n", v,
				st->rx_msgs, st->rx_dropped, st->rx_bad_header,
				st->rx_bad_range, st->rx_bad_sender,
				st->rx_stale, st->rx_errors);
		ck_assert_msg(st->rx_dropped >= (uint64_t)sent,
			      "victim %d dropped %lu of %d", v,
			      (unsigned long)st->rx_dropped, sent);
		ck_assert_int_ge(st->rx_bad_header, 4);
		ck_assert_int_ge(st->rx_bad_range, 2);
		ck_assert_int_ge(st->rx_bad_header + st->rx_bad_range, 8);
		ck_assert_int_ge(st->rx_bad_sender, 2);
		ck_assert_int_ge(st->rx_stale, 2);
		ck_assert_int_eq(h.sh->res[v].ev[1], 0);
		drop0[v] = st->rx_dropped;
	}
	/* victims still work, and drop nothing more */
	storm_set_t set = range_set(0, N - 1);
	size_t len = 3 * STORM_DEF_CHUNK + 5;
	uint8_t *data = malloc(len);
	fill_pattern(data, len, 3);
	ck_assert_int_eq(storm_xfer_sync(h.ctx, &set, data, len, 0, 1, NULL), 0);
	storm_set_t un;
	ck_assert_int_eq(storm_caw(h.ctx, &set, 0, STORM_EQ, 0, 1, 1, &un), 1);
	for (uint64_t dl = h_now_ms() + H_WAIT_MS; h_now_ms() < dl;) {
		h_cmd(&h, -1, H_SUM, 0, len, 0, 0, 0, 0);
		if (h.sh->res[0].ev[1] && h.sh->res[1].ev[1] &&
		    h.sh->res[2].ev[1])
			break;
		storm_progress(h.ctx, 20000);
	}
	for (int v = 0; v < N; v++) {
		ck_assert(h.sh->res[v].sum == h_sum(data, len));
		ck_assert_int_eq(h.sh->res[v].ev[1], 1);
		ck_assert_int_eq(h.sh->res[v].st.rx_dropped, drop0[v]);
	}
	storm_ctx_close(rg);
	free(buf);
	free(data);
	h_stop(&h);
}
END_TEST

int main(void)
{
	TCase *tc = tcase_create("rogue");
	tcase_add_loop_test(tc, rogue, 0, H_NPROV);
	tcase_set_timeout(tc, 300);
	return mech_run(mech_suite("stormmech-rogue", &tc, 1));
}
