/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_manifest.c - libFuzzer target: the payload of srun's manifest
 * credential and of the relay's job attestation, as munged would hand
 * them over after decoding whatever a user (or a forger) encoded.  munged
 * and slurmctld are stood in for (nm_bcast_auth_ops_t): the job runs on
 * node[1-4], owned by uid 1000.  Whatever is accepted must be within
 * what the node manager promises: the transfer's key, no more than
 * BcastMaxSize, a file name without a path, a directory that is "-" or
 * absolute.
 *
 * Input: one byte of flags (bit 0: an attestation follows, bit 1: the
 * credential is root's), the manifest payload, then after a 0x01 byte the
 * attestation's payload.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/common/storm_bcast.h"
#include "src/nm/nm.h"
#include "src/nm/nm_bcast_auth.h"

#define KEY 0x2a
#define ROOT_RANK 3

static const uint8_t *man, *att;
static size_t man_len, att_len;
static uid_t cred_uid;

static munge_err_t decode(const char *cred, void **payload, int *len,
			  uid_t *uid, gid_t *gid)
{
	const uint8_t *p = cred[0] == 'C' ? man : att;
	size_t n = cred[0] == 'C' ? man_len : att_len;

	*payload = malloc(n + 1);
	if (!*payload)
		return EMUNGE_NO_MEMORY;
	memcpy(*payload, p, n);
	((char *) *payload)[n] = 'Z';	/* no NUL unless the input has one */
	*len = (int) n;
	*uid = cred[0] == 'C' ? cred_uid : 0;
	*gid = *uid;
	return EMUNGE_SUCCESS;
}

static munge_err_t encode(char **cred, const void *payload, int len)
{
	(void) payload;
	(void) len;
	*cred = strdup("A");
	return *cred ? EMUNGE_SUCCESS : EMUNGE_NO_MEMORY;
}

static int load_job(uint32_t job, nm_bcast_job_t *out)
{
	if (job != 42)
		return -ENOENT;
	out->owner = 1000;
	out->running = true;
	out->nodes = strdup("node[1-4]");
	return out->nodes ? 0 : -EIO;
}

static const nm_bcast_auth_ops_t ops = { decode, encode, load_job };
static nm_t nm;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void) argc;
	(void) argv;
	nm_log_open("/dev/null", NM_DEBUG);
	snprintf(nm.node, sizeof(nm.node), "node1");
	nm.conf.bcast_max_bytes = 1 << 20;
	nm_bcast_auth_init(&nm, &ops);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	nm_bcast_grant_t g;
	const uint8_t *sep;
	int st;

	if (size < 1)
		return 0;
	man = data + 1;
	man_len = size - 1;
	sep = memchr(man, 0x01, man_len);
	att = sep ? sep + 1 : man + man_len;
	att_len = sep ? (size_t) (data + size - att) : 0;
	if (sep)
		man_len = (size_t) (sep - man);
	cred_uid = (data[0] & 2) ? 0 : 1000;
	memset(&g, 0, sizeof(g));
	st = nm_bcast_authorize("C", (data[0] & 1) ? "A" : NULL, ROOT_RANK,
				KEY, &g);
	if (st == STORM_BCAST_READY) {
		if (g.m.key != KEY || g.m.size > nm.conf.bcast_max_bytes ||
		    !storm_bcast_name_ok(g.m.name) ||
		    (strcmp(g.m.dir, "-") && g.m.dir[0] != '/'))
			abort();
		nm_bcast_grant_free(&g);
	}
	return 0;
}
