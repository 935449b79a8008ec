/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * storm_bundle.c - the bundle format (storm_bundle.h): the writer srun
 * uses, and the extractor the node manager runs on what a user sent.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storm_bundle.h"

#define OUT_BUF (256 * 1024)	/* the writer's batch: few syscalls for small files */
#define SHOWN_NAME 256		/* the most of a name an error message shows */

static int fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -1;
}

static const char *kind(char type)
{
	return type == 'd' ? "directory" : type == 'l' ? "symlink" : "file";
}

/* A file sent and a file referenced are one kind: the same name twice. */
static bool same_kind(char a, char b)
{
	return a == b || (a != 'd' && a != 'l' && b != 'd' && b != 'l');
}

/* The bytes that follow an entry's name and link target. */
static uint64_t payload(char type, uint64_t size)
{
	return type == 'f' ? size : type == 'c' ? STORM_BUNDLE_SHA256 : 0;
}

/* The writer and the extractor hold the same rule, so that whatever is
 * written is extracted and a crafted name cannot climb out. */
static bool name_ok(const char *s, size_t len)
{
	size_t i, start = 0;

	if (len == 0 || len > STORM_BUNDLE_MAX_NAME)
		return false;
	for (i = 0; i <= len; i++) {
		if (i < len && (s[i] == '\0' || s[i] == '\n'))
			return false;
		if (i == len || s[i] == '/') {
			size_t n = i - start;

			if (n == 0 || (n == 1 && s[start] == '.') ||
			    (n == 2 && s[start] == '.' && s[start + 1] == '.'))
				return false;
			start = i + 1;
		}
	}
	return true;
}

/* ---- names seen: open addressing, keys not copied ---- */

typedef struct {
	const char *key;	/* NULL: free */
	size_t len;
	size_t val;
} slot_t;

typedef struct {
	slot_t *s;
	size_t cap;		/* a power of two, or 0 */
	size_t n;
} table_t;

static uint64_t hash(const char *s, size_t len)
{
	uint64_t h = 1469598103934665603ULL;	/* FNV-1a */

	while (len--) {
		h ^= (unsigned char) *s++;
		h *= 1099511628211ULL;
	}
	return h;
}

static slot_t *tab_slot(const table_t *t, const char *key, size_t len)
{
	size_t i = (size_t) hash(key, len) & (t->cap - 1);

	while (t->s[i].key && (t->s[i].len != len ||
			       memcmp(t->s[i].key, key, len)))
		i = (i + 1) & (t->cap - 1);
	return &t->s[i];
}

static bool tab_get(const table_t *t, const char *key, size_t len,
		    size_t *val)
{
	slot_t *s;

	if (!t->cap)
		return false;
	s = tab_slot(t, key, len);
	if (s->key)
		*val = s->val;
	return s->key != NULL;
}

/* A new key (the caller looked first).  0, or -1 on ENOMEM. */
static int tab_put(table_t *t, const char *key, size_t len, size_t val)
{
	slot_t *s;

	if ((t->n + 1) * 2 > t->cap) {
		table_t g = { NULL, t->cap ? t->cap * 2 : 64, 0 };
		size_t i;

		if (!(g.s = calloc(g.cap, sizeof(*g.s))))
			return -1;
		for (i = 0; i < t->cap; i++)
			if (t->s[i].key)
				*tab_slot(&g, t->s[i].key, t->s[i].len) = t->s[i];
		g.n = t->n;
		free(t->s);
		*t = g;
	}
	s = tab_slot(t, key, len);
	s->key = key;
	s->len = len;
	s->val = val;
	t->n++;
	return 0;
}

/* ---- little endian ---- */

static void le32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char) (v >> (8 * i));
}

static void le64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char) (v >> (8 * i));
}

static uint32_t get32(const unsigned char *p)
{
	uint32_t v = 0;

	for (int i = 3; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static uint64_t get64(const unsigned char *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

/* ---- the writer ---- */

typedef struct {
	char type;
	uint32_t mode;
	char *name;
	size_t name_len;
	char *link;		/* 'l' */
	size_t link_len;
	char *src;		/* 'f' */
	bool follow;		/* 'f': src named by the caller, may be a symlink */
	uint64_t size;		/* 'f', 'c' */
	uint8_t sha[STORM_BUNDLE_SHA256];	/* 'c' */
} entry_t;

struct storm_bundle {
	entry_t *e;
	size_t n, cap;
	table_t names;		/* name -> index in e */
	uint64_t bytes;
	uint64_t skipped;
};

storm_bundle_t *storm_bundle_new(void)
{
	storm_bundle_t *b = calloc(1, sizeof(*b));

	if (b)
		b->bytes = STORM_BUNDLE_HDR;
	return b;
}

static void entry_free(entry_t *e)
{
	free(e->name);
	free(e->link);
	free(e->src);
}

void storm_bundle_free(storm_bundle_t *b)
{
	if (!b)
		return;
	for (size_t i = 0; i < b->n; i++)
		entry_free(&b->e[i]);
	free(b->e);
	free(b->names.s);
	free(b);
}

uint64_t storm_bundle_size(const storm_bundle_t *b)
{
	return b->bytes;
}

uint64_t storm_bundle_entries(const storm_bundle_t *b)
{
	return b->n;
}

uint64_t storm_bundle_skipped(const storm_bundle_t *b)
{
	return b->skipped;
}

/* Undo a failed add: the entries it pushed go, and the name table is
 * rebuilt in place (it holds fewer names than before, so it cannot need
 * memory). */
static void rollback(storm_bundle_t *b, size_t n0)
{
	while (b->n > n0)
		entry_free(&b->e[--b->n]);
	if (b->names.cap)
		memset(b->names.s, 0, b->names.cap * sizeof(*b->names.s));
	b->names.n = 0;
	for (size_t i = 0; i < b->n; i++)
		tab_put(&b->names, b->e[i].name, b->e[i].name_len, i);
}

static int push(storm_bundle_t *b, const entry_t *proto, const char *name,
		size_t name_len, char *err, size_t errlen)
{
	entry_t e = *proto;
	uint64_t add = STORM_BUNDLE_ENTRY_HDR + name_len + e.link_len +
		       payload(e.type, e.size);

	e.name_len = name_len;
	if (b->n >= STORM_BUNDLE_MAX_ENTRIES)
		return fail(err, errlen, "%.*s: more than %d entries in one bundle",
			    (int) name_len, name, STORM_BUNDLE_MAX_ENTRIES);
	if (e.size > UINT64_MAX / 2 || add > UINT64_MAX - b->bytes)
		return fail(err, errlen, "%.*s: bundle too large",
			    (int) name_len, name);
	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 64;
		entry_t *ne = realloc(b->e, cap * sizeof(*ne));

		if (!ne)
			goto nomem;
		b->e = ne;
		b->cap = cap;
	}
	e.name = strndup(name, name_len);
	e.link = e.link ? strndup(e.link, e.link_len) : NULL;
	e.src = e.src ? strdup(e.src) : NULL;
	if (!e.name || (proto->link && !e.link) || (proto->src && !e.src) ||
	    tab_put(&b->names, e.name, name_len, b->n)) {
		entry_free(&e);
		goto nomem;
	}
	b->e[b->n++] = e;
	b->bytes += add;
	return 0;
nomem:
	return fail(err, errlen, "%.*s: %s", (int) name_len, name,
		    strerror(ENOMEM));
}

static int add_parents(storm_bundle_t *b, const char *name, char *err,
		       size_t errlen)
{
	const entry_t dir = { .type = 'd', .mode = 0755 };
	const char *slash;
	size_t idx;

	for (slash = strchr(name, '/'); slash; slash = strchr(slash + 1, '/')) {
		size_t len = (size_t) (slash - name);

		if (!tab_get(&b->names, name, len, &idx)) {
			if (push(b, &dir, name, len, err, errlen))
				return -1;
		} else if (b->e[idx].type != 'd') {
			return fail(err, errlen,
				    "%.*s: already in the bundle as a %s, not a directory",
				    (int) len, name, kind(b->e[idx].type));
		}
	}
	return 0;
}

static char *join(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	char *p = malloc(la + lb + 2);

	if (p) {
		memcpy(p, a, la);
		p[la] = '/';
		memcpy(p + la + 1, b, lb + 1);
	}
	return p;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

static int add_node(storm_bundle_t *b, const char *src, const char *name,
		    const struct stat *st, bool follow, char *err,
		    size_t errlen);

/* What is in the directory src, sorted, under name. */
static int add_tree(storm_bundle_t *b, const char *src, const char *name,
		    char *err, size_t errlen)
{
	char **names = NULL;
	size_t n = 0, cap = 0, i;
	struct dirent *de;
	DIR *d;
	int rc = -1;

	if (!(d = opendir(src)))
		return fail(err, errlen, "%s: %s", src, strerror(errno));
	for (;;) {
		errno = 0;
		if (!(de = readdir(d))) {
			if (errno) {
				fail(err, errlen, "%s: %s", src, strerror(errno));
				goto done;
			}
			break;
		}
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (n == cap) {
			char **nn;

			cap = cap ? cap * 2 : 32;
			if (!(nn = realloc(names, cap * sizeof(*nn))))
				goto nomem;
			names = nn;
		}
		if (!(names[n] = strdup(de->d_name)))
			goto nomem;
		n++;
	}
	closedir(d);
	d = NULL;
	qsort(names, n, sizeof(*names), cmp_str);
	for (i = 0; i < n; i++) {
		char *csrc = join(src, names[i]), *cname = join(name, names[i]);
		struct stat cst;
		int r;

		if (!csrc || !cname) {
			r = fail(err, errlen, "%s: %s", src, strerror(ENOMEM));
		} else if (!name_ok(cname, strlen(cname))) {
			r = fail(err, errlen, "%s: its name cannot travel in a bundle",
				 csrc);
		} else if (lstat(csrc, &cst)) {
			r = fail(err, errlen, "%s: %s", csrc, strerror(errno));
		} else if (!S_ISREG(cst.st_mode) && !S_ISDIR(cst.st_mode) &&
			   !S_ISLNK(cst.st_mode)) {
			b->skipped++;
			r = 0;
		} else {
			r = add_node(b, csrc, cname, &cst, false, err, errlen);
		}
		free(csrc);
		free(cname);
		if (r)
			goto done;
	}
	rc = 0;
	goto done;
nomem:
	fail(err, errlen, "%s: %s", src, strerror(ENOMEM));
done:
	if (d)
		closedir(d);
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return rc;
}

static int add_node(storm_bundle_t *b, const char *src, const char *name,
		    const struct stat *st, bool follow, char *err,
		    size_t errlen)
{
	char type = S_ISDIR(st->st_mode) ? 'd' : S_ISLNK(st->st_mode) ? 'l' : 'f';
	entry_t e = { .type = type, .mode = (uint32_t) (st->st_mode & 0777) };
	char target[STORM_BUNDLE_MAX_NAME + 1];
	size_t nlen = strlen(name), idx;
	bool have = tab_get(&b->names, name, nlen, &idx);
	ssize_t r;

	if (have && !same_kind(b->e[idx].type, type))
		return fail(err, errlen, "%s: '%s' is already in the bundle as a %s",
			    src, name, kind(b->e[idx].type));
	switch (type) {
	case 'f':
		if (have)
			return 0;
		e.src = (char *) src;
		e.follow = follow;
		e.size = (uint64_t) st->st_size;
		return push(b, &e, name, nlen, err, errlen);
	case 'l':
		if (have)
			return 0;
		if ((r = readlink(src, target, sizeof(target))) < 0)
			return fail(err, errlen, "%s: %s", src, strerror(errno));
		if (r == 0 || (size_t) r > STORM_BUNDLE_MAX_NAME ||
		    memchr(target, '\0', (size_t) r))
			return fail(err, errlen, "%s: its target cannot travel in a bundle",
				    src);
		e.mode = 0777;
		e.link = target;
		e.link_len = (size_t) r;
		return push(b, &e, name, nlen, err, errlen);
	default:
		if (!have && push(b, &e, name, nlen, err, errlen))
			return -1;
		return add_tree(b, src, name, err, errlen);
	}
}

int storm_bundle_add(storm_bundle_t *b, const char *src, const char *name,
		     bool follow, char *err, size_t errlen)
{
	size_t n0 = b->n;
	uint64_t bytes0 = b->bytes, skipped0 = b->skipped;
	struct stat st;

	if (!name_ok(name, strlen(name)))
		return fail(err, errlen,
			    "%s: bad bundle name '%s' (relative, no empty, '.' or '..' part)",
			    src, name);
	if ((follow ? stat(src, &st) : lstat(src, &st)))
		return fail(err, errlen, "%s: %s", src, strerror(errno));
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode) && !S_ISLNK(st.st_mode))
		return fail(err, errlen, "%s: not a file, directory or symlink", src);
	if (add_parents(b, name, err, errlen) ||
	    add_node(b, src, name, &st, follow, err, errlen)) {
		rollback(b, n0);
		b->bytes = bytes0;
		b->skipped = skipped0;
		return -1;
	}
	return 0;
}

int storm_bundle_add_ref(storm_bundle_t *b, const char *name, unsigned mode,
			 uint64_t size, const uint8_t sha256[STORM_BUNDLE_SHA256],
			 char *err, size_t errlen)
{
	entry_t e = { .type = 'c', .mode = mode & 0777, .size = size };
	size_t n0 = b->n, nlen = strlen(name), idx;
	uint64_t bytes0 = b->bytes;

	if (!name_ok(name, nlen))
		return fail(err, errlen,
			    "bad bundle name '%s' (relative, no empty, '.' or '..' part)",
			    name);
	memcpy(e.sha, sha256, STORM_BUNDLE_SHA256);
	if (add_parents(b, name, err, errlen))
		goto undo;
	if (tab_get(&b->names, name, nlen, &idx)) {
		if (same_kind(b->e[idx].type, 'c'))
			return 0;	/* no parent was missing: nothing to undo */
		fail(err, errlen, "'%s' is already in the bundle as a %s", name,
		     kind(b->e[idx].type));
		goto undo;
	}
	if (!push(b, &e, name, nlen, err, errlen))
		return 0;
undo:
	rollback(b, n0);
	b->bytes = bytes0;
	return -1;
}

storm_bundle_t *storm_bundle_refs(const storm_bundle_t *b,
				  storm_bundle_hash_f hash, void *arg, char *err,
				  size_t errlen)
{
	storm_bundle_t *r = storm_bundle_new();

	if (!r) {
		fail(err, errlen, "bundle: %s", strerror(ENOMEM));
		return NULL;
	}
	r->skipped = b->skipped;
	for (size_t i = 0; i < b->n; i++) {
		entry_t e = b->e[i];
		int h = 0;

		if (e.type == 'f') {
			h = hash(arg, e.src, e.follow, e.size, e.sha, err, errlen);
			if (h < 0)
				goto fail;
			if (h == 0) {
				e.type = 'c';
				e.src = NULL;	/* nothing to read when written */
			}
		}
		if (push(r, &e, e.name, e.name_len, err, errlen))
			goto fail;
	}
	return r;
fail:
	storm_bundle_free(r);
	return NULL;
}

typedef struct {
	int fd;
	unsigned char *buf;
	size_t len;
} out_t;

static int write_all(int fd, const unsigned char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n > (1u << 30) ? (1u << 30) : n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (w == 0)
				errno = EIO;
			return -1;
		}
		p += w;
		n -= (size_t) w;
	}
	return 0;
}

static int out_flush(out_t *o)
{
	int rc = write_all(o->fd, o->buf, o->len);

	o->len = 0;
	return rc;
}

static int out_put(out_t *o, const void *p, size_t n)
{
	const unsigned char *c = p;

	while (n) {
		size_t k = OUT_BUF - o->len < n ? OUT_BUF - o->len : n;

		memcpy(o->buf + o->len, c, k);
		o->len += k;
		c += k;
		n -= k;
		if (o->len == OUT_BUF && out_flush(o))
			return -1;
	}
	return 0;
}

/* A file's data, read straight into the batch: exactly the size it had
 * when added, or the bundle would not be the size announced. */
static int put_file(out_t *o, const entry_t *e, char *err, size_t errlen)
{
	int in = open(e->src, O_RDONLY | O_CLOEXEC | (e->follow ? 0 : O_NOFOLLOW));
	uint64_t left = e->size;
	struct stat st;
	char extra;
	ssize_t r;
	int rc = -1;

	if (in < 0 && errno == ELOOP)	/* a file in a tree became a symlink */
		return fail(err, errlen, "%s: changed while being sent", e->src);
	if (in < 0)
		return fail(err, errlen, "%s: %s", e->src, strerror(errno));
	if (fstat(in, &st)) {
		fail(err, errlen, "%s: %s", e->src, strerror(errno));
		goto done;
	}
	if (!S_ISREG(st.st_mode) || (uint64_t) st.st_size != e->size)
		goto changed;
	while (left) {
		size_t want = OUT_BUF - o->len;

		if (want > left)
			want = (size_t) left;
		r = read(in, o->buf + o->len, want);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			fail(err, errlen, "%s: %s", e->src, strerror(errno));
			goto done;
		}
		if (r == 0)
			goto changed;
		o->len += (size_t) r;
		left -= (uint64_t) r;
		if (o->len == OUT_BUF && out_flush(o)) {
			fail(err, errlen, "bundle: write: %s", strerror(errno));
			goto done;
		}
	}
	while ((r = read(in, &extra, 1)) < 0 && errno == EINTR)
		;
	if (r != 0)
		goto changed;
	rc = 0;
	goto done;
changed:
	fail(err, errlen, "%s: changed while being sent", e->src);
done:
	close(in);
	return rc;
}

int storm_bundle_write(storm_bundle_t *b, int fd, char *err, size_t errlen)
{
	out_t o = { fd, malloc(OUT_BUF), 0 };
	unsigned char h[STORM_BUNDLE_ENTRY_HDR];
	int rc = -1;

	if (!o.buf)
		return fail(err, errlen, "bundle: %s", strerror(ENOMEM));
	memcpy(h, STORM_BUNDLE_MAGIC, 8);
	le64(h + 8, b->n);
	if (out_put(&o, h, STORM_BUNDLE_HDR))
		goto werr;
	for (size_t i = 0; i < b->n; i++) {
		const entry_t *e = &b->e[i];

		memset(h, 0, sizeof(h));
		h[0] = (unsigned char) e->type;
		le32(h + 4, e->mode);
		le32(h + 8, (uint32_t) e->name_len);
		le32(h + 12, (uint32_t) e->link_len);
		le64(h + 16, e->size);
		if (out_put(&o, h, sizeof(h)) ||
		    out_put(&o, e->name, e->name_len) ||
		    (e->link && out_put(&o, e->link, e->link_len)))
			goto werr;
		if (e->type == 'c' && out_put(&o, e->sha, sizeof(e->sha)))
			goto werr;
		if (e->type == 'f' && put_file(&o, e, err, errlen))
			goto done;
	}
	if (out_flush(&o))
		goto werr;
	rc = 0;
	goto done;
werr:
	fail(err, errlen, "bundle: write: %s", strerror(errno));
done:
	free(o.buf);
	return rc;
}

/* ---- the extractor ---- */

typedef struct {
	char type;
	uint32_t mode;
	const char *name;
	size_t name_len;
	const char *link;
	size_t link_len;
	const unsigned char *data;
	uint64_t size;
} rec_t;

/* A name as an error shows it: a log line stays one line. */
#define SHOW(r) shown(r, nb)
static const char *shown(const rec_t *r, char *nb)
{
	size_t n = r->name_len > SHOWN_NAME ? SHOWN_NAME : r->name_len;

	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char) r->name[i];

		nb[i] = ch < 0x20 || ch == 0x7f ? '?' : (char) ch;
	}
	nb[n] = '\0';
	return nb;
}

/* One entry at *off, every length against len. */
static int parse(const unsigned char *p, size_t len, size_t *off, uint64_t i,
		 rec_t *r, char *err, size_t errlen)
{
	char nb[SHOWN_NAME + 1];
	const unsigned char *h = p + *off;
	uint32_t name_len, link_len;

	if (len - *off < STORM_BUNDLE_ENTRY_HDR)
		return fail(err, errlen, "entry %" PRIu64 ": truncated header", i);
	r->type = (char) h[0];
	r->mode = get32(h + 4);
	name_len = get32(h + 8);
	link_len = get32(h + 12);
	r->size = get64(h + 16);
	*off += STORM_BUNDLE_ENTRY_HDR;
	if (h[1] || h[2] || h[3])
		return fail(err, errlen, "entry %" PRIu64 ": padding not zero", i);
	if (r->type != 'd' && r->type != 'f' && r->type != 'l' && r->type != 'c')
		return fail(err, errlen, "entry %" PRIu64 ": unknown type 0x%02x",
			    i, h[0]);
	if (name_len == 0 || name_len > STORM_BUNDLE_MAX_NAME)
		return fail(err, errlen, "entry %" PRIu64 ": name length %" PRIu32
			    " not in 1..%d", i, name_len, STORM_BUNDLE_MAX_NAME);
	if (name_len > len - *off)
		return fail(err, errlen, "entry %" PRIu64 ": name truncated", i);
	r->name = (const char *) p + *off;
	r->name_len = name_len;
	*off += name_len;
	if (!name_ok(r->name, r->name_len))
		return fail(err, errlen, "entry %" PRIu64 " '%s': bad name "
			    "(relative, no empty, '.' or '..' part, no NUL or newline)",
			    i, SHOW(r));
	if (r->type == 'l' ? (link_len == 0 || link_len > STORM_BUNDLE_MAX_NAME)
			   : link_len != 0)
		return fail(err, errlen, "entry %" PRIu64 " '%s': bad link length %"
			    PRIu32, i, SHOW(r), link_len);
	if ((r->type == 'd' || r->type == 'l') && r->size)
		return fail(err, errlen, "entry %" PRIu64 " '%s': a %s with data",
			    i, SHOW(r), kind(r->type));
	if (link_len > len - *off)
		return fail(err, errlen, "entry %" PRIu64 " '%s': link truncated",
			    i, SHOW(r));
	r->link = (const char *) p + *off;
	r->link_len = link_len;
	*off += link_len;
	if (memchr(r->link, '\0', link_len))
		return fail(err, errlen, "entry %" PRIu64 " '%s': NUL in link target",
			    i, SHOW(r));
	if (payload(r->type, r->size) > len - *off)
		return fail(err, errlen, "entry %" PRIu64 " '%s': %s truncated",
			    i, SHOW(r), r->type == 'c' ? "content hash" : "data");
	r->data = p + *off;
	*off += (size_t) payload(r->type, r->size);
	return 0;
}

/* Where a name's parent is: its length, 0 for the top. */
static size_t parent_len(const rec_t *r)
{
	size_t i = r->name_len;

	while (i > 0 && r->name[i - 1] != '/')
		i--;
	return i ? i - 1 : 0;
}

/* The stream as a whole: every entry sound, every parent a directory
 * earlier in it, no name twice.  Nothing is created before this holds. */
static int check(const unsigned char *p, size_t len, uint64_t count,
		 bool refs, size_t *ndirs, char *err, size_t errlen)
{
	char nb[SHOWN_NAME + 1];
	table_t seen = { NULL, 0, 0 };
	size_t off = STORM_BUNDLE_HDR, v;
	rec_t r;
	int rc = -1;

	*ndirs = 0;
	for (uint64_t i = 0; i < count; i++) {
		size_t pl;

		if (parse(p, len, &off, i, &r, err, errlen))
			goto done;
		if (r.type == 'c' && !refs) {
			fail(err, errlen, "entry %" PRIu64 " '%s': a cached file, "
			     "and no cache here to take it from", i, SHOW(&r));
			goto done;
		}
		pl = parent_len(&r);
		if (pl && (!tab_get(&seen, r.name, pl, &v) || v != 'd')) {
			fail(err, errlen, "entry %" PRIu64 " '%s': its parent is "
			     "not a directory earlier in the bundle", i, SHOW(&r));
			goto done;
		}
		if (tab_get(&seen, r.name, r.name_len, &v)) {
			fail(err, errlen, "entry %" PRIu64 " '%s': twice in the bundle",
			     i, SHOW(&r));
			goto done;
		}
		if (tab_put(&seen, r.name, r.name_len, (size_t) r.type)) {
			fail(err, errlen, "bundle: %s", strerror(ENOMEM));
			goto done;
		}
		if (r.type == 'd')
			(*ndirs)++;
	}
	if (off != len) {
		fail(err, errlen, "%zu bytes after the last entry", len - off);
		goto done;
	}
	rc = 0;
done:
	free(seen.s);
	return rc;
}

/* An open directory extracted entries go into; consecutive entries
 * mostly share one, so it is kept. */
typedef struct {
	int root;
	int fd;			/* root itself when len is 0 */
	const char *name;
	size_t len;
} cwd_t;

static void cwd_set(cwd_t *c, int fd, const char *name, size_t len)
{
	if (c->fd != c->root)
		close(c->fd);
	c->fd = fd;
	c->name = name;
	c->len = len;
}

/* The directory name[0..len), opened one component at a time from root,
 * none of them followed: a symlink put in a directory's place fails. */
static int cwd_open(cwd_t *c, const char *name, size_t len)
{
	char comp[STORM_BUNDLE_MAX_NAME + 1];
	size_t i = 0;
	int cur = c->root;

	if (len == c->len && !memcmp(name, c->name, len))
		return c->fd;
	while (i < len) {
		size_t j = i;
		int fd;

		while (j < len && name[j] != '/')
			j++;
		memcpy(comp, name + i, j - i);
		comp[j - i] = '\0';
		fd = openat(cur, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
			    O_CLOEXEC);
		if (cur != c->root)
			close(cur);
		if (fd < 0)
			return -1;
		cur = fd;
		i = j + 1;
	}
	cwd_set(c, cur, name, len);
	return cur;
}

/* An entry's directory, opened (kept in c), and its last component. */
static int parent_of(cwd_t *c, const rec_t *r, char *base)
{
	size_t pl = parent_len(r), bl = r->name_len - (pl ? pl + 1 : 0);
	int dir = cwd_open(c, r->name, pl);

	memcpy(base, r->name + r->name_len - bl, bl);
	base[bl] = '\0';
	return dir;
}

static int make(cwd_t *c, const rec_t *r, const storm_bundle_ops_t *ops,
		void *arg)
{
	char base[STORM_BUNDLE_MAX_NAME + 1], target[STORM_BUNDLE_MAX_NAME + 1];
	int dir = parent_of(c, r, base), fd, k;

	if (dir < 0)
		return -1;
	switch (r->type) {
	case 'd':
		/* Ours to fill whatever the umask; its own mode comes last.
		 * What follows is mostly inside it, so it becomes the kept
		 * directory. */
		if (mkdirat(dir, base, 0700))
			return -1;
		fd = openat(dir, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
			    O_CLOEXEC);
		if (fd < 0)
			return -1;
		if (fchmod(fd, 0700)) {
			close(fd);
			return -1;
		}
		cwd_set(c, fd, r->name, r->name_len);
		return 0;
	case 'l':
		memcpy(target, r->link, r->link_len);
		target[r->link_len] = '\0';
		return symlinkat(target, dir, base);
	default:
		if (ops && ops->file &&
		    (k = ops->file(arg, dir, base, r->data, r->size,
				   r->mode & 0777)) <= 0)
			return k;
		fd = openat(dir, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
			    O_CLOEXEC, 0600);
		if (fd < 0)
			return -1;
		if (write_all(fd, r->data, (size_t) r->size) ||
		    fchmod(fd, r->mode & 0777)) {
			int e = errno;

			close(fd);
			errno = e;
			return -1;
		}
		return close(fd);
	}
}

/* A 'c' entry, placed by the caller's ref(): 0, -1 with err, or
 * STORM_BUNDLE_ABSENT. */
static int place_ref(cwd_t *c, const rec_t *r, uint64_t i,
		     const storm_bundle_ops_t *ops, void *arg, char *err,
		     size_t errlen)
{
	char nb[SHOWN_NAME + 1], base[STORM_BUNDLE_MAX_NAME + 1], why[256];
	int dir = parent_of(c, r, base), rc;

	if (dir < 0)
		return fail(err, errlen, "entry %" PRIu64 " '%s': %s", i, SHOW(r),
			    strerror(errno));
	why[0] = '\0';
	rc = ops->ref(arg, dir, base, r->data, r->size, r->mode & 0777, why,
		      sizeof(why));
	if (rc == 0 || rc == STORM_BUNDLE_ABSENT)
		return rc;
	return fail(err, errlen, "entry %" PRIu64 " '%s': %s", i, SHOW(r),
		    why[0] ? why : "cannot place the cached file");
}

/* A directory's own mode, once all in it is there. */
static int set_dir_mode(cwd_t *c, const rec_t *r)
{
	size_t pl = parent_len(r), bl = r->name_len - (pl ? pl + 1 : 0);
	char base[STORM_BUNDLE_MAX_NAME + 1];
	int dir = cwd_open(c, r->name, pl), fd, rc;

	if (dir < 0)
		return -1;
	memcpy(base, r->name + r->name_len - bl, bl);
	base[bl] = '\0';
	fd = openat(dir, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	rc = fchmod(fd, r->mode & 0777);
	close(fd);
	return rc;
}

int storm_bundle_extract_ex(const void *buf, size_t len, int dirfd,
			    const storm_bundle_ops_t *ops, void *arg, char *err,
			    size_t errlen)
{
	char nb[SHOWN_NAME + 1], first[SHOWN_NAME + 1] = "";
	const unsigned char *p = buf;
	cwd_t c = { dirfd, dirfd, "", 0 };
	size_t off = STORM_BUNDLE_HDR, ndirs, nd = 0, *dirs = NULL;
	uint64_t count, i, absent = 0;
	rec_t r;
	int rc = -1;

	if (len < STORM_BUNDLE_HDR)
		return fail(err, errlen, "truncated bundle header");
	if (memcmp(p, STORM_BUNDLE_MAGIC, 8))
		return fail(err, errlen, "not a bundle (bad magic)");
	count = get64(p + 8);
	if (count > STORM_BUNDLE_MAX_ENTRIES)
		return fail(err, errlen, "%" PRIu64 " entries, more than %d",
			    count, STORM_BUNDLE_MAX_ENTRIES);
	if (count > (len - STORM_BUNDLE_HDR) / STORM_BUNDLE_ENTRY_HDR)
		return fail(err, errlen, "%" PRIu64 " entries cannot fit in %zu bytes",
			    count, len);
	if (check(p, len, count, ops && ops->ref, &ndirs, err, errlen))
		return -1;
	if (ndirs && !(dirs = malloc(ndirs * sizeof(*dirs))))
		return fail(err, errlen, "bundle: %s", strerror(ENOMEM));
	for (i = 0; i < count; i++) {
		size_t at = off;

		if (parse(p, len, &off, i, &r, err, errlen))
			goto done;
		if (r.type == 'c') {
			int st = place_ref(&c, &r, i, ops, arg, err, errlen);

			if (st == STORM_BUNDLE_ABSENT) {
				if (!absent++)
					snprintf(first, sizeof(first), "%s",
						 SHOW(&r));
			} else if (st) {
				goto done;
			}
			continue;
		}
		if (make(&c, &r, ops, arg)) {
			fail(err, errlen, "entry %" PRIu64 " '%s': %s", i, SHOW(&r),
			     strerror(errno));
			goto done;
		}
		if (r.type == 'd')
			dirs[nd++] = at;
	}
	if (absent) {
		/* the directories stay open for the holes to be filled */
		if (absent == 1)
			fail(err, errlen, "'%s': not in this node's cache", first);
		else
			fail(err, errlen, "'%s' and %" PRIu64 " more: not in this "
			     "node's cache", first, absent - 1);
		rc = STORM_BUNDLE_ABSENT;
		goto done;
	}
	/* Deepest first: a directory's mode may shut out its own owner, and
	 * its descendants come after it in the stream. */
	while (nd--) {
		off = dirs[nd];
		if (parse(p, len, &off, nd, &r, err, errlen))
			goto done;
		if (set_dir_mode(&c, &r)) {
			fail(err, errlen, "'%s': mode: %s", SHOW(&r),
			     strerror(errno));
			goto done;
		}
	}
	rc = 0;
done:
	cwd_set(&c, dirfd, "", 0);
	free(dirs);
	return rc;
}

int storm_bundle_extract(const void *buf, size_t len, int dirfd, char *err,
			 size_t errlen)
{
	return storm_bundle_extract_ex(buf, len, dirfd, NULL, NULL, err,
				       errlen);
}
