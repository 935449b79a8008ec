/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * nm_bcast_absent.c - the relay's union of what nodes lack; see
 * nm_bcast_absent.h.  Merged from the fabric's progress thread: a short
 * lock and a copy, nothing that blocks.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "nm_bcast_absent.h"

#define SLOTS 16

static struct {
	pthread_mutex_t lock;
	struct slot {
		uint64_t key;	/* 0: free */
		uint64_t age;
		uint8_t *bits;
		size_t len;
		int reports;
	} s[SLOTS];
	uint64_t clock;
} absent = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* key's slot, or a new one (the oldest, if none is free); caller holds
 * the lock. */
static struct slot *slot_of(uint64_t key)
{
	struct slot *old = &absent.s[0];

	for (int i = 0; i < SLOTS; i++) {
		if (absent.s[i].key == key)
			return &absent.s[i];
		if (absent.s[i].age < old->age)
			old = &absent.s[i];
	}
	free(old->bits);
	memset(old, 0, sizeof(*old));
	old->key = key;
	return old;
}

extern void nm_bcast_absent_merge(uint64_t key, const void *bits, size_t len)
{
	const uint8_t *b = bits;
	struct slot *s;

	if (!key || len > NM_BCAST_ABSENT_MAX_BYTES)
		return;
	pthread_mutex_lock(&absent.lock);
	s = slot_of(key);
	s->age = ++absent.clock;
	if (len > s->len) {
		uint8_t *n = realloc(s->bits, len);

		if (!n) {	/* the union loses this node: srun sends all */
			free(s->bits);
			s->bits = NULL;
			s->len = 0;
			s->reports = -1;
			goto out;
		}
		memset(n + s->len, 0, len - s->len);
		s->bits = n;
		s->len = len;
	}
	if (s->reports >= 0) {
		for (size_t i = 0; i < len; i++)
			s->bits[i] |= b[i];
		s->reports++;
	}
out:
	pthread_mutex_unlock(&absent.lock);
}

extern int nm_bcast_absent_reports(uint64_t key)
{
	int n = 0;

	pthread_mutex_lock(&absent.lock);
	for (int i = 0; i < SLOTS; i++)
		if (key && absent.s[i].key == key)
			n = absent.s[i].reports;
	pthread_mutex_unlock(&absent.lock);
	return n;
}

extern uint8_t *nm_bcast_absent_take(uint64_t key, size_t *len)
{
	uint8_t *bits = NULL;

	*len = 0;
	pthread_mutex_lock(&absent.lock);
	for (int i = 0; i < SLOTS; i++)
		if (key && absent.s[i].key == key) {
			if (absent.s[i].reports > 0) {
				bits = absent.s[i].bits;
				*len = absent.s[i].len;
			} else {
				free(absent.s[i].bits);
			}
			memset(&absent.s[i], 0, sizeof(absent.s[i]));
		}
	pthread_mutex_unlock(&absent.lock);
	return bits;
}

extern int nm_bcast_absent_set(uint8_t **bits, size_t *len, uint64_t ordinal)
{
	size_t need = (size_t) (ordinal / 8) + 1;

	if (ordinal / 8 >= NM_BCAST_ABSENT_MAX_BYTES)
		return -1;
	if (need > *len) {
		uint8_t *n = realloc(*bits, need);

		if (!n)
			return -1;
		memset(n + *len, 0, need - *len);
		*bits = n;
		*len = need;
	}
	(*bits)[ordinal / 8] |= (uint8_t) (1u << (ordinal % 8));
	return 0;
}
