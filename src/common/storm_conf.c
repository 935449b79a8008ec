/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * storm_conf.c - storm.conf parser (see storm_conf.h and storm.conf(5)).
 *
 * Table driven: each key has a type and a range, so a new key is one row
 * and every key gets the same checks and the same error messages.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "storm_conf.h"

/* Refuse files larger than this: storm.conf is a few lines. */
#define STORM_CONF_MAX_FILE (1 << 20)

typedef enum {
	K_DURATION,	/* uint64_t microseconds, with us/ms/s units */
	K_SIZE,		/* uint64_t bytes, with K/M/G units */
	K_U32,
	K_U64,
	K_BOOL,
	K_STRING,
	K_POLICY,
	K_PORTS,
	K_SWITCH_AT,	/* bool: arrival (true) or announced (false) */
} key_type_t;

typedef struct {
	const char *name;
	key_type_t type;
	size_t off;		/* offset in storm_conf_t */
	size_t size;		/* K_STRING: buffer size */
	uint64_t min, max;	/* numeric range, inclusive */
} key_def_t;

#define F(field) offsetof(storm_conf_t, field)
#define S(field) sizeof(((storm_conf_t *) 0)->field)

static const key_def_t keys[] = {
	{ "Timeslice", K_DURATION, F(timeslice_us), 0, 100, 3600000000ULL },
	{ "MaxMPL", K_U32, F(max_mpl), 0, 1, 16 },
	{ "Policy", K_POLICY, F(policy), 0, 0, 0 },
	{ "Provider", K_STRING, F(provider), S(provider), 0, 0 },
	{ "Port", K_PORTS, F(port_lo), 0, 1024, 65535 },
	{ "BcastPort", K_PORTS, F(bcast_port_lo), 0, 1024, 65535 },
	{ "ControllerPort", K_U32, F(ctl_port), 0, 1024, 65535 },
	{ "FailSafe", K_DURATION, F(failsafe_us), 0, 1000, 3600000000ULL },
	{ "HandoverTime", K_DURATION, F(handover_us), 0, 0, 3600000000ULL },
	{ "StrobeInterval", K_DURATION, F(strobe_interval_us), 0, 0, 60000000ULL },
	{ "SwitchAt", K_SWITCH_AT, F(switch_at_arrival), 0, 0, 0 },
	{ "SuspectQuanta", K_U32, F(suspect_quanta), 0, 1, 1000000 },
	{ "SuspectTime", K_DURATION, F(suspect_time_us), 0, 20000, 600000000ULL },
	{ "ReturnAfter", K_DURATION, F(return_after_us), 0, 0, 3600000000ULL },
	{ "Timeout", K_DURATION, F(timeout_us), 0, 1000, 600000000ULL },
	{ "BcastExecutable", K_BOOL, F(bcast_executable), 0, 0, 0 },
	{ "BcastOverlap", K_BOOL, F(bcast_overlap), 0, 0, 0 },
	{ "BcastLibraries", K_BOOL, F(bcast_libraries), 0, 0, 0 },
	{ "BcastDir", K_STRING, F(bcast_dir), S(bcast_dir), 0, 0 },
	{ "BcastRequestTimeout", K_DURATION, F(bcast_request_us), 0, 1000, 60000000ULL },
	{ "BcastMaxSize", K_SIZE, F(bcast_max_bytes), 0, 1, 1ULL << 40 },
	{ "BcastCacheSize", K_SIZE, F(bcast_cache_bytes), 0, 0, 1ULL << 40 },
	{ "ChunkSize", K_SIZE, F(chunk_bytes), 0, 4096, 64ULL << 20 },
	{ "Window", K_U32, F(window), 0, 1, 64 },
	{ "TreeArity", K_U32, F(tree_arity), 0, 1, 64 },
	{ "BcastArity", K_U32, F(bcast_arity), 0, 1, 64 },
	{ "MemReserve", K_U64, F(mem_reserve_mb), 0, 0, 1ULL << 30 },
	{ "NodeManager", K_STRING, F(nm_path), S(nm_path), 0, 0 },
	{ "NMLogFile", K_STRING, F(nm_log), S(nm_log), 0, 0 },
};

/* K_PORTS stores low and high as two adjacent uint16_t. */
_Static_assert(offsetof(storm_conf_t, port_hi) ==
	       offsetof(storm_conf_t, port_lo) + sizeof(uint16_t), "Port pair");
_Static_assert(offsetof(storm_conf_t, bcast_port_hi) ==
	       offsetof(storm_conf_t, bcast_port_lo) + sizeof(uint16_t),
	       "BcastPort pair");

static int set_err(char *errbuf, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int set_err(char *errbuf, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (errbuf && errlen) {
		va_start(ap, fmt);
		vsnprintf(errbuf, errlen, fmt, ap);
		va_end(ap);
	}
	return -1;
}

extern void storm_conf_defaults(storm_conf_t *conf)
{
	memset(conf, 0, sizeof(*conf));
	/* a strobe every quantum costs little from here up (the gang
	 * benchmark, doc/benchmarks.md), and interactive jobs still respond */
	conf->timeslice_us = 20000;
	conf->max_mpl = 2;
	conf->policy = STORM_POLICY_GANG;
	snprintf(conf->provider, sizeof(conf->provider), "tcp;ofi_rxm");
	conf->port_lo = conf->port_hi = 7100;
	conf->bcast_port_lo = conf->bcast_port_hi = 7200;
	conf->ctl_port = 7099;
	conf->failsafe_us = 1000000;
	conf->handover_us = 10000000;
	conf->strobe_interval_auto = true;
	conf->suspect_quanta = 50;
	/* silent this long is dead: several times the longest silence of a
	 * live node manager on a loaded host, whose heartbeats (four per
	 * SuspectTime, from a real-time thread) can still be held up by the
	 * host for hundreds of milliseconds; a dead one is drained in about
	 * SuspectTime and a quarter (storm.conf(5)) */
	conf->suspect_time_us = 1000000;
	/* long enough to see a restarted node manager settle, short enough
	 * that a restart (slurmd's, an upgrade's) costs no administrator */
	conf->return_after_us = 2000000;
	conf->timeout_us = 5000000;
	conf->bcast_executable = false;
	conf->bcast_overlap = false;
	conf->bcast_libraries = false;
	snprintf(conf->bcast_dir, sizeof(conf->bcast_dir), "/dev/shm/storm");
	conf->bcast_max_bytes = 1ULL << 30;
	/* a site sizes it against its RAM disk: off until it does */
	conf->bcast_cache_bytes = 0;
	conf->bcast_request_us = 2000000;
	conf->chunk_bytes = 512 * 1024;
	conf->window = 4;
	conf->tree_arity = 4;
	conf->bcast_arity = 1;
	conf->mem_reserve_mb = 256;
	conf->nm_path[0] = '\0';
	snprintf(conf->nm_log, sizeof(conf->nm_log),
		 "/var/log/slurm/storm-nm-%%n.log");
}

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;
	unsigned long long x;

	if (!*s || *s == '-' || !isdigit((unsigned char) *s))
		return -1;
	errno = 0;
	x = strtoull(s, &end, 10);
	if (errno || *end)
		return -1;
	*v = x;
	return 0;
}

/* Number with an optional fractional part, then a unit suffix. */
static int parse_scaled(const char *s, const char *const *units,
			const uint64_t *mult, uint64_t dflt_mult, uint64_t *out)
{
	char *end;
	double x;

	if (!*s || !(isdigit((unsigned char) *s) || *s == '.'))
		return -1;
	errno = 0;
	x = strtod(s, &end);
	if (errno || end == s || x < 0)
		return -1;
	if (!*end) {
		x *= (double) dflt_mult;
	} else {
		int i;

		for (i = 0; units[i]; i++)
			if (!strcasecmp(end, units[i]))
				break;
		if (!units[i])
			return -1;
		x *= (double) mult[i];
	}
	/* (double) UINT64_MAX rounds up to 2^64, itself out of range of
	 * uint64_t: compare against 2^64 after rounding */
	x += 0.5;
	if (!(x < 0x1p64))
		return -1;
	*out = (uint64_t) x;
	return 0;
}

extern int storm_parse_duration(const char *s, uint64_t *us)
{
	static const char *const units[] = { "us", "ms", "s", "m", NULL };
	static const uint64_t mult[] = { 1, 1000, 1000000, 60000000 };

	return parse_scaled(s, units, mult, 1, us);
}

extern int storm_parse_size(const char *s, uint64_t *bytes)
{
	static const char *const units[] = { "K", "KB", "KiB", "M", "MB",
					     "MiB", "G", "GB", "GiB", NULL };
	static const uint64_t mult[] = { 1ULL << 10, 1ULL << 10, 1ULL << 10,
					 1ULL << 20, 1ULL << 20, 1ULL << 20,
					 1ULL << 30, 1ULL << 30, 1ULL << 30 };

	return parse_scaled(s, units, mult, 1, bytes);
}

static int parse_bool(const char *s, bool *b)
{
	if (!strcasecmp(s, "yes") || !strcasecmp(s, "true") ||
	    !strcmp(s, "1")) {
		*b = true;
		return 0;
	}
	if (!strcasecmp(s, "no") || !strcasecmp(s, "false") ||
	    !strcmp(s, "0")) {
		*b = false;
		return 0;
	}
	return -1;
}

static int parse_policy(const char *s, storm_policy_t *p)
{
	if (!strcasecmp(s, "gang"))
		*p = STORM_POLICY_GANG;
	else if (!strcasecmp(s, "flexible"))
		*p = STORM_POLICY_FLEXIBLE;
	else if (!strcasecmp(s, "local"))
		*p = STORM_POLICY_LOCAL;
	else
		return -1;
	return 0;
}

extern const char *storm_policy_str(storm_policy_t policy)
{
	switch (policy) {
	case STORM_POLICY_GANG:
		return "gang";
	case STORM_POLICY_FLEXIBLE:
		return "flexible";
	case STORM_POLICY_LOCAL:
		return "local";
	}
	return "unknown";
}

static const key_def_t *find_key(const char *name)
{
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (!strcasecmp(keys[i].name, name))
			return &keys[i];
	return NULL;
}

/* Apply one global key.  loc is "file:line" for messages. */
static int apply_key(storm_conf_t *conf, const key_def_t *k, const char *val,
		     const char *loc, char *errbuf, size_t errlen)
{
	void *dst = (char *) conf + k->off;
	uint64_t v = 0, hi;
	const char *what = NULL;

	switch (k->type) {
	case K_DURATION:
		what = "a duration such as 2ms, 500us or 1s";
		if (storm_parse_duration(val, &v))
			goto bad;
		break;
	case K_SIZE:
		what = "a size such as 512K or 12M";
		if (storm_parse_size(val, &v))
			goto bad;
		break;
	case K_U32:
	case K_U64:
		what = "a whole number";
		if (parse_u64(val, &v))
			goto bad;
		break;
	case K_BOOL:
		what = "yes or no";
		if (parse_bool(val, (bool *) dst))
			goto bad;
		return 0;
	case K_SWITCH_AT:
		what = "announced or arrival";
		if (!strcasecmp(val, "announced"))
			*(bool *) dst = false;
		else if (!strcasecmp(val, "arrival"))
			*(bool *) dst = true;
		else
			goto bad;
		return 0;
	case K_POLICY:
		what = "gang, flexible or local";
		if (parse_policy(val, (storm_policy_t *) dst))
			goto bad;
		return 0;
	case K_STRING:
		if (!*val)
			return set_err(errbuf, errlen,
				       "%s: key '%s' needs a value", loc,
				       k->name);
		if (strlen(val) >= k->size)
			return set_err(errbuf, errlen,
				       "%s: value of '%s' is longer than %zu characters",
				       loc, k->name, k->size - 1);
		memcpy(dst, val, strlen(val) + 1);
		return 0;
	case K_PORTS: {
		/* a pair of uint16_t, low then high (storm_conf.h) */
		uint16_t *pair = (uint16_t *) dst;
		char lo_s[16], *dash;
		uint64_t lo;

		what = "a port or a range of ports such as 7100 or 7100-7131";
		if (strlen(val) >= sizeof(lo_s))
			goto bad;
		snprintf(lo_s, sizeof(lo_s), "%s", val);
		dash = strchr(lo_s, '-');
		if (dash)
			*dash++ = '\0';
		if (parse_u64(lo_s, &lo))
			goto bad;
		hi = lo;
		if (dash && parse_u64(dash, &hi))
			goto bad;
		if (lo < k->min || hi > k->max || hi < lo)
			return set_err(errbuf, errlen,
				       "%s: %s=%s is out of range (ports %" PRIu64 "-%" PRIu64 ", low to high)",
				       loc, k->name, val, k->min, k->max);
		pair[0] = (uint16_t) lo;
		pair[1] = (uint16_t) hi;
		return 0;
	}
	}

	if (v < k->min || v > k->max)
		return set_err(errbuf, errlen,
			       "%s: %s=%s is out of range [%" PRIu64 ", %" PRIu64 "]%s",
			       loc, k->name, val, k->min, k->max,
			       (k->type == K_DURATION) ? " microseconds" :
			       (k->type == K_SIZE) ? " bytes" : "");
	if (k->type == K_U32)
		*(uint32_t *) dst = (uint32_t) v;
	else
		*(uint64_t *) dst = v;
	return 0;
bad:
	return set_err(errbuf, errlen, "%s: bad value '%s' for key '%s': expected %s",
		       loc, val, k->name, what);
}

/* Keys a PartitionName line may carry. */
static int apply_part_key(storm_part_conf_t *p, const char *key,
			  const char *val, const char *loc, char *errbuf,
			  size_t errlen)
{
	uint64_t v;

	if (!strcasecmp(key, "Policy")) {
		if (parse_policy(val, &p->policy))
			return set_err(errbuf, errlen,
				       "%s: bad value '%s' for key 'Policy': expected gang, flexible or local",
				       loc, val);
		return 0;
	}
	if (!strcasecmp(key, "MaxMPL")) {
		if (parse_u64(val, &v) || v < 1 || v > 16)
			return set_err(errbuf, errlen,
				       "%s: bad value '%s' for key 'MaxMPL': expected a whole number in [1, 16]",
				       loc, val);
		p->max_mpl = (uint32_t) v;
		return 0;
	}
	return set_err(errbuf, errlen,
		       "%s: unknown key '%s' on a PartitionName line (allowed: Policy, MaxMPL)",
		       loc, key);
}

/* Split a line into key=value tokens; modifies line. */
static int tokenize(char *line, char **keys_out, char **vals_out, int max,
		    const char *loc, char *errbuf, size_t errlen)
{
	int n = 0;
	char *p = line;

	for (;;) {
		char *tok, *eq;

		while (isspace((unsigned char) *p))
			p++;
		if (!*p)
			break;
		tok = p;
		while (*p && !isspace((unsigned char) *p))
			p++;
		if (*p)
			*p++ = '\0';
		eq = strchr(tok, '=');
		if (!eq || eq == tok)
			return set_err(errbuf, errlen,
				       "%s: expected key=value, found '%s'",
				       loc, tok);
		*eq = '\0';
		if (n == max)
			return set_err(errbuf, errlen,
				       "%s: too many key=value pairs on one line",
				       loc);
		keys_out[n] = tok;
		vals_out[n] = eq + 1;
		n++;
	}
	return n;
}

/* StrobeInterval=auto (storm_conf.h): never an interval the consistency
 * checks refuse. */
static uint64_t auto_strobe_interval(const storm_conf_t *c)
{
	uint64_t q = c->timeslice_us, si = STORM_CONF_AUTO_STROBE_US;

	if (!q || q >= STORM_CONF_AUTO_STROBE_FROM_US)
		return 0;
	if (si > c->failsafe_us / 2)
		si = c->failsafe_us / 2;
	if (si > q * STORM_CONF_MAX_QUANTA_PER_STROBE)
		si = q * STORM_CONF_MAX_QUANTA_PER_STROBE;
	si -= si % q;
	return si >= 2 * q ? si : 0;
}

static int check_consistency(const storm_conf_t *c, const char *name,
			     char *errbuf, size_t errlen)
{
	if (c->failsafe_us < 2 * c->timeslice_us)
		return set_err(errbuf, errlen,
			       "%s: FailSafe (%" PRIu64 " us) must be at least twice Timeslice (%" PRIu64 " us)",
			       name, c->failsafe_us, c->timeslice_us);
	if (c->strobe_interval_us && c->strobe_interval_us < c->timeslice_us)
		return set_err(errbuf, errlen,
			       "%s: StrobeInterval (%" PRIu64 " us) must be 0 (a strobe every quantum) or at least Timeslice (%" PRIu64 " us)",
			       name, c->strobe_interval_us, c->timeslice_us);
	if (c->failsafe_us < 2 * c->strobe_interval_us)
		return set_err(errbuf, errlen,
			       "%s: FailSafe (%" PRIu64 " us) must be at least twice StrobeInterval (%" PRIu64 " us)",
			       name, c->failsafe_us, c->strobe_interval_us);
	if (storm_conf_quanta_per_strobe(c) > STORM_CONF_MAX_QUANTA_PER_STROBE)
		return set_err(errbuf, errlen,
			       "%s: StrobeInterval (%" PRIu64 " us) may cover at most %d quanta of Timeslice (%" PRIu64 " us)",
			       name, c->strobe_interval_us,
			       STORM_CONF_MAX_QUANTA_PER_STROBE, c->timeslice_us);
	/* The Machine Manager's endpoint lives on the slurmctld host, which
	 * may also run node managers: the two must never share a port. */
	if (c->ctl_port >= c->port_lo && c->ctl_port <= c->port_hi)
		return set_err(errbuf, errlen,
			       "%s: ControllerPort=%u lies inside Port=%u-%u",
			       name, c->ctl_port, c->port_lo, c->port_hi);
	if (c->bcast_port_hi - c->bcast_port_lo != c->port_hi - c->port_lo)
		return set_err(errbuf, errlen,
			       "%s: BcastPort=%u-%u must span as many ports as Port=%u-%u (one per node manager)",
			       name, c->bcast_port_lo, c->bcast_port_hi,
			       c->port_lo, c->port_hi);
	if (c->bcast_port_lo <= c->port_hi && c->bcast_port_hi >= c->port_lo)
		return set_err(errbuf, errlen,
			       "%s: BcastPort=%u-%u overlaps Port=%u-%u",
			       name, c->bcast_port_lo, c->bcast_port_hi,
			       c->port_lo, c->port_hi);
	if (c->ctl_port >= c->bcast_port_lo && c->ctl_port <= c->bcast_port_hi)
		return set_err(errbuf, errlen,
			       "%s: ControllerPort=%u lies inside BcastPort=%u-%u",
			       name, c->ctl_port, c->bcast_port_lo,
			       c->bcast_port_hi);
	if (c->bcast_dir[0] != '/')
		return set_err(errbuf, errlen,
			       "%s: BcastDir must be an absolute path, not '%s'",
			       name, c->bcast_dir);
	return 0;
}

extern int storm_conf_parse(const char *name, const char *text,
			    storm_conf_t *out, char *errbuf, size_t errlen)
{
	storm_conf_t conf;
	char seen[sizeof(keys) / sizeof(keys[0])] = { 0 };
	const char *p = text;
	int lineno = 0;

	storm_conf_defaults(&conf);
	while (*p) {
		char line[1024], loc[300], *hash;
		char *k[32], *v[32];
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t) (nl - p) : strlen(p);
		int n;

		lineno++;
		snprintf(loc, sizeof(loc), "%s:%d", name, lineno);
		if (len >= sizeof(line))
			return set_err(errbuf, errlen,
				       "%s: line longer than %zu characters",
				       loc, sizeof(line) - 1);
		memcpy(line, p, len);
		line[len] = '\0';
		p += len + (nl ? 1 : 0);
		if ((hash = strchr(line, '#')))
			*hash = '\0';

		n = tokenize(line, k, v, 32, loc, errbuf, errlen);
		if (n < 0)
			return -1;
		if (n == 0)
			continue;

		if (!strcasecmp(k[0], "PartitionName")) {
			storm_part_conf_t *part;

			if (!*v[0] || strlen(v[0]) >= STORM_CONF_NAMELEN)
				return set_err(errbuf, errlen,
					       "%s: bad partition name '%s'",
					       loc, v[0]);
			if (conf.nparts == STORM_CONF_MAX_PARTS)
				return set_err(errbuf, errlen,
					       "%s: more than %d PartitionName lines",
					       loc, STORM_CONF_MAX_PARTS);
			part = &conf.parts[conf.nparts++];
			snprintf(part->name, sizeof(part->name), "%s", v[0]);
			part->policy = conf.policy;
			part->max_mpl = 0;	/* 0: use the global MaxMPL */
			for (int i = 1; i < n; i++)
				if (apply_part_key(part, k[i], v[i], loc,
						   errbuf, errlen))
					return -1;
			continue;
		}

		for (int i = 0; i < n; i++) {
			const key_def_t *def = find_key(k[i]);

			if (!strcasecmp(k[i], "PartitionName"))
				return set_err(errbuf, errlen,
					       "%s: PartitionName must start its own line",
					       loc);
			if (!def)
				return set_err(errbuf, errlen,
					       "%s: unknown key '%s'", loc,
					       k[i]);
			if (seen[def - keys]++)
				return set_err(errbuf, errlen,
					       "%s: key '%s' given twice",
					       loc, def->name);
			if (def->off == F(strobe_interval_us)) {
				conf.strobe_interval_auto =
					!strcasecmp(v[i], "auto");
				if (conf.strobe_interval_auto)
					continue;
			}
			if (apply_key(&conf, def, v[i], loc, errbuf, errlen))
				return -1;
		}
	}
	if (conf.strobe_interval_auto)
		conf.strobe_interval_us = auto_strobe_interval(&conf);
	if (!seen[find_key("BcastPort") - keys]) {
		if (conf.port_hi + 100 > 65535)
			return set_err(errbuf, errlen,
				       "%s: Port=%u-%u leaves no room for the default BcastPort (Port+100): set BcastPort",
				       name, conf.port_lo, conf.port_hi);
		conf.bcast_port_lo = conf.port_lo + 100;
		conf.bcast_port_hi = conf.port_hi + 100;
	}
	if (check_consistency(&conf, name, errbuf, errlen))
		return -1;
	*out = conf;
	return 0;
}

extern int storm_conf_load(const char *path, bool missing_ok,
			   storm_conf_t *conf, char *errbuf, size_t errlen)
{
	struct stat st;
	FILE *fp;
	char *text;
	size_t got;
	int rc;

	fp = fopen(path, "r");
	if (!fp) {
		if (errno == ENOENT && missing_ok) {
			storm_conf_defaults(conf);
			return 0;
		}
		return set_err(errbuf, errlen, "%s: cannot open: %s", path,
			       strerror(errno));
	}
	if (fstat(fileno(fp), &st) || !S_ISREG(st.st_mode) ||
	    st.st_size > STORM_CONF_MAX_FILE) {
		fclose(fp);
		return set_err(errbuf, errlen,
			       "%s: not a regular file of at most %d bytes",
			       path, STORM_CONF_MAX_FILE);
	}
	text = malloc((size_t) st.st_size + 1);
	if (!text) {
		fclose(fp);
		return set_err(errbuf, errlen, "%s: out of memory", path);
	}
	got = fread(text, 1, (size_t) st.st_size, fp);
	text[got] = '\0';
	if (ferror(fp)) {
		rc = set_err(errbuf, errlen, "%s: read error", path);
	} else if (memchr(text, '\0', got)) {
		rc = set_err(errbuf, errlen, "%s: contains a NUL byte", path);
	} else {
		rc = storm_conf_parse(path, text, conf, errbuf, errlen);
	}
	free(text);
	fclose(fp);
	return rc;
}

extern char *storm_conf_path(const char *slurm_conf_path, char *buf,
			     size_t len)
{
	const char *env = getenv("STORM_CONF");
	const char *slash;

	if (env && *env) {
		snprintf(buf, len, "%s", env);
		return buf;
	}
	if (!slurm_conf_path || !(slash = strrchr(slurm_conf_path, '/'))) {
		snprintf(buf, len, "/etc/slurm/%s", STORM_CONF_FILE);
		return buf;
	}
	snprintf(buf, len, "%.*s/%s", (int) (slash - slurm_conf_path),
		 slurm_conf_path, STORM_CONF_FILE);
	return buf;
}

extern storm_policy_t storm_conf_part_policy(const storm_conf_t *conf,
					     const char *partition)
{
	for (int i = 0; partition && i < conf->nparts; i++)
		if (!strcmp(conf->parts[i].name, partition))
			return conf->parts[i].policy;
	return conf->policy;
}

extern uint32_t storm_conf_quanta_per_strobe(const storm_conf_t *conf)
{
	uint64_t n;

	if (!conf->timeslice_us || conf->strobe_interval_us <= conf->timeslice_us)
		return 1;
	n = conf->strobe_interval_us / conf->timeslice_us;
	return n > UINT32_MAX ? UINT32_MAX : (uint32_t) n;
}

extern uint32_t storm_conf_part_max_mpl(const storm_conf_t *conf,
					const char *partition)
{
	for (int i = 0; partition && i < conf->nparts; i++)
		if (!strcmp(conf->parts[i].name, partition) &&
		    conf->parts[i].max_mpl)
			return conf->parts[i].max_mpl;
	return conf->max_mpl;
}

extern int storm_conf_format(const storm_conf_t *c, char *buf, size_t len)
{
	char si[96];
	int n;

	/* auto stays auto (the output parses back), with what it chose */
	if (c->strobe_interval_auto)
		snprintf(si, sizeof(si), "auto\n# StrobeInterval=auto: %" PRIu64 "us at this Timeslice",
			 c->strobe_interval_us);
	else
		snprintf(si, sizeof(si), "%" PRIu64 "us", c->strobe_interval_us);

	n = snprintf(buf, len,
		     "Timeslice=%" PRIu64 "us\nMaxMPL=%u\nPolicy=%s\n"
		     "Provider=%s\nPort=%u-%u\nBcastPort=%u-%u\nControllerPort=%u\n"
		     "FailSafe=%" PRIu64 "us\nHandoverTime=%" PRIu64 "us\n"
		     "StrobeInterval=%s\n"
		     "SwitchAt=%s\nSuspectQuanta=%u\nSuspectTime=%" PRIu64 "us\n"
		     "ReturnAfter=%" PRIu64 "us\n"
		     "Timeout=%" PRIu64 "us\n"
		     "BcastExecutable=%s\nBcastOverlap=%s\nBcastLibraries=%s\n"
		     "BcastDir=%s\n"
		     "BcastMaxSize=%" PRIu64 "\nBcastCacheSize=%" PRIu64 "\n"
		     "BcastRequestTimeout=%" PRIu64 "us\n"
		     "ChunkSize=%" PRIu64 "\nWindow=%u\nTreeArity=%u\nBcastArity=%u\n"
		     "MemReserve=%" PRIu64 "\nNodeManager=%s\nNMLogFile=%s\n",
		     c->timeslice_us, c->max_mpl, storm_policy_str(c->policy),
		     c->provider, c->port_lo, c->port_hi, c->bcast_port_lo,
		     c->bcast_port_hi, c->ctl_port,
		     c->failsafe_us, c->handover_us, si,
		     c->switch_at_arrival ? "arrival" : "announced",
		     c->suspect_quanta, c->suspect_time_us, c->return_after_us,
		     c->timeout_us,
		     c->bcast_executable ? "yes" : "no",
		     c->bcast_overlap ? "yes" : "no",
		     c->bcast_libraries ? "yes" : "no", c->bcast_dir,
		     c->bcast_max_bytes, c->bcast_cache_bytes, c->bcast_request_us,
		     c->chunk_bytes,
		     c->window,
		     c->tree_arity, c->bcast_arity, c->mem_reserve_mb,
		     c->nm_path[0] ? c->nm_path : "(default)", c->nm_log);
	if (n < 0 || (size_t) n >= len)
		return -1;
	for (int i = 0; i < c->nparts; i++) {
		int m = snprintf(buf + n, len - n,
				 "PartitionName=%s Policy=%s MaxMPL=%u\n",
				 c->parts[i].name,
				 storm_policy_str(c->parts[i].policy),
				 c->parts[i].max_mpl ? c->parts[i].max_mpl :
						       c->max_mpl);
		if (m < 0 || (size_t) m >= len - n)
			return -1;
		n += m;
	}
	return n;
}
