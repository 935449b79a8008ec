/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * storm_status.c - the Machine Manager's status file: one table of header
 * keys and one of a node line's keys serve the writer, the reader and the
 * JSON, so they cannot drift apart.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "storm_status.h"

/* F_OPT_I64: an int64_t that may be unknown, with a bool beside it that
 * says it is known; unknown is "-" in the file and null in JSON (a lag may
 * be any number, so no value of its own can mean "none"). */
typedef enum {
	F_U64, F_I64, F_INT, F_U32, F_STR, F_OPT_I64,
	F_HIST,		/* a storm_status_hist_t, one token */
} field_type_t;

typedef struct {
	const char *key;
	field_type_t type;
	size_t off;		/* in the header or the node struct */
	size_t len;		/* F_STR only */
	size_t has_off;		/* F_OPT_I64 only: its bool */
} hdr_field_t;

#define HF(k, t) { #k, t, offsetof(storm_status_hdr_t, k), 0, 0 }

/* The header keys, in the order the file has them. */
static const hdr_field_t hdr_fields[] = {
	HF(version, F_U64),
	HF(written, F_I64),
	HF(mm_id, F_U64),
	HF(epoch, F_U64),
	HF(slot, F_INT),
	HF(nslots, F_INT),
	HF(quantum_us, F_U64),
	HF(period_us, F_U64),
	HF(strobe_us, F_U64),
	HF(confirm_us, F_U64),
	HF(late_quanta, F_U64),
	HF(confirm_timeouts, F_U64),
	HF(quanta, F_U64),
	HF(table_gen, F_U64),
	HF(suspect_quanta, F_U32),
	HF(failsafe_us, F_U64),
	{ "provider", F_STR, offsetof(storm_status_hdr_t, provider),
	  STORM_STATUS_NAMELEN, 0 },
	HF(nnodes, F_INT),
	HF(quanta_per_strobe, F_U32),
	HF(rejected_mm, F_U64),
	{ "switch_at", F_STR, offsetof(storm_status_hdr_t, switch_at),
	  STORM_STATUS_POLICYLEN, 0 },
	HF(lead_us, F_U64),
	HF(suspect_time_us, F_U64),
	HF(drains, F_U64),
	HF(returns, F_U64),
	HF(strobe_hist_us, F_HIST),
	HF(confirm_hist_us, F_HIST),
};

#define NFIELDS (sizeof(hdr_fields) / sizeof(hdr_fields[0]))

#define NF(k, t) { #k, t, offsetof(storm_status_node_t, k), 0, 0 }

/* The KEY=VALUE keys that follow a node line's fixed part, in order. */
static const hdr_field_t node_fields[] = {
	NF(clock_offset_us, F_I64),
	NF(clock_uncert_us, F_I64),
	NF(late_switches, F_U64),
	{ "switch_at", F_STR, offsetof(storm_status_node_t, switch_at),
	  STORM_STATUS_POLICYLEN, 0 },
	NF(silent_ms, F_I64),
	NF(failsafe_events, F_U64),
	NF(failsafe_open, F_U32),
	{ "switch_lag_us", F_OPT_I64, offsetof(storm_status_node_t,
					       switch_lag_us), 0,
	  offsetof(storm_status_node_t, has_lag) },
};

#define NNODE_FIELDS (sizeof(node_fields) / sizeof(node_fields[0]))

extern void storm_status_hist_set(storm_status_hist_t *out,
				  const storm_hist_t *h, const uint64_t *le,
				  int nle)
{
	uint64_t run = 0;

	memset(out, 0, sizeof(*out));
	if (nle < 0 || nle >= STORM_HIST_MAX)
		return;
	out->n = nle + 1;
	for (int i = 0; i <= nle; i++) {
		if (i < nle)
			out->le_us[i] = le[i];
		run += h->count[i];
		out->cum[i] = run;
	}
	out->sum_us = h->sum_us;
}

/* A histogram as one token, "LE:N,...,+Inf:N,sum:S"; "-" when absent. */
static int fprint_hist(FILE *fp, const storm_status_hist_t *h)
{
	if (h->n <= 0 || h->n > STORM_HIST_MAX)
		return fputc('-', fp) == EOF ? -1 : 1;
	for (int i = 0; i < h->n - 1; i++)
		if (fprintf(fp, "%" PRIu64 ":%" PRIu64 ",", h->le_us[i],
			    h->cum[i]) < 0)
			return -1;
	return fprintf(fp, "+Inf:%" PRIu64 ",sum:%" PRIu64, h->cum[h->n - 1],
		       h->sum_us);
}

/* The reverse of fprint_hist(), from v up to a space or the line's end;
 * anything malformed leaves the histogram absent. */
static void parse_hist(const char *v, storm_status_hist_t *h)
{
	const char *p = v;
	bool inf = false;

	memset(h, 0, sizeof(*h));
	while (*p && *p != ' ' && *p != '\n') {
		char *end;
		uint64_t le = 0, x;
		bool is_inf = false, is_sum = false;

		if (!strncmp(p, "+Inf:", 5)) {
			is_inf = true;
			p += 5;
		} else if (!strncmp(p, "sum:", 4)) {
			is_sum = true;
			p += 4;
		} else {
			le = strtoull(p, &end, 10);
			if (end == p || *end != ':')
				break;
			p = end + 1;
		}
		x = strtoull(p, &end, 10);
		if (end == p)
			break;
		p = *end == ',' ? end + 1 : end;
		if (is_sum) {
			if (!inf)
				break;
			h->sum_us = x;
			return;		/* complete: +Inf, then the sum */
		}
		if (inf || h->n >= STORM_HIST_MAX)
			break;
		h->le_us[h->n] = le;
		h->cum[h->n++] = x;
		inf = is_inf;
	}
	memset(h, 0, sizeof(*h));
}

extern int storm_status_path(const char *dir, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/%s", dir, STORM_STATUS_FILE);

	return n < 0 || (size_t) n >= len ? -ENAMETOOLONG : 0;
}

/* KEY=VALUE of base's field, between pre and post. */
static int fprint_field(FILE *fp, const void *base, const hdr_field_t *f,
			const char *pre, const char *post)
{
	const char *p = (const char *) base + f->off;

	switch (f->type) {
	case F_U64:
		return fprintf(fp, "%s%s=%" PRIu64 "%s", pre, f->key,
			       *(const uint64_t *) p, post);
	case F_I64:
		return fprintf(fp, "%s%s=%" PRId64 "%s", pre, f->key,
			       *(const int64_t *) p, post);
	case F_INT:
		return fprintf(fp, "%s%s=%d%s", pre, f->key, *(const int *) p,
			       post);
	case F_U32:
		return fprintf(fp, "%s%s=%" PRIu32 "%s", pre, f->key,
			       *(const uint32_t *) p, post);
	case F_STR:
		return fprintf(fp, "%s%s=%s%s", pre, f->key,
			       *p ? p : "-", post);
	case F_OPT_I64:
		if (!*(const bool *) ((const char *) base + f->has_off))
			return fprintf(fp, "%s%s=-%s", pre, f->key, post);
		return fprintf(fp, "%s%s=%" PRId64 "%s", pre, f->key,
			       *(const int64_t *) p, post);
	case F_HIST:
		if (fprintf(fp, "%s%s=", pre, f->key) < 0 ||
		    fprint_hist(fp, (const storm_status_hist_t *) p) < 0)
			return -1;
		return fputs(post, fp) == EOF ? -1 : 1;
	}
	return -1;
}

extern int storm_status_fprint_hdr(FILE *fp, const storm_status_hdr_t *h)
{
	int total = 0;

	for (size_t i = 0; i < NFIELDS; i++) {
		int n = fprint_field(fp, h, &hdr_fields[i], "", "\n");

		if (n < 0)
			return n;
		total += n;
	}
	return total;
}

extern int storm_status_fprint_node(FILE *fp, const storm_status_node_t *n)
{
	int total = fprintf(fp, "node %d %s state=%s ack_us=%" PRIu64 " misses=%" PRIu32
			    " rejected=%" PRIu64 ",%" PRIu64 ",%" PRIu64,
			    n->rank, n->name, n->state, n->ack_us, n->misses,
			    n->rejected[0], n->rejected[1], n->rejected[2]);

	for (size_t i = 0; i < NNODE_FIELDS && total >= 0; i++) {
		int k = fprint_field(fp, n, &node_fields[i], " ", "");

		total = k < 0 ? k : total + k;
	}
	if (total >= 0 && fputc('\n', fp) != EOF)
		total++;
	return total;
}

/* A user string as one token: bytes outside '!'..'~', and '%', as %XX. */
static int fprint_token(FILE *fp, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";

	for (; *s; s++) {
		unsigned char c = (unsigned char) *s;

		if (c > ' ' && c <= '~' && c != '%') {
			if (fputc(c, fp) == EOF)
				return -1;
		} else if (fprintf(fp, "%%%c%c", hex[c >> 4], hex[c & 15]) < 0) {
			return -1;
		}
	}
	return 1;
}

/* The reverse of fprint_token(), into buf (cut to len). */
static void decode_token(const char *tok, char *buf, size_t len)
{
	size_t o = 0;

	for (const char *p = tok; *p && o + 1 < len; p++) {
		unsigned int v;

		if (*p == '%' && isxdigit((unsigned char) p[1]) &&
		    isxdigit((unsigned char) p[2]) &&
		    sscanf(p + 1, "%2x", &v) == 1) {
			buf[o++] = (char) v;
			p += 2;
		} else {
			buf[o++] = *p;
		}
	}
	buf[o] = '\0';
}

extern int storm_status_fprint_job(FILE *fp, const storm_status_job_t *j)
{
	if (fprintf(fp, "job %" PRIu32 " slot=%d mask=0x%" PRIx32 " nodes=%s policy=%s user=",
		    j->job_id, j->slot, j->mask, j->nodes, j->policy) < 0 ||
	    fprint_token(fp, j->user) < 0 || fputs(" name=", fp) == EOF ||
	    fprint_token(fp, j->name) < 0 ||
	    fprintf(fp, " cpus=%" PRIu32 " cpu_m=", j->cpus) < 0)
		return -1;
	if (j->has_cpu ? fprintf(fp, "%" PRIu64, j->cpu_m) < 0 :
			 fputc('-', fp) == EOF)
		return -1;
	return fputc('\n', fp) == EOF ? -1 : 1;
}

/* A ranks list as one token: "-" for none. */
static const char *ranks_token(const char *r)
{
	return r[0] ? r : "-";
}

extern int storm_status_fprint_bcast(FILE *fp, const storm_status_bcast_t *b)
{
	if (fprintf(fp, "bcast %d %s key=%" PRIx64 " job=%" PRIu32 " phase=%s size=%" PRIu64
		    " received=%" PRIu64 " nodes=%" PRIu32 " start_us=%" PRId64
		    " elapsed_us=%" PRIu64 " ready=%s done=%s count=%" PRIu64
		    " failed=%" PRIu64 " bytes=%" PRIu64 " dur_hist_us=",
		    b->relay, b->name, b->key, b->job_id, b->phase, b->size,
		    b->received, b->nnodes, b->start_us, b->elapsed_us,
		    ranks_token(b->ready), ranks_token(b->done), b->count,
		    b->failed, b->bytes) < 0 ||
	    fprint_hist(fp, &b->dur_hist_us) < 0)
		return -1;
	return fputc('\n', fp) == EOF ? -1 : 1;
}

static char *tmp_path(const char *path)
{
	size_t len = strlen(path) + sizeof(".tmp");
	char *tmp = malloc(len);

	if (tmp)
		snprintf(tmp, len, "%s.tmp", path);
	return tmp;
}

extern FILE *storm_status_begin(const char *path)
{
	char *tmp = tmp_path(path);
	FILE *fp;

	if (!tmp)
		return NULL;
	fp = fopen(tmp, "w");
	free(tmp);
	return fp;
}

extern int storm_status_commit(FILE *fp, const char *path)
{
	char *tmp = tmp_path(path);
	int rc = 0;

	if (ferror(fp))
		rc = -EIO;
	if (fclose(fp) && !rc)
		rc = -errno;
	if (!tmp)
		return -ENOMEM;
	if (!rc && rename(tmp, path))
		rc = -errno;
	free(tmp);
	return rc;
}

/* ------------------------------------------------------------ reader */

static void parse_field(void *base, const hdr_field_t *f, const char *v)
{
	char *p = (char *) base + f->off;

	switch (f->type) {
	case F_U64:
		*(uint64_t *) p = strtoull(v, NULL, 10);
		break;
	case F_I64:
		*(int64_t *) p = strtoll(v, NULL, 10);
		break;
	case F_INT:
		*(int *) p = (int) strtol(v, NULL, 10);
		break;
	case F_U32:
		*(uint32_t *) p = (uint32_t) strtoul(v, NULL, 10);
		break;
	case F_STR: {
		/* "-" is the empty string (a node line's words) */
		int len = (int) strcspn(v, " \n");

		snprintf(p, f->len, "%.*s", len == 1 && *v == '-' ? 0 : len, v);
		break;
	}
	case F_OPT_I64: {
		char *end;
		long long x = strtoll(v, &end, 10);
		bool known = end != v;

		*(bool *) ((char *) base + f->has_off) = known;
		*(int64_t *) p = known ? (int64_t) x : 0;
		break;
	}
	case F_HIST:
		parse_hist(v, (storm_status_hist_t *) p);
		break;
	}
}

/* The node keys after a node line's fixed part (any order, unknown keys
 * skipped); absent ones say "no estimate". */
static void parse_node_keys(storm_status_node_t *n, const char *line)
{
	n->clock_uncert_us = -1;
	n->silent_ms = -1;
	for (const char *w = strchr(line, ' '); w; w = strchr(w + 1, ' ')) {
		const char *k = w + 1;
		size_t kl = strcspn(k, "= ");

		if (k[kl] != '=')
			continue;
		for (size_t i = 0; i < NNODE_FIELDS; i++)
			if (strlen(node_fields[i].key) == kl &&
			    !strncmp(k, node_fields[i].key, kl))
				parse_field(n, &node_fields[i], k + kl + 1);
	}
}

/* A KEY=VALUE line; true if it was the version key. */
static bool parse_hdr_line(storm_status_hdr_t *h, const char *line)
{
	size_t kl = strcspn(line, "=\n");

	if (line[kl] != '=')
		return false;
	for (size_t i = 0; i < NFIELDS; i++) {
		const hdr_field_t *f = &hdr_fields[i];

		if (strlen(f->key) == kl && !strncmp(line, f->key, kl)) {
			parse_field(h, f, line + kl + 1);
			return f->off == offsetof(storm_status_hdr_t, version);
		}
	}
	return false;
}

/* Room for one more element in *arr (of *n, capacity *cap). */
static int grow(void **arr, int n, int *cap, size_t size)
{
	void *p;
	int want;

	if (n < *cap)
		return 0;
	want = *cap ? *cap * 2 : 16;
	p = realloc(*arr, (size_t) want * size);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = want;
	return 0;
}

static int parse_node_line(storm_status_t *st, int *cap, const char *line)
{
	storm_status_node_t n;

	memset(&n, 0, sizeof(n));	/* padding too: readers compare bytes */
	/* rejected= is optional: older files lack it */
	if (sscanf(line, "node %d %63s state=%31s ack_us=%" SCNu64 " misses=%" SCNu32
		   " rejected=%" SCNu64 ",%" SCNu64 ",%" SCNu64,
		   &n.rank, n.name, n.state, &n.ack_us, &n.misses,
		   &n.rejected[0], &n.rejected[1], &n.rejected[2]) < 5)
		return 0;
	parse_node_keys(&n, line);
	if (grow((void **) &st->nodes, st->nnodes, cap, sizeof(n)))
		return -ENOMEM;
	st->nodes[st->nnodes++] = n;
	return 0;
}

/* The value of " key=" in line, as a decoded token, or "" without it. */
static void parse_token(const char *line, const char *key, char *buf,
			size_t len)
{
	const char *p = strstr(line, key);
	char tok[STORM_STATUS_JOBNAMELEN * 3 + 1];

	buf[0] = '\0';
	if (!p)
		return;
	p += strlen(key);
	snprintf(tok, sizeof(tok), "%.*s", (int) strcspn(p, " \n"), p);
	decode_token(tok, buf, len);
}

/* The policy, user and name are optional: older files lack them. */
static int parse_job_line(storm_status_t *st, int *cap, const char *line)
{
	storm_status_job_t *j;

	if (grow((void **) &st->jobs, st->njobs, cap, sizeof(*j)))
		return -ENOMEM;
	j = &st->jobs[st->njobs];
	memset(j, 0, sizeof(*j));
	if (sscanf(line, "job %" SCNu32 " slot=%d mask=0x%" SCNx32 " nodes=%4095s policy=%15s",
		   &j->job_id, &j->slot, &j->mask, j->nodes, j->policy) >= 4) {
		/* encoded tokens hold no space: " user=" cannot be in a name */
		const char *cpus = strstr(line, " cpus="), *cpu = strstr(line, " cpu_m=");

		parse_token(line, " user=", j->user, sizeof(j->user));
		parse_token(line, " name=", j->name, sizeof(j->name));
		if (cpus)
			j->cpus = (uint32_t) strtoul(cpus + 6, NULL, 10);
		if (cpu && cpu[7] >= '0' && cpu[7] <= '9') {
			j->cpu_m = strtoull(cpu + 7, NULL, 10);
			j->has_cpu = true;
		}
		st->njobs++;
	}
	return 0;
}

static int parse_bcast_line(storm_status_t *st, int *cap, const char *line)
{
	storm_status_bcast_t *b;
	const char *hist;

	if (grow((void **) &st->bcasts, st->nbcasts, cap, sizeof(*b)))
		return -ENOMEM;
	b = &st->bcasts[st->nbcasts];
	memset(b, 0, sizeof(*b));
	if (sscanf(line, "bcast %d %63s key=%" SCNx64 " job=%" SCNu32 " phase=%15s size=%" SCNu64
		   " received=%" SCNu64 " nodes=%" SCNu32 " start_us=%" SCNd64
		   " elapsed_us=%" SCNu64 " ready=%4095s done=%4095s count=%" SCNu64
		   " failed=%" SCNu64 " bytes=%" SCNu64,
		   &b->relay, b->name, &b->key, &b->job_id, b->phase, &b->size,
		   &b->received, &b->nnodes, &b->start_us, &b->elapsed_us,
		   b->ready, b->done, &b->count, &b->failed, &b->bytes) != 15)
		return 0;
	if (!strcmp(b->ready, "-"))
		b->ready[0] = '\0';
	if (!strcmp(b->done, "-"))
		b->done[0] = '\0';
	if ((hist = strstr(line, " dur_hist_us=")))
		parse_hist(hist + 13, &b->dur_hist_us);
	st->nbcasts++;
	return 0;
}

extern int storm_status_parse(const char *text, storm_status_t *st)
{
	int node_cap = 0, job_cap = 0, bcast_cap = 0, rc = 0;
	bool versioned = false;

	memset(st, 0, sizeof(*st));
	for (const char *line = text; line && *line && !rc;
	     line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		if (!strncmp(line, "node ", 5)) {
			char buf[1024];

			snprintf(buf, sizeof(buf), "%.*s",
				 (int) strcspn(line, "\n"), line);
			rc = parse_node_line(st, &node_cap, buf);
		} else if (!strncmp(line, "job ", 4)) {
			char buf[STORM_STATUS_RANKSLEN + 256 +
				 3 * (STORM_STATUS_NAMELEN + STORM_STATUS_JOBNAMELEN)];

			snprintf(buf, sizeof(buf), "%.*s",
				 (int) strcspn(line, "\n"), line);
			rc = parse_job_line(st, &job_cap, buf);
		} else if (!strncmp(line, "bcast ", 6)) {
			char buf[2 * STORM_STATUS_RANKSLEN + 1024];

			snprintf(buf, sizeof(buf), "%.*s",
				 (int) strcspn(line, "\n"), line);
			rc = parse_bcast_line(st, &bcast_cap, buf);
		} else if (parse_hdr_line(&st->hdr, line)) {
			versioned = true;
		}
	}
	if (!rc && !versioned)
		rc = -EINVAL;
	if (rc)
		storm_status_free(st);
	return rc;
}

extern int storm_status_read(const char *path, storm_status_t *st)
{
	char *text = NULL;
	size_t cap = 0;
	ssize_t got;
	FILE *fp = fopen(path, "r");
	int rc;

	memset(st, 0, sizeof(*st));
	if (!fp)
		return -errno;
	got = getdelim(&text, &cap, '\0', fp);
	rc = got < 0 && ferror(fp) ? -EIO : 0;
	fclose(fp);
	if (!rc)
		rc = got <= 0 ? -EINVAL : storm_status_parse(text, st);
	free(text);
	return rc;
}

extern void storm_status_free(storm_status_t *st)
{
	free(st->nodes);
	free(st->jobs);
	free(st->bcasts);
	memset(st, 0, sizeof(*st));
}

/* ------------------------------------------------------------- JSON */

static void json_str(FILE *fp, const char *s)
{
	fputc('"', fp);
	for (; *s; s++) {
		unsigned char c = (unsigned char) *s;

		if (c == '"' || c == '\\')
			fprintf(fp, "\\%c", c);
		else if (c < 0x20)
			fprintf(fp, "\\u%04x", c);
		else
			fputc(c, fp);
	}
	fputc('"', fp);
}

static void json_hist(FILE *fp, const storm_status_hist_t *h)
{
	if (h->n <= 0 || h->n > STORM_HIST_MAX) {
		fputs("null", fp);
		return;
	}
	fputs("{\"le\":[", fp);
	for (int i = 0; i < h->n - 1; i++)
		fprintf(fp, "%s%" PRIu64, i ? "," : "", h->le_us[i]);
	fputs("],\"buckets\":[", fp);
	for (int i = 0; i < h->n; i++)
		fprintf(fp, "%s%" PRIu64, i ? "," : "", h->cum[i]);
	fprintf(fp, "],\"sum\":%" PRIu64 "}", h->sum_us);
}

static void json_field(FILE *fp, const void *base, const hdr_field_t *f)
{
	const char *p = (const char *) base + f->off;

	json_str(fp, f->key);
	fputc(':', fp);
	switch (f->type) {
	case F_U64:
		fprintf(fp, "%" PRIu64, *(const uint64_t *) p);
		break;
	case F_I64:
		fprintf(fp, "%" PRId64, *(const int64_t *) p);
		break;
	case F_INT:
		fprintf(fp, "%d", *(const int *) p);
		break;
	case F_U32:
		fprintf(fp, "%" PRIu32, *(const uint32_t *) p);
		break;
	case F_STR:
		json_str(fp, p);
		break;
	case F_OPT_I64:
		if (*(const bool *) ((const char *) base + f->has_off))
			fprintf(fp, "%" PRId64, *(const int64_t *) p);
		else
			fputs("null", fp);
		break;
	case F_HIST:
		json_hist(fp, (const storm_status_hist_t *) p);
		break;
	}
}

static void json_node(FILE *fp, const storm_status_node_t *n)
{
	fprintf(fp, "{\"rank\":%d,\"name\":", n->rank);
	json_str(fp, n->name);
	fputs(",\"state\":", fp);
	json_str(fp, n->state);
	fprintf(fp, ",\"ack_us\":%" PRIu64 ",\"misses\":%" PRIu32
		",\"rejected\":{\"ctl\":%" PRIu64 ",\"bcast\":%" PRIu64
		",\"fabric\":%" PRIu64 "}",
		n->ack_us, n->misses, n->rejected[0], n->rejected[1],
		n->rejected[2]);
	for (size_t i = 0; i < NNODE_FIELDS; i++) {
		fputc(',', fp);
		json_field(fp, n, &node_fields[i]);
	}
	fputc('}', fp);
}

static void json_job(FILE *fp, const storm_status_job_t *j)
{
	fprintf(fp, "{\"job_id\":%" PRIu32 ",\"slot\":%d,\"mask\":%" PRIu32 ",\"nodes\":",
		j->job_id, j->slot, j->mask);
	json_str(fp, j->nodes);
	fputs(",\"policy\":", fp);
	json_str(fp, j->policy);
	fputs(",\"user\":", fp);
	json_str(fp, j->user);
	fputs(",\"name\":", fp);
	json_str(fp, j->name);
	fprintf(fp, ",\"cpus\":%" PRIu32 ",\"cpu_m\":", j->cpus);
	if (j->has_cpu)
		fprintf(fp, "%" PRIu64, j->cpu_m);
	else
		fputs("null", fp);
	/* a percentage of the allocation: 1/1000 CPU over CPUs, times 100 */
	if (j->has_cpu && j->cpus)
		fprintf(fp, ",\"cpu_share\":%.1f",
			(double) j->cpu_m / 10.0 / (double) j->cpus);
	else
		fputs(",\"cpu_share\":null", fp);
	fputc('}', fp);
}

static void json_bcast(FILE *fp, const storm_status_bcast_t *b)
{
	fprintf(fp, "{\"relay\":%d,\"name\":", b->relay);
	json_str(fp, b->name);
	fprintf(fp, ",\"key\":\"%" PRIx64 "\",\"job_id\":%" PRIu32 ",\"phase\":",
		b->key, b->job_id);
	json_str(fp, b->phase);
	fprintf(fp, ",\"size\":%" PRIu64 ",\"received\":%" PRIu64 ",\"nnodes\":%" PRIu32
		",\"start_us\":%" PRId64 ",\"elapsed_us\":%" PRIu64 ",\"ready\":",
		b->size, b->received, b->nnodes, b->start_us, b->elapsed_us);
	json_str(fp, b->ready);
	fputs(",\"done\":", fp);
	json_str(fp, b->done);
	fprintf(fp, ",\"count\":%" PRIu64 ",\"failed\":%" PRIu64 ",\"bytes\":%" PRIu64
		",\"dur_hist_us\":", b->count, b->failed, b->bytes);
	json_hist(fp, &b->dur_hist_us);
	fputc('}', fp);
}

extern int storm_status_fprint_json(FILE *fp, const storm_status_t *st)
{
	fputs("{\"header\":{", fp);
	for (size_t i = 0; i < NFIELDS; i++) {
		if (i)
			fputc(',', fp);
		json_field(fp, &st->hdr, &hdr_fields[i]);
	}
	fputs("},\n\"nodes\":[", fp);
	for (int i = 0; i < st->nnodes; i++) {
		fputs(i ? ",\n" : "\n", fp);
		json_node(fp, &st->nodes[i]);
	}
	fputs("],\n\"jobs\":[", fp);
	for (int i = 0; i < st->njobs; i++) {
		fputs(i ? ",\n" : "\n", fp);
		json_job(fp, &st->jobs[i]);
	}
	fputs("],\n\"bcasts\":[", fp);
	for (int i = 0; i < st->nbcasts; i++) {
		fputs(i ? ",\n" : "\n", fp);
		json_bcast(fp, &st->bcasts[i]);
	}
	fputs("]}\n", fp);
	return ferror(fp) ? -1 : 0;
}

extern bool storm_status_ranks_has(const char *ranks, int k)
{
	const char *p = ranks;

	while (*p) {
		char *end;
		long a = strtol(p, &end, 10), b;

		if (end == p)
			return false;
		b = a;
		if (*end == '-')
			b = strtol(end + 1, &end, 10);
		if (k >= a && k <= b)
			return true;
		p = *end == ',' ? end + 1 : end;
		if (!*end)
			break;
	}
	return false;
}
