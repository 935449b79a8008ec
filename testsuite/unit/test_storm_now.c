/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_storm_now.c - the MM's last strobe for views (src/common/storm_now.c):
 * publish and read through a real file, what a reader refuses, and the
 * slot at an instant as the nodes switch (arrival, announced instants,
 * StrobeInterval's timed switches, a stale strobe).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/common/storm_now.h"

#include "check_run.h"

#define MS 1000000ULL
#define T0 (1700000000ULL * 1000000000ULL)

static char dir[] = "/tmp/test_storm_now.XXXXXX";
static char path[256];

static void setup(void)
{
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/%s", dir, STORM_NOW_FILE);
}

static void teardown(void)
{
	char tmp[300];

	unlink(path);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	unlink(tmp);
	rmdir(dir);
	strcpy(dir, "/tmp/test_storm_now.XXXXXX");
}

/* A strobe of slot `slot` sent at T0, switching at `at` (0: on arrival),
 * covering nq quanta of 2 ms of nslots slots, the next boundary 1 ms on. */
static storm_now_t strobe(uint32_t slot, uint32_t nslots, uint32_t nq,
			  uint64_t at)
{
	storm_now_t n;

	memset(&n, 0, sizeof(n));
	n.strobe.magic = STORM_GANG_MAGIC;
	n.strobe.slot = slot;
	n.strobe.nslots = nslots;
	n.strobe.nquanta = nq;
	n.strobe.quantum_us = 2000;
	n.strobe.next_in_us = 1000;
	n.strobe.sent_ns = T0;
	n.strobe.at_ns = at;
	n.strobe.epoch = 42;
	n.quanta = 1000;
	return n;
}

START_TEST(publish_then_read)
{
	storm_now_writer_t w = STORM_NOW_WRITER_INIT;
	storm_now_t in = strobe(1, 3, 100, 0), out;

	ck_assert_int_eq(storm_now_open(&w, path), 0);
	/* created and renamed: a reader finds the file, nothing in it yet */
	ck_assert_int_eq(storm_now_read(path, &out), -EAGAIN);
	storm_now_publish(&w, &in.strobe, in.quanta);
	ck_assert_int_eq(storm_now_read(path, &out), 0);
	ck_assert_mem_eq(&out.strobe, &in.strobe, sizeof(in.strobe));
	ck_assert_uint_eq(out.quanta, 1000);
	ck_assert_uint_eq(out.seq, 1);
	in.strobe.epoch = 43;
	storm_now_publish(&w, &in.strobe, 1100);
	ck_assert_int_eq(storm_now_read(path, &out), 0);
	ck_assert_uint_eq(out.strobe.epoch, 43);
	ck_assert_uint_eq(out.quanta, 1100);
	ck_assert_uint_eq(out.seq, 2);
	storm_now_close(&w);
	/* the file outlives its writer; publishing on a closed one is a no-op */
	storm_now_publish(&w, &in.strobe, 1200);
	ck_assert_int_eq(storm_now_read(path, &out), 0);
	ck_assert_uint_eq(out.seq, 2);
}
END_TEST

START_TEST(a_new_writer_replaces_the_file)
{
	storm_now_writer_t a = STORM_NOW_WRITER_INIT, b = STORM_NOW_WRITER_INIT;
	storm_now_t in = strobe(0, 2, 1, 0), out;

	ck_assert_int_eq(storm_now_open(&a, path), 0);
	storm_now_publish(&a, &in.strobe, 5);
	ck_assert_int_eq(storm_now_open(&b, path), 0);	/* a restarted MM */
	ck_assert_int_eq(storm_now_read(path, &out), -EAGAIN);
	storm_now_publish(&a, &in.strobe, 6);	/* the old one: unseen */
	ck_assert_int_eq(storm_now_read(path, &out), -EAGAIN);
	storm_now_publish(&b, &in.strobe, 7);
	ck_assert_int_eq(storm_now_read(path, &out), 0);
	ck_assert_uint_eq(out.quanta, 7);
	storm_now_close(&a);
	storm_now_close(&b);
}
END_TEST

START_TEST(reader_refuses_other_files)
{
	storm_now_t out;
	int fd;

	ck_assert_int_eq(storm_now_read(path, &out), -ENOENT);
	ck_assert_int_eq(storm_now_read(dir, &out), -EINVAL);	/* a directory */
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(storm_now_read(path, &out), -EINVAL);	/* empty */
	for (int i = 0; i < 200; i++)	/* the right size, the wrong bytes */
		ck_assert_int_eq(write(fd, "0123456789abcdef", 16), 16);
	close(fd);
	ck_assert_int_eq(storm_now_read(path, &out), -EINVAL);
}
END_TEST

START_TEST(writer_fails_cleanly)
{
	storm_now_writer_t w = STORM_NOW_WRITER_INIT;

	ck_assert_int_eq(storm_now_open(&w, "/nonexistent-dir/storm-mm.now"),
			 -ENOENT);
	ck_assert_int_eq(w.fd, -1);
	ck_assert_ptr_null(w.page);
	storm_now_close(&w);
}
END_TEST

START_TEST(one_quantum_strobe_names_the_slot)
{
	storm_now_t n = strobe(1, 2, 1, 0);
	storm_now_pos_t p;

	storm_now_at(&n, T0 + 500000, &p);
	ck_assert_uint_eq(p.slot, 1);
	ck_assert_uint_eq(p.k, 0);
	ck_assert_uint_eq(p.quantum, 1000);
	ck_assert_int_eq(p.since_ns, 500000);
	ck_assert(!p.stale);
	/* no next strobe: the nodes stay in it until their fail-safe */
	storm_now_at(&n, T0 + 50 * MS, &p);
	ck_assert_uint_eq(p.slot, 1);
	ck_assert(!p.stale);
	storm_now_at(&n, T0 + 1 * MS + STORM_NOW_STALE_NS + 1, &p);
	ck_assert(p.stale);
}
END_TEST

START_TEST(strobe_interval_steps_through_the_slots)
{
	/* switch 0 on arrival (T0), switch 1 at T0 + 1 ms, then every 2 ms */
	storm_now_t n = strobe(2, 3, 100, 0);
	storm_now_pos_t p;

	storm_now_at(&n, T0 + 999999, &p);
	ck_assert_uint_eq(p.slot, 2);
	storm_now_at(&n, T0 + 1 * MS, &p);
	ck_assert_uint_eq(p.slot, 0);
	ck_assert_uint_eq(p.k, 1);
	ck_assert_uint_eq(p.quantum, 1001);
	storm_now_at(&n, T0 + 3 * MS, &p);
	ck_assert_uint_eq(p.slot, 1);
	storm_now_at(&n, T0 + 4 * MS, &p);
	ck_assert_uint_eq(p.slot, 1);
	/* the last switch of the span is its 99th: the nodes hold it */
	storm_now_at(&n, T0 + 1 * MS + 98 * 2 * MS, &p);
	ck_assert_uint_eq(p.k, 99);
	ck_assert_uint_eq(p.slot, (2 + 99) % 3);
	storm_now_at(&n, T0 + 500 * MS, &p);
	ck_assert_uint_eq(p.k, 99);
	ck_assert(!p.stale);
	ck_assert_uint_eq(p.quantum, 1099);
}
END_TEST

START_TEST(announced_instant_counts_from_it)
{
	storm_now_t n = strobe(0, 2, 10, T0 + 300000);	/* a 0.3 ms lead */
	storm_now_pos_t p;

	storm_now_at(&n, T0 + 100000, &p);	/* before it: its slot already */
	ck_assert_uint_eq(p.slot, 0);
	storm_now_at(&n, T0 + 1200000, &p);	/* switch 1 at T0 + 1.3 ms */
	ck_assert_uint_eq(p.slot, 0);
	storm_now_at(&n, T0 + 1300000, &p);
	ck_assert_uint_eq(p.slot, 1);
	storm_now_at(&n, T0 + 3300000, &p);
	ck_assert_uint_eq(p.slot, 0);
}
END_TEST

START_TEST(single_slot_never_steps)
{
	storm_now_t n = strobe(0, 1, 25, 0);	/* a heartbeat */
	storm_now_pos_t p;

	storm_now_at(&n, T0 + 20 * MS, &p);
	ck_assert_uint_eq(p.slot, 0);
	ck_assert_uint_eq(p.k, 0);
	n.strobe.nslots = 0;	/* as an empty matrix would say */
	storm_now_at(&n, T0 + 20 * MS, &p);
	ck_assert_uint_eq(p.slot, 0);
	ck_assert_uint_eq(p.nslots, 1);
}
END_TEST

START_TEST(json_is_one_line)
{
	storm_now_t n = strobe(1, 2, 1, 0);
	storm_now_pos_t p;
	char buf[512] = "";
	FILE *fp = fmemopen(buf, sizeof(buf) - 1, "w");

	storm_now_at(&n, T0 + 2 * MS, &p);
	ck_assert_int_eq(storm_now_fprint_json(fp, &n, &p), 0);
	fclose(fp);
	ck_assert_ptr_nonnull(strstr(buf, "\"slot\": 1, \"nslots\": 2, \"quantum\": 1000"));
	ck_assert_ptr_nonnull(strstr(buf, "\"since_us\": 2000, \"stale\": false"));
	ck_assert_ptr_eq(strchr(buf, '\n'), buf + strlen(buf) - 1);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("storm_now");
	TCase *file = tcase_create("file");
	TCase *at = tcase_create("at");

	tcase_add_checked_fixture(file, setup, teardown);
	tcase_add_test(file, publish_then_read);
	tcase_add_test(file, a_new_writer_replaces_the_file);
	tcase_add_test(file, reader_refuses_other_files);
	tcase_add_test(file, writer_fails_cleanly);
	tcase_add_test(at, one_quantum_strobe_names_the_slot);
	tcase_add_test(at, strobe_interval_steps_through_the_slots);
	tcase_add_test(at, announced_instant_counts_from_it);
	tcase_add_test(at, single_slot_never_steps);
	tcase_add_test(at, json_is_one_line);
	suite_add_tcase(s, file);
	suite_add_tcase(s, at);
	return s;
}

int main(void)
{
	return storm_check_run(suite());
}
