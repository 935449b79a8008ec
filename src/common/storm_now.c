/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * storm_now.c - the MM's last strobe in a mapped file (storm_now.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storm_clock.h"
#include "storm_now.h"

#define NOW_MAGIC 0x314e5753u	/* "SWN1" */
#define NOW_WORDS (sizeof(storm_gang_strobe_t) / sizeof(uint64_t))
#define NOW_TRIES 1000

_Static_assert(sizeof(storm_gang_strobe_t) % sizeof(uint64_t) == 0,
	       "the strobe is copied as 64-bit words");

/* The file's one page.  seq is odd while the MM writes; the payload is
 * copied word by word with atomic stores and loads, so a reader racing the
 * writer reads torn words it then throws away, never undefined ones. */
typedef struct now_page {
	uint32_t magic;
	uint32_t size;		/* sizeof(now_page_t): the layout */
	uint64_t seq;
	uint64_t quanta;
	uint64_t strobe[NOW_WORDS];
} now_page_t;

/* ------------------------------------------------------------ writer */

extern int storm_now_open(storm_now_writer_t *w, const char *path)
{
	size_t len = strlen(path) + 5;
	char *tmp = malloc(len);
	now_page_t *p;
	int fd, rc;

	if (!tmp)
		return -ENOMEM;
	snprintf(tmp, len, "%s.tmp", path);
	fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		rc = -errno;
		free(tmp);
		return rc;
	}
	/* the mode whatever the umask: readers are other users' stormctl */
	if (fchmod(fd, 0644) || ftruncate(fd, sizeof(now_page_t)))
		goto fail;
	p = mmap(NULL, sizeof(now_page_t), PROT_READ | PROT_WRITE, MAP_SHARED,
		 fd, 0);
	if (p == MAP_FAILED)
		goto fail;
	p->size = sizeof(now_page_t);
	__atomic_store_n(&p->magic, NOW_MAGIC, __ATOMIC_RELEASE);
	if (rename(tmp, path)) {
		rc = -errno;
		munmap(p, sizeof(now_page_t));
		unlink(tmp);
		goto out;
	}
	w->fd = fd;
	w->page = p;
	free(tmp);
	return 0;
fail:
	rc = -errno;
	unlink(tmp);
out:
	close(fd);
	free(tmp);
	return rc;
}

extern void storm_now_publish(storm_now_writer_t *w,
			      const storm_gang_strobe_t *s, uint64_t quanta)
{
	now_page_t *p = w->page;
	uint64_t words[NOW_WORDS], seq;

	if (!p)
		return;
	memcpy(words, s, sizeof(words));
	seq = __atomic_load_n(&p->seq, __ATOMIC_RELAXED);
	__atomic_store_n(&p->seq, seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&p->quanta, quanta, __ATOMIC_RELAXED);
	for (size_t i = 0; i < NOW_WORDS; i++)
		__atomic_store_n(&p->strobe[i], words[i], __ATOMIC_RELAXED);
	__atomic_store_n(&p->seq, seq + 2, __ATOMIC_RELEASE);
}

extern void storm_now_close(storm_now_writer_t *w)
{
	if (w->page)
		munmap(w->page, sizeof(now_page_t));
	if (w->fd >= 0)
		close(w->fd);
	w->page = NULL;
	w->fd = -1;
}

/* ------------------------------------------------------------ reader */

/* One consistent copy of the page; -EAGAIN when none could be had. */
static int read_page(const now_page_t *p, storm_now_t *out)
{
	uint64_t words[NOW_WORDS];

	for (int t = 0; t < NOW_TRIES; t++) {
		uint64_t s1 = __atomic_load_n(&p->seq, __ATOMIC_ACQUIRE), s2;

		if (!s1)
			return -EAGAIN;	/* nothing published yet */
		if (s1 & 1) {
			/* the writer is a real-time thread: let it finish */
			sched_yield();
			continue;
		}
		out->quanta = __atomic_load_n(&p->quanta, __ATOMIC_RELAXED);
		for (size_t i = 0; i < NOW_WORDS; i++)
			words[i] = __atomic_load_n(&p->strobe[i],
						   __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		s2 = __atomic_load_n(&p->seq, __ATOMIC_RELAXED);
		if (s1 == s2) {
			memcpy(&out->strobe, words, sizeof(words));
			out->seq = s1 / 2;
			return 0;
		}
	}
	return -EAGAIN;
}

extern int storm_now_read(const char *path, storm_now_t *out)
{
	struct stat sb;
	const now_page_t *p;
	int fd, rc;

	memset(out, 0, sizeof(*out));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &sb)) {
		rc = -errno;
		close(fd);
		return rc;
	}
	if (!S_ISREG(sb.st_mode) || sb.st_size != (off_t) sizeof(now_page_t)) {
		close(fd);
		return -EINVAL;
	}
	p = mmap(NULL, sizeof(now_page_t), PROT_READ, MAP_SHARED, fd, 0);
	rc = p == MAP_FAILED ? -errno : 0;
	close(fd);
	if (rc)
		return rc;
	if (__atomic_load_n(&p->magic, __ATOMIC_ACQUIRE) != NOW_MAGIC ||
	    p->size != sizeof(now_page_t))
		rc = -EINVAL;
	else
		rc = read_page(p, out);
	munmap((void *) p, sizeof(now_page_t));
	if (!rc && out->strobe.magic != STORM_GANG_MAGIC)
		rc = -EINVAL;
	return rc;
}

extern void storm_now_at(const storm_now_t *n, uint64_t t_ns,
			 storm_now_pos_t *pos)
{
	const storm_gang_strobe_t *s = &n->strobe;
	uint64_t q = s->quantum_us * 1000ULL, next_in = s->next_in_us * 1000ULL;
	uint64_t base = s->at_ns ? s->at_ns : s->sent_ns, end;
	uint32_t nslots = s->nslots ? s->nslots : 1;
	uint32_t nq = s->nquanta ? s->nquanta : 1, k = 0;

	/* as nm_gang.c arms them: the switches after its own only when the
	 * strobe covers several quanta of several slots */
	if (nq > 1 && nslots > 1 && q && t_ns >= base + next_in) {
		uint64_t j = 1 + (t_ns - base - next_in) / q;

		k = j < nq ? (uint32_t) j : nq - 1;
	}
	end = storm_clock_switch_at(base, next_in, q, nq);
	memset(pos, 0, sizeof(*pos));
	pos->nslots = nslots;
	pos->slot = (uint32_t) (((uint64_t) s->slot + k) % nslots);
	pos->k = k;
	pos->quantum = n->quanta + k;
	pos->since_ns = (int64_t) (t_ns - s->sent_ns);
	pos->stale = t_ns > end + STORM_NOW_STALE_NS;
}

extern int storm_now_fprint_json(FILE *fp, const storm_now_t *n,
				 const storm_now_pos_t *pos)
{
	const storm_gang_strobe_t *s = &n->strobe;

	return fprintf(fp, "{\"slot\": %" PRIu32 ", \"nslots\": %" PRIu32
		       ", \"quantum\": %" PRIu64 ", \"k\": %" PRIu32
		       ", \"span\": %" PRIu32 ", \"epoch\": %" PRIu64
		       ", \"mm_id\": %" PRIu64 ", \"quantum_us\": %" PRIu64
		       ", \"since_us\": %" PRId64 ", \"stale\": %s"
		       ", \"seq\": %" PRIu64 ", \"table_gen\": %" PRIu64 "}\n",
		       pos->slot, pos->nslots, pos->quantum, pos->k,
		       s->nquanta ? s->nquanta : 1, s->epoch, s->mm_id,
		       s->quantum_us, pos->since_ns / 1000,
		       pos->stale ? "true" : "false", n->seq,
		       s->table_gen) < 0 ? -1 : 0;
}
