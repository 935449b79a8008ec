/*
 * stormctl - the STORM administration command.
 *
 *   stormctl check-config [FILE]   validate storm.conf, print the result
 *   stormctl show [--status FILE]  the gang scheduler: time-slot matrix,
 *                                  current slot, quantum, per-node acks
 *
 * See stormctl(1).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "src/common/storm_conf.h"

/*
 * `stormctl show` reads the status file the Machine Manager rewrites every
 * second in slurmctld's StateSaveLocation (storm-mm.status, key=value
 * lines, then "node" and "job" lines).  A file rather than an RPC: it needs
 * no new port or protocol in slurmctld, survives the MM's restarts, and can
 * be read by any monitoring tool; its age tells whether the MM is alive.
 */
#define SHOW_MAX_NODES 1024
#define SHOW_MAX_JOBS 4096

typedef struct {
	char name[64], state[32];
	unsigned long long ack_us;
	unsigned misses;
} show_node_t;

typedef struct {
	unsigned id;
	int slot;
	unsigned mask;
	char nodes[4096];
	char policy[16];
} show_job_t;

static char *kv(char *text, const char *key)
{
	size_t kl = strlen(key);

	for (char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (!strncmp(p, key, kl) && p[kl] == '=')
			return p + kl + 1;
	return NULL;
}

static unsigned long long kv_u(char *text, const char *key)
{
	char *v = kv(text, key);

	return v ? strtoull(v, NULL, 10) : 0;
}

/* The StateSaveLocation of slurm.conf ($SLURM_CONF or /etc/slurm). */
static int state_dir(char *buf, size_t len)
{
	const char *conf = getenv("SLURM_CONF");
	char line[4096];
	FILE *fp = fopen(conf ? conf : "/etc/slurm/slurm.conf", "r");
	int rc = -1;

	if (!fp)
		return -1;
	while (fgets(line, sizeof(line), fp)) {
		char *p = line;

		while (*p == ' ' || *p == '\t')
			p++;
		if (!strncasecmp(p, "StateSaveLocation=", 18)) {
			p += 18;
			p[strcspn(p, " \t\r\n#")] = '\0';
			snprintf(buf, len, "%s", p);
			rc = 0;
		}
	}
	fclose(fp);
	return rc;
}

/* Is node index k in a "0-3,7" list? */
static int in_list(const char *list, int k)
{
	const char *p = list;

	while (*p) {
		char *end;
		long a = strtol(p, &end, 10), b;

		if (end == p)
			return 0;
		b = a;
		if (*end == '-')
			b = strtol(end + 1, &end, 10);
		if (k >= a && k <= b)
			return 1;
		p = *end == ',' ? end + 1 : end;
		if (!*end)
			break;
	}
	return 0;
}

static int show(const char *file)
{
	static show_node_t nodes[SHOW_MAX_NODES];
	static show_job_t jobs[SHOW_MAX_JOBS];
	char path[4200], dir[4096], *text = NULL, *line, *save = NULL;
	int nn = 0, nj = 0, nslots, slot, rc = 1;
	long age;
	size_t cap = 0;
	ssize_t got;
	FILE *fp;

	if (file) {
		snprintf(path, sizeof(path), "%s", file);
	} else {
		if (state_dir(dir, sizeof(dir))) {
			fprintf(stderr, "stormctl: no StateSaveLocation in slurm.conf; use --status FILE\n");
			return 1;
		}
		snprintf(path, sizeof(path), "%s/storm-mm.status", dir);
	}
	fp = fopen(path, "r");
	if (!fp) {
		fprintf(stderr, "stormctl: cannot read %s: %s (is slurmctld running with SchedulerType=sched/storm?)\n",
			path, strerror(errno));
		return 1;
	}
	got = getdelim(&text, &cap, '\0', fp);
	fclose(fp);
	if (got <= 0 || !kv(text, "version")) {
		fprintf(stderr, "stormctl: %s is not a STORM status file\n", path);
		goto done;
	}
	nslots = (int) kv_u(text, "nslots");
	slot = (int) kv_u(text, "slot");
	age = (long) time(NULL) - (long) kv_u(text, "written");
	printf("STORM gang scheduling (%s)\n", path);
	printf("  quantum %.3f ms (measured period %.3f ms), epoch %llu, %llu quanta, slot %d of %d\n",
	       kv_u(text, "quantum_us") / 1000.0,
	       kv_u(text, "period_us") / 1000.0, kv_u(text, "epoch"),
	       kv_u(text, "quanta"), nslots ? slot : 0, nslots);
	printf("  strobe %llu us, confirm %llu us, late quanta %llu, table generation %llu\n",
	       kv_u(text, "strobe_us"), kv_u(text, "confirm_us"),
	       kv_u(text, "late_quanta"), kv_u(text, "table_gen"));
	if (kv_u(text, "quanta_per_strobe") > 1)
		printf("  one strobe per %llu quanta (StrobeInterval): the node managers time the quanta between strobes\n",
		       kv_u(text, "quanta_per_strobe"));
	printf("  status written %ld s ago%s\n", age,
	       age > 5 ? " -- STALE: the machine manager is not running" : "");

	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (!strncmp(line, "node ", 5) && nn < SHOW_MAX_NODES) {
			show_node_t *n = &nodes[nn];
			int idx;

			if (sscanf(line, "node %d %63s state=%31s ack_us=%llu misses=%u",
				   &idx, n->name, n->state, &n->ack_us,
				   &n->misses) == 5)
				nn++;
		} else if (!strncmp(line, "job ", 4) && nj < SHOW_MAX_JOBS) {
			show_job_t *j = &jobs[nj];

			j->policy[0] = '\0';
			if (sscanf(line, "job %u slot=%d mask=0x%x nodes=%4095s policy=%15s",
				   &j->id, &j->slot, &j->mask, j->nodes,
				   j->policy) >= 4)
				nj++;
		}
	}

	/* The matrix: rows are slots, columns nodes; a cell is the job
	 * holding that slot on that node, "(id)" a job filling it in. */
	printf("\n%-6s", "slot");
	for (int k = 0; k < nn; k++)
		printf(" %8s", nodes[k].name);
	printf("\n");
	for (int s = 0; s < nslots; s++) {
		printf("%c%-5d", s == slot ? '*' : ' ', s);
		for (int k = 0; k < nn; k++) {
			char cell[32] = "-";

			for (int i = 0; i < nj; i++) {
				if (!in_list(jobs[i].nodes, k))
					continue;
				if (jobs[i].slot == s)
					snprintf(cell, sizeof(cell), "%u", jobs[i].id);
				else if (jobs[i].slot >= 0 &&
					 (jobs[i].mask >> s) & 1 &&
					 !strcmp(cell, "-"))
					snprintf(cell, sizeof(cell), "(%u)", jobs[i].id);
			}
			printf(" %8s", cell);
		}
		printf("\n");
	}
	printf("%-6s", " all");
	for (int k = 0; k < nn; k++) {
		char cell[32] = "-";

		for (int i = 0; i < nj; i++)
			if (jobs[i].mask == 0xffffffffu &&
			    in_list(jobs[i].nodes, k))
				snprintf(cell, sizeof(cell), "%u", jobs[i].id);
		printf(" %8s", cell);
	}
	printf("   (alone on their nodes, or Policy=local: never switched)\n");

	printf("\n%-10s %-6s %-9s %s\n", "job", "slot", "policy", "nodes");
	for (int i = 0; i < nj; i++) {
		char sl[16] = "-";

		if (jobs[i].slot >= 0)
			snprintf(sl, sizeof(sl), "%d", jobs[i].slot);
		printf("%-10u %-6s %-9s %s\n", jobs[i].id, sl,
		       jobs[i].policy[0] ? jobs[i].policy : "?", jobs[i].nodes);
	}

	printf("\n%-10s %-12s %10s %7s\n", "node", "state", "ack_us", "misses");
	for (int k = 0; k < nn; k++)
		printf("%-10s %-12s %10llu %7u\n", nodes[k].name,
		       nodes[k].state, nodes[k].ack_us, nodes[k].misses);
	rc = 0;
done:
	free(text);
	return rc;
}

static void usage(FILE *fp)
{
	fprintf(fp,
		"usage: stormctl check-config [FILE]\n"
		"       stormctl show [--status FILE]\n"
		"  check-config  parse storm.conf (FILE, else $STORM_CONF, else\n"
		"                storm.conf beside $SLURM_CONF or /etc/slurm) and\n"
		"                print the effective configuration\n"
		"  show          the gang scheduler's time-slot matrix, current\n"
		"                slot, quantum and per-node acknowledgement latency\n");
}

static int check_config(const char *file)
{
	char path[4096], err[STORM_CONF_ERRLEN], out[16384];
	storm_conf_t conf;

	if (file)
		snprintf(path, sizeof(path), "%s", file);
	else
		storm_conf_path(getenv("SLURM_CONF"), path, sizeof(path));
	/* An explicit file must exist; the default may be absent. */
	if (storm_conf_load(path, file == NULL, &conf, err, sizeof(err))) {
		fprintf(stderr, "stormctl: %s\n", err);
		return 1;
	}
	if (storm_conf_format(&conf, out, sizeof(out)) < 0) {
		fprintf(stderr, "stormctl: configuration too large to print\n");
		return 1;
	}
	printf("# %s: OK\n%s", path, out);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "show") && argc == 2)
		return show(NULL);
	if (!strcmp(argv[1], "show") && argc == 4 &&
	    !strcmp(argv[2], "--status"))
		return show(argv[3]);
	if (!strcmp(argv[1], "check-config") && argc <= 3)
		return check_config(argc == 3 ? argv[2] : NULL);
	fprintf(stderr, "stormctl: unknown command or arguments: %s\n",
		argv[1]);
	usage(stderr);
	return 2;
}
