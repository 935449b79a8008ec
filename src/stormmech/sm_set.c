/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sm_set.c - node sets as fixed bitmaps: any shape, cheap to copy into a
 * message header, same meaning on every node.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ctype.h>

#include "stormmech.h"

#define NW (STORM_MAX_RANKS / 64)

void storm_set_clear(storm_set_t *s)
{
	memset(s, 0, sizeof(*s));
}

int storm_set_add(storm_set_t *s, int r)
{
	if (r < 0 || r >= STORM_MAX_RANKS)
		return -EINVAL;
	s->bits[r / 64] |= 1ull << (r % 64);
	return 0;
}

int storm_set_remove(storm_set_t *s, int r)
{
	if (r < 0 || r >= STORM_MAX_RANKS)
		return -EINVAL;
	s->bits[r / 64] &= ~(1ull << (r % 64));
	return 0;
}

bool storm_set_has(const storm_set_t *s, int r)
{
	if (r < 0 || r >= STORM_MAX_RANKS)
		return false;
	return (s->bits[r / 64] >> (r % 64)) & 1;
}

int storm_set_count(const storm_set_t *s)
{
	int n = 0;
	for (int i = 0; i < NW; i++)
		n += __builtin_popcountll(s->bits[i]);
	return n;
}

int storm_set_next(const storm_set_t *s, int from)
{
	if (from < 0)
		from = 0;
	if (from >= STORM_MAX_RANKS)
		return -1;
	int w = from / 64;
	uint64_t m = s->bits[w] & (~0ull << (from % 64));
	for (;;) {
		if (m)
			return w * 64 + __builtin_ctzll(m);
		if (++w >= NW)
			return -1;
		m = s->bits[w];
	}
}

void storm_set_range(storm_set_t *s, int first, int last)
{
	if (first < 0)
		first = 0;
	if (last >= STORM_MAX_RANKS)
		last = STORM_MAX_RANKS - 1;
	for (int r = first; r <= last; r++)
		s->bits[r / 64] |= 1ull << (r % 64);
}

static int parse_num(const char **p, int *out)
{
	const char *q = *p;
	long v = 0;

	if (!isdigit((unsigned char)*q))
		return -EINVAL;
	while (isdigit((unsigned char)*q)) {
		v = v * 10 + (*q - '0');
		if (v >= STORM_MAX_RANKS)
			return -EINVAL;
		q++;
	}
	*p = q;
	*out = (int)v;
	return 0;
}

int storm_set_parse(storm_set_t *s, const char *str)
{
	storm_set_t t;
	const char *p = str;

	if (!s || !str)
		return -EINVAL;
	storm_set_clear(&t);
	while (*p == ' ')
		p++;
	if (!*p) {
		*s = t;
		return 0;
	}
	for (;;) {
		int a, b;
		while (*p == ' ')
			p++;
		if (parse_num(&p, &a))
			return -EINVAL;
		b = a;
		if (*p == '-') {
			p++;
			if (parse_num(&p, &b) || b < a)
				return -EINVAL;
		}
		storm_set_range(&t, a, b);
		while (*p == ' ')
			p++;
		if (!*p)
			break;
		if (*p != ',')
			return -EINVAL;
		p++;
	}
	*s = t;
	return 0;
}

int storm_set_format(const storm_set_t *s, char *buf, size_t len)
{
	size_t n = 0;
	int r = storm_set_next(s, 0);

	if (len)
		buf[0] = '\0';
	while (r >= 0) {
		int e = r;
		while (storm_set_has(s, e + 1))
			e++;
		char tmp[32];
		int k = (e == r) ? snprintf(tmp, sizeof(tmp), "%s%d", n ? "," : "", r)
				 : snprintf(tmp, sizeof(tmp), "%s%d-%d", n ? "," : "", r, e);
		if (n + k < len)
			memcpy(buf + n, tmp, k + 1);
		else if (len)
			buf[len - 1] = '\0';
		n += k;
		r = storm_set_next(s, e + 1);
	}
	return (int)n;
}
