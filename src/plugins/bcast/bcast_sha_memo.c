/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bcast_sha_memo.c - srun's memo of file hashes; see bcast_sha_memo.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bcast_sha_memo.h"

#define BUF_BYTES (1 << 20)
#define MAX_FILE_BYTES (64ull << 20)	/* a bigger memo is not read */

typedef struct entry {
	uint64_t dev, ino, size;
	int64_t mt_s, mt_ns, ct_s, ct_ns;
	uint8_t sha[STORM_SHA256_LEN];
} entry_t;

struct storm_sha_memo {
	char path[PATH_MAX];
	entry_t *e;		/* in the order learnt: the file's, then new */
	size_t n, cap;
	size_t lines;		/* lines the file held */
	size_t from_file;	/* entries the file gave: e[0 .. from_file) */
	size_t *slot;		/* open addressing: index + 1, 0 free */
	size_t nslots;
	uint8_t *buf;
	uint64_t hits, hashed, hashed_bytes;
};

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h;
}

static uint64_t key_hash(const entry_t *k)
{
	uint64_t h = mix(mix(mix(0, k->dev), k->ino), k->size);

	h = mix(mix(h, (uint64_t) k->mt_s), (uint64_t) k->mt_ns);
	return mix(mix(h, (uint64_t) k->ct_s), (uint64_t) k->ct_ns);
}

static bool same_key(const entry_t *a, const entry_t *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	       a->mt_s == b->mt_s && a->mt_ns == b->mt_ns &&
	       a->ct_s == b->ct_s && a->ct_ns == b->ct_ns;
}

/* The slot of key k: its entry's, or the free one where it would go. */
static size_t *find_slot(storm_sha_memo_t *m, const entry_t *k)
{
	size_t i = (size_t) (key_hash(k) & (m->nslots - 1));

	while (m->slot[i] && !same_key(&m->e[m->slot[i] - 1], k))
		i = (i + 1) & (m->nslots - 1);
	return &m->slot[i];
}

static int grow_slots(storm_sha_memo_t *m)
{
	size_t n = m->nslots ? m->nslots * 2 : 1024;
	size_t *old = m->slot, oldn = m->nslots;

	if (!(m->slot = calloc(n, sizeof(*m->slot)))) {
		m->slot = old;
		return -1;
	}
	m->nslots = n;
	for (size_t i = 0; i < oldn; i++)
		if (old[i])
			*find_slot(m, &m->e[old[i] - 1]) = old[i];
	free(old);
	return 0;
}

/* Remember k (a later line for the same version replaces the earlier). */
static int put(storm_sha_memo_t *m, const entry_t *k)
{
	size_t *s;

	if ((m->n + 1) * 2 > m->nslots && grow_slots(m))
		return -1;
	s = find_slot(m, k);
	if (*s) {
		memcpy(m->e[*s - 1].sha, k->sha, sizeof(k->sha));
		return 0;
	}
	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 256;
		entry_t *e = realloc(m->e, cap * sizeof(*e));

		if (!e)
			return -1;
		m->e = e;
		m->cap = cap;
	}
	m->e[m->n++] = *k;
	*s = m->n;
	return 0;
}

static void key_of(const struct stat *st, entry_t *k)
{
	memset(k, 0, sizeof(*k));
	k->dev = (uint64_t) st->st_dev;
	k->ino = (uint64_t) st->st_ino;
	k->size = (uint64_t) st->st_size;
	k->mt_s = st->st_mtim.tv_sec;
	k->mt_ns = st->st_mtim.tv_nsec;
	k->ct_s = st->st_ctim.tv_sec;
	k->ct_ns = st->st_ctim.tv_nsec;
}

static int parse_line(const char *line, entry_t *k)
{
	char hex[STORM_SHA256_HEX + 1];
	int end = 0;

	memset(k, 0, sizeof(*k));
	if (sscanf(line, "%" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNd64 ".%9" SCNd64
		   " %" SCNd64 ".%9" SCNd64 " %64[0-9a-f]%n",
		   &k->dev, &k->ino, &k->size, &k->mt_s, &k->mt_ns, &k->ct_s,
		   &k->ct_ns, hex, &end) != 8 || line[end] != '\0')
		return -1;
	return storm_sha256_parse(hex, k->sha);
}

static void load(storm_sha_memo_t *m)
{
	FILE *f = fopen(m->path, "re");
	char line[512];
	struct stat st;
	entry_t k;

	if (!f)
		return;
	if (fstat(fileno(f), &st) || !S_ISREG(st.st_mode) ||
	    (uint64_t) st.st_size > MAX_FILE_BYTES) {
		fclose(f);
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		m->lines++;
		if (!parse_line(line, &k) && put(m, &k))
			break;
	}
	fclose(f);
}

static void default_path(char *out, size_t len)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");

	out[0] = '\0';
	if (xdg && xdg[0] == '/')
		snprintf(out, len, "%s/storm/sha256", xdg);
	else if (home && home[0] == '/')
		snprintf(out, len, "%s/.cache/storm/sha256", home);
}

extern storm_sha_memo_t *storm_sha_memo_open(const char *path)
{
	storm_sha_memo_t *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	if (path)
		snprintf(m->path, sizeof(m->path), "%s", path);
	else
		default_path(m->path, sizeof(m->path));
	if (m->path[0])
		load(m);
	m->from_file = m->n;
	return m;
}

static int hash_fd(storm_sha_memo_t *m, int fd, uint64_t size,
		   uint8_t sha[STORM_SHA256_LEN])
{
	storm_sha256_t *h = storm_sha256_new();
	uint64_t off = 0;
	ssize_t n = 0;
	int rc = -1;

	if (!h || (!m->buf && !(m->buf = malloc(BUF_BYTES)))) {
		errno = ENOMEM;
		goto out;
	}
	while (off <= size && (n = pread(fd, m->buf, BUF_BYTES, (off_t) off)) > 0) {
		if (storm_sha256_update(h, m->buf, (size_t) n)) {
			errno = EIO;
			goto out;
		}
		off += (uint64_t) n;
	}
	if (n < 0)
		goto out;
	if (off != size) {
		errno = EAGAIN;
		goto out;
	}
	if (storm_sha256_final(h, sha)) {
		errno = EIO;
		goto out;
	}
	rc = 0;
	m->hashed++;
	m->hashed_bytes += size;
out:
	storm_sha256_free(h);
	return rc;
}

extern int storm_sha_memo_file(storm_sha_memo_t *m, int fd,
			       const struct stat *st,
			       uint8_t sha[STORM_SHA256_LEN])
{
	time_t racy = time(NULL) - STORM_SHA_MEMO_RACY_S;
	entry_t k;
	size_t *s;

	key_of(st, &k);
	if (m->nslots && *(s = find_slot(m, &k))) {
		memcpy(sha, m->e[*s - 1].sha, STORM_SHA256_LEN);
		m->hits++;
		return 0;
	}
	if (hash_fd(m, fd, k.size, sha))
		return -1;
	if (st->st_mtim.tv_sec < racy && st->st_ctim.tv_sec < racy) {
		memcpy(k.sha, sha, sizeof(k.sha));
		put(m, &k);	/* out of memory: just not remembered */
	}
	return 0;
}

extern void storm_sha_memo_counts(const storm_sha_memo_t *m, uint64_t *hits,
				  uint64_t *hashed, uint64_t *hashed_bytes)
{
	*hits = m->hits;
	*hashed = m->hashed;
	*hashed_bytes = m->hashed_bytes;
}

static int format_line(const entry_t *k, char *out, size_t len)
{
	char hex[STORM_SHA256_HEX];

	storm_sha256_hex(k->sha, hex);
	return snprintf(out, len, "%" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRId64
			".%09" PRId64 " %" PRId64 ".%09" PRId64 " %s\n", k->dev,
			k->ino, k->size, k->mt_s, k->mt_ns, k->ct_s, k->ct_ns,
			hex);
}

/* mkdir -p of the memo's directory, the user's own (0700). */
static void make_dir(const char *path)
{
	char d[PATH_MAX];

	snprintf(d, sizeof(d), "%s", path);
	for (char *p = d + 1; *p; p++)
		if (*p == '/') {
			*p = '\0';
			mkdir(d, 0700);
			*p = '/';
		}
}

/* The newest STORM_SHA_MEMO_MAX / 2 entries, in a new file renamed over
 * the memo: a concurrent append to the old one is lost, which costs only
 * a hash. */
static void compact(storm_sha_memo_t *m)
{
	char tmp[PATH_MAX + 16], line[256];
	size_t keep = STORM_SHA_MEMO_MAX / 2;
	size_t from = m->n > keep ? m->n - keep : 0;
	FILE *f;
	int fd;

	snprintf(tmp, sizeof(tmp), "%s.XXXXXX", m->path);
	if ((fd = mkstemp(tmp)) < 0)
		return;
	if (!(f = fdopen(fd, "w"))) {
		close(fd);
		unlink(tmp);
		return;
	}
	for (size_t i = from; i < m->n; i++)
		if (format_line(&m->e[i], line, sizeof(line)) > 0)
			fputs(line, f);
	if (fclose(f) || rename(tmp, m->path))
		unlink(tmp);
}

extern void storm_sha_memo_close(storm_sha_memo_t *m)
{
	size_t first_new;
	char line[256];
	int fd, len;

	if (!m)
		return;
	first_new = m->from_file;
	if (m->path[0] && m->n > first_new) {
		make_dir(m->path);
		if (m->lines + (m->n - first_new) > STORM_SHA_MEMO_MAX) {
			compact(m);
		} else if ((fd = open(m->path, O_WRONLY | O_APPEND | O_CREAT |
				      O_CLOEXEC | O_NOFOLLOW, 0600)) >= 0) {
			for (size_t i = first_new; i < m->n; i++)
				if ((len = format_line(&m->e[i], line,
						       sizeof(line))) > 0 &&
				    write(fd, line, (size_t) len) != len)
					break;
			close(fd);
		}
	}
	free(m->e);
	free(m->slot);
	free(m->buf);
	free(m);
}
