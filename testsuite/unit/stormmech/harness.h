/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * harness.h - multi-process loopback cluster for the mechanism tests and
 * the benchmark: N member processes (ranks 0..N-1) forked from a driver
 * that is rank N (outside the set unless a test says otherwise).
 */
#ifndef STORM_HARNESS_H
#define STORM_HARNESS_H

#include <stdint.h>
#include <sys/types.h>
#include "stormmech.h"

#define H_MAX 40
#define H_HOOK_VAR 5	/* commits counted by the dest hook's callback */

enum h_cmd { H_NONE, H_SUM, H_FILL, H_SETVAR, H_GETVAR, H_CAW, H_CAW_MINE, H_STATS,
	     H_EXIT };

struct h_res {
	uint64_t sum;
	uint64_t ev[4];
	uint64_t var;
	int caw_rc;
	storm_stats_t st;
	uint64_t hook_sum;     /* dest hook: checksum of last buffer */
	int hook_commits, hook_releases;
};

struct h_shared {
	int n;
	int use_dest;             /* members receive through a dest hook */
	int port_base;            /* this harness's block of ports */
	int port[H_MAX + 1];
	volatile int ready[H_MAX + 1];
	volatile int go;
	volatile int cmd_seq;
	volatile int cmd_done[H_MAX + 1];
	int cmd, target;          /* target -1: all members */
	uint64_t a, b, c, d;
	int ia, ib;
	struct h_res res[H_MAX + 1];
};

struct harness {
	struct h_shared *sh;
	pid_t pid[H_MAX];
	int n;
	storm_ctx_t *ctx;         /* driver's ctx, rank n */
	storm_ctx_t *caller;      /* h_caller()'s ctx, or NULL */
	int caller_port;
	const char *prov;
};

/* fills defaults for the tests: 20 MiB region, H_OK_TIMEOUT_MS */
void h_cfg(storm_cfg_t *cfg, const char *prov);
/* 0 ok, <0 error; cfg is used by members and driver (rank/port set) */
int  h_start(struct harness *h, int n, const storm_cfg_t *cfg);
/* same, members install a storm_dest_f that receives into private
 * buffers (the node manager's tmpfs-mapping path) */
int  h_start_hooked(struct harness *h, int n, const storm_cfg_t *cfg);
/* same, the driver with a configuration of its own (a caller whose
 * timeout is not the members', as the Machine Manager's is not the node
 * managers') */
int  h_start_driver(struct harness *h, int n, const storm_cfg_t *cfg,
		    const storm_cfg_t *driver);
/*
 * A second, impatient caller beside the driver: a client rank (the
 * members learn its address from its first message) with cfg's timeout,
 * for the one operation of a test that is expected to fail at the
 * timeout, while the driver's operations, expected to succeed, keep the
 * generous one.  Opened once per harness, closed by h_stop; NULL on error.
 */
storm_ctx_t *h_caller(struct harness *h, const storm_cfg_t *cfg);
void h_stop(struct harness *h);
/* SIGKILL member i and reap it; later commands skip it */
void h_kill(struct harness *h, int i);
/* run a command on one member (target >= 0) or all (-1); bounded */
int  h_cmd(struct harness *h, int target, int cmd, uint64_t a, uint64_t b,
	   uint64_t c, uint64_t d, int ia, int ib);
uint64_t h_sum(const void *p, size_t len);
uint64_t h_now_ms(void);         /* CLOCK_MONOTONIC */
bool h_provider_ok(const char *prov);
const char *h_prov_name(int i);   /* 0: "tcp;ofi_rxm", 1: "shm" */
#define H_NPROV 2
/* The timeout of operations expected to succeed: a success ends as soon
 * as it can, so a long one costs nothing, and a loaded host (CI runs the
 * tests beside a fuzzer and a sanitized build) may stall a member for
 * seconds.  A bulk block goes down a chain whose deepest hop gets only
 * 1/H of it, so it is longer still than one stall. */
#define H_OK_TIMEOUT_MS 60000
/* Waits of the harness and the tests for something expected to happen
 * (a member's event, a command's answer). */
#define H_WAIT_MS 120000
/* The timeout of an operation expected to fail: the mechanisms report a
 * dead, stopped or refusing member at the timeout, so the test waits that
 * long.  Only such an operation runs under it (from h_caller() or a
 * harness of its own), never one expected to succeed. */
#define H_FAIL_TIMEOUT_MS 3000
/* An upper bound on how long an operation expected to fail at timeout_ms
 * may take to report it on a loaded host: it proves the failure came from
 * the timeout rather than a hang, and no more. */
#define H_FAIL_BOUND_S(timeout_ms) (2.0 * (timeout_ms) / 1000 + 30)

#endif
