/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stormctl_show.c - `stormctl show`: the status file the Machine Manager
 * rewrites every second in slurmctld's StateSaveLocation (its format and
 * why a file: src/common/storm_status.h), as a matrix or as JSON.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "src/common/storm_status.h"

#include "stormctl_paths.h"
#include "stormctl_show.h"

static void print_header(const char *path, const storm_status_hdr_t *h)
{
	long age = (long) time(NULL) - (long) h->written;

	printf("STORM gang scheduling (%s)\n", path);
	printf("  quantum %.3f ms (measured period %.3f ms), epoch %llu, %llu quanta, slot %d of %d\n",
	       h->quantum_us / 1000.0, h->period_us / 1000.0,
	       (unsigned long long) h->epoch, (unsigned long long) h->quanta,
	       h->nslots ? h->slot : 0, h->nslots);
	printf("  strobe %llu us, confirm %llu us, late quanta %llu, table generation %llu\n",
	       (unsigned long long) h->strobe_us,
	       (unsigned long long) h->confirm_us,
	       (unsigned long long) h->late_quanta,
	       (unsigned long long) h->table_gen);
	printf("  switches at %s, lead %llu us\n",
	       h->switch_at[0] ? h->switch_at : "?",
	       (unsigned long long) h->lead_us);
	if (h->quanta_per_strobe > 1)
		printf("  one strobe per %u quanta (StrobeInterval): the node managers time the quanta between strobes\n",
		       h->quanta_per_strobe);
	printf("  status written %ld s ago%s\n", age,
	       age > STORM_STATUS_STALE_S ?
	       " -- STALE: the machine manager is not running" : "");
}

/* A matrix cell: the job holding slot s on node k, "(id)" a job filling
 * it in, "-" nothing. */
static void matrix_cell(const storm_status_t *st, int s, int k, char *cell,
			size_t len)
{
	snprintf(cell, len, "-");
	for (int i = 0; i < st->njobs; i++) {
		const storm_status_job_t *j = &st->jobs[i];

		if (!storm_status_ranks_has(j->nodes, k))
			continue;
		if (j->slot == s)
			snprintf(cell, len, "%u", j->job_id);
		else if (j->slot >= 0 && (j->mask >> s) & 1 &&
			 !strcmp(cell, "-"))
			snprintf(cell, len, "(%u)", j->job_id);
	}
}

/* Rows are slots, columns nodes; then the jobs never switched. */
static void print_matrix(const storm_status_t *st)
{
	char cell[32];

	printf("\n%-6s", "slot");
	for (int k = 0; k < st->nnodes; k++)
		printf(" %8s", st->nodes[k].name);
	printf("\n");
	for (int s = 0; s < st->hdr.nslots; s++) {
		printf("%c%-5d", s == st->hdr.slot ? '*' : ' ', s);
		for (int k = 0; k < st->nnodes; k++) {
			matrix_cell(st, s, k, cell, sizeof(cell));
			printf(" %8s", cell);
		}
		printf("\n");
	}
	printf("%-6s", " all");
	for (int k = 0; k < st->nnodes; k++) {
		snprintf(cell, sizeof(cell), "-");
		for (int i = 0; i < st->njobs; i++)
			if (st->jobs[i].mask == 0xffffffffu &&
			    storm_status_ranks_has(st->jobs[i].nodes, k))
				snprintf(cell, sizeof(cell), "%u",
					 st->jobs[i].job_id);
		printf(" %8s", cell);
	}
	printf("   (alone on their nodes, or Policy=local: never switched)\n");
}

static void print_lists(const storm_status_t *st)
{
	printf("\n%-10s %-6s %-9s %s\n", "job", "slot", "policy", "nodes");
	for (int i = 0; i < st->njobs; i++) {
		const storm_status_job_t *j = &st->jobs[i];
		char sl[16] = "-";

		if (j->slot >= 0)
			snprintf(sl, sizeof(sl), "%d", j->slot);
		printf("%-10u %-6s %-9s %s\n", j->job_id, sl,
		       j->policy[0] ? j->policy : "?", j->nodes);
	}
	printf("\n%-10s %-12s %10s %7s %9s  %-25s  %s\n", "node", "state",
	       "ack_us", "misses", "silent_ms", "refused: ctl bcast fabric",
	       "clock: offset_us +-uncert_us late switch_at");
	for (int k = 0; k < st->nnodes; k++) {
		const storm_status_node_t *n = &st->nodes[k];
		char unc[24] = "?", silent[24] = "never";

		if (n->clock_uncert_us >= 0)
			snprintf(unc, sizeof(unc), "%lld",
				 (long long) n->clock_uncert_us);
		if (n->silent_ms >= 0)
			snprintf(silent, sizeof(silent), "%lld",
				 (long long) n->silent_ms);
		printf("%-10s %-12s %10llu %7u %9s  %12llu %5llu %6llu  %16lld +-%-9s %4llu %s\n",
		       n->name, n->state, (unsigned long long) n->ack_us,
		       n->misses, silent, (unsigned long long) n->rejected[0],
		       (unsigned long long) n->rejected[1],
		       (unsigned long long) n->rejected[2],
		       (long long) n->clock_offset_us, unc,
		       (unsigned long long) n->late_switches,
		       n->switch_at[0] ? n->switch_at : "-");
	}
	printf("machine manager: %llu fabric message(s) refused, %llu node(s) drained and %llu returned to service since it started (SuspectTime=%llu us)\n",
	       (unsigned long long) st->hdr.rejected_mm,
	       (unsigned long long) st->hdr.drains,
	       (unsigned long long) st->hdr.returns,
	       (unsigned long long) st->hdr.suspect_time_us);
	if (st->nbcasts)
		printf("\n%-10s %-8s %-8s %12s %12s %9s  %s\n", "relay", "job",
		       "phase", "received", "size", "ms", "nodes done");
	for (int i = 0; i < st->nbcasts; i++) {
		const storm_status_bcast_t *b = &st->bcasts[i];

		printf("%-10s %-8u %-8s %12llu %12llu %9.1f  %s of %u\n",
		       b->name, b->job_id, b->phase,
		       (unsigned long long) b->received,
		       (unsigned long long) b->size, b->elapsed_us / 1000.0,
		       b->done[0] ? b->done : "-", b->nnodes);
	}
}

/* The status file: --status FILE, else StateSaveLocation's. */
static int status_path(const char *file, char *path, size_t len)
{
	if (file) {
		snprintf(path, len, "%s", file);
		return 0;
	}
	return stormctl_state_path(STORM_STATUS_FILE, path, len);
}

static int show(const char *file, bool json)
{
	char path[4200];
	storm_status_t st;
	int rc;

	if (status_path(file, path, sizeof(path)))
		return 1;
	rc = storm_status_read(path, &st);
	if (rc == -EINVAL) {
		fprintf(stderr, "stormctl: %s is not a STORM status file\n", path);
		return 1;
	} else if (rc) {
		fprintf(stderr, "stormctl: cannot read %s: %s (is slurmctld running with SchedulerType=sched/storm?)\n",
			path, strerror(-rc));
		return 1;
	}
	if (json) {
		rc = storm_status_fprint_json(stdout, &st) ? 1 : 0;
	} else {
		print_header(path, &st.hdr);
		print_matrix(&st);
		print_lists(&st);
	}
	storm_status_free(&st);
	return rc;
}

extern int show_main(int argc, char **argv)
{
	const char *file = NULL;
	bool json = false;

	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = true;
		else if (!strcmp(argv[i], "--status") && i + 1 < argc)
			file = argv[++i];
		else
			return -1;
	}
	return show(file, json);
}
