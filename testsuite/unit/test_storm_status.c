/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_storm_status.c - the MM's status file (storm_status.c): what the
 * writer prints the reader reads back, old files without a policy, files
 * that are not status files, the JSON form, and histograms: counted per
 * bucket, written cumulative, read back, malformed ones left absent.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/common/storm_status.h"

#include "check_run.h"

static void sample(storm_status_hdr_t *h, storm_status_node_t *n,
		   storm_status_job_t *j)
{
	/* 3 strobes: 7 us, 40 us, 1 s (beyond every bound) */
	storm_hist_t strobes = { .count = { 1, 0, 1 }, .sum_us = 1000047 };
	int nle;
	const uint64_t *le = storm_hist_latency_le_us(&nle);

	memset(h, 0, sizeof(*h));
	h->version = STORM_STATUS_VERSION;
	h->written = 1700000000;
	h->epoch = 42;
	h->slot = 1;
	h->nslots = 2;
	h->quantum_us = 20000;
	h->nnodes = 1;
	h->quanta_per_strobe = 3;
	snprintf(h->provider, sizeof(h->provider), "tcp;ofi_rxm");
	memset(n, 0, sizeof(*n));
	n->rank = 0;
	snprintf(n->name, sizeof(n->name), "node1");
	snprintf(n->state, sizeof(n->state), "live");
	n->ack_us = 516;
	n->misses = 2;
	n->rejected[0] = 1;
	n->rejected[1] = 20;
	n->rejected[2] = 300;
	n->clock_offset_us = -5012;
	n->clock_uncert_us = 87;
	n->late_switches = 3;
	snprintf(n->switch_at, sizeof(n->switch_at), "announced");
	n->failsafe_events = 3;
	n->failsafe_open = 1;
	n->has_lag = true;
	n->switch_lag_us = -42;
	h->rejected_mm = 4;
	snprintf(h->switch_at, sizeof(h->switch_at), "announced");
	h->lead_us = 650;
	h->suspect_time_us = 250000;
	h->drains = 5;
	h->returns = 3;
	n->silent_ms = 12;
	strobes.count[nle] = 1;
	storm_status_hist_set(&h->strobe_hist_us, &strobes, le, nle);
	memset(j, 0, sizeof(*j));
	j->cpus = 8;
	j->cpu_m = 3500;
	j->has_cpu = true;
	j->job_id = 7;
	j->slot = 1;
	j->mask = 0x3;
	snprintf(j->nodes, sizeof(j->nodes), "0-3,7");
	snprintf(j->policy, sizeof(j->policy), "flexible");
	snprintf(j->user, sizeof(j->user), "alice");
	/* a user's string: spaces, markup, '%', a tab, UTF-8 */
	snprintf(j->name, sizeof(j->name), "<img src=x onerror=alert(1)> 100%%\t\xc3\xa9");
}

/* Write through the writer into a memory buffer. */
static char *write_text(void)
{
	storm_status_hdr_t h;
	storm_status_node_t n;
	storm_status_job_t j;
	char *buf = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&buf, &len);

	ck_assert_ptr_nonnull(fp);
	sample(&h, &n, &j);
	ck_assert_int_gt(storm_status_fprint_hdr(fp, &h), 0);
	ck_assert_int_gt(storm_status_fprint_node(fp, &n), 0);
	ck_assert_int_gt(storm_status_fprint_job(fp, &j), 0);
	fclose(fp);
	return buf;
}

START_TEST(writer_format)
{
	char *text = write_text();

	ck_assert_ptr_nonnull(strstr(text, "version=1\nwritten=1700000000\nmm_id=0\nepoch=42\nslot=1\nnslots=2\n"));
	ck_assert_ptr_nonnull(strstr(text, "provider=tcp;ofi_rxm\nnnodes=1\nquanta_per_strobe=3\nrejected_mm=4\n"));
	ck_assert_ptr_nonnull(strstr(text, "rejected_mm=4\nswitch_at=announced\nlead_us=650\nsuspect_time_us=250000\ndrains=5\nreturns=3\n"));
	ck_assert_ptr_nonnull(strstr(text, "\nstrobe_hist_us=10:1,25:1,50:2,100:2,250:2,500:2,1000:2,2500:2,5000:2,10000:2,25000:2,50000:2,100000:2,+Inf:3,sum:1000047\nconfirm_hist_us=-\n"));
	ck_assert_ptr_nonnull(strstr(text, "node 0 node1 state=live ack_us=516 misses=2 rejected=1,20,300 clock_offset_us=-5012 clock_uncert_us=87 late_switches=3 switch_at=announced silent_ms=12 failsafe_events=3 failsafe_open=1 switch_lag_us=-42\n"));
	ck_assert_ptr_nonnull(strstr(text, "job 7 slot=1 mask=0x3 nodes=0-3,7 policy=flexible user=alice name=<img%20src=x%20onerror=alert(1)>%20100%25%09%C3%A9 cpus=8 cpu_m=3500\n"));
	free(text);
}
END_TEST

START_TEST(round_trip)
{
	char *text = write_text();
	storm_status_hdr_t h;
	storm_status_node_t n;
	storm_status_job_t j;
	storm_status_t st;

	sample(&h, &n, &j);
	ck_assert_int_eq(storm_status_parse(text, &st), 0);
	ck_assert_mem_eq(&st.hdr, &h, sizeof(h));
	ck_assert_int_eq(st.nnodes, 1);
	ck_assert_mem_eq(&st.nodes[0], &n, sizeof(n));
	ck_assert_int_eq(st.njobs, 1);
	ck_assert_mem_eq(&st.jobs[0], &j, sizeof(j));
	storm_status_free(&st);
	ck_assert_ptr_null(st.jobs);
	free(text);
}
END_TEST

START_TEST(policy_optional_and_junk_skipped)
{
	storm_status_t st;

	ck_assert_int_eq(storm_status_parse("version=1\nnslots=1\nnode x\n"
					    "node 2 n3 state=live ack_us=9 misses=0\n"
					    "job 3 slot=-1 mask=0xffffffff nodes=2\n"
					    "unknown=5\n", &st), 0);
	ck_assert_int_eq(st.hdr.nslots, 1);
	/* a node line of an older file: no counts, no clock estimate */
	ck_assert_int_eq(st.nnodes, 1);
	ck_assert_uint_eq(st.nodes[0].rejected[1], 0);
	ck_assert_int_eq(st.nodes[0].clock_uncert_us, -1);
	ck_assert_int_eq(st.nodes[0].silent_ms, -1);
	ck_assert_str_eq(st.nodes[0].switch_at, "");
	ck_assert_int_eq(st.njobs, 1);
	ck_assert_int_eq(st.jobs[0].slot, -1);
	ck_assert_uint_eq(st.jobs[0].mask, 0xffffffffu);
	ck_assert_str_eq(st.jobs[0].policy, "");
	ck_assert_str_eq(st.jobs[0].user, "");
	ck_assert_str_eq(st.jobs[0].name, "");
	ck_assert_uint_eq(st.jobs[0].cpus, 0);
	ck_assert(!st.jobs[0].has_cpu);
	ck_assert_int_eq(st.hdr.strobe_hist_us.n, 0);
	ck_assert_uint_eq(st.nodes[0].failsafe_events, 0);
	ck_assert(!st.nodes[0].has_lag);
	storm_status_free(&st);
}
END_TEST

START_TEST(not_a_status_file)
{
	storm_status_t st;

	ck_assert_int_eq(storm_status_parse("hello\nnslots=2\n", &st), -EINVAL);
	ck_assert_int_eq(storm_status_parse("", &st), -EINVAL);
	ck_assert_int_eq(storm_status_read("/nonexistent/storm-mm.status", &st),
			 -ENOENT);
}
END_TEST

START_TEST(file_write_and_read)
{
	char dir[] = "/tmp/test_storm_status.XXXXXX", path[256];
	storm_status_hdr_t h;
	storm_status_node_t n;
	storm_status_job_t j;
	storm_status_t st;
	FILE *fp;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	ck_assert_int_eq(storm_status_path(dir, path, sizeof(path)), 0);
	ck_assert_int_eq(storm_status_path(dir, path, 10), -ENAMETOOLONG);
	ck_assert_int_eq(storm_status_path(dir, path, sizeof(path)), 0);
	sample(&h, &n, &j);
	fp = storm_status_begin(path);
	ck_assert_ptr_nonnull(fp);
	storm_status_fprint_hdr(fp, &h);
	storm_status_fprint_job(fp, &j);
	ck_assert_int_eq(access(path, F_OK), -1);	/* not before commit */
	ck_assert_int_eq(storm_status_commit(fp, path), 0);
	ck_assert_int_eq(storm_status_read(path, &st), 0);
	ck_assert_int_eq(st.hdr.epoch, 42);
	ck_assert_int_eq(st.njobs, 1);
	storm_status_free(&st);
	unlink(path);
	rmdir(dir);
}
END_TEST

START_TEST(json_form)
{
	char *text = write_text(), *buf = NULL;
	size_t len = 0;
	storm_status_t st;
	FILE *fp = open_memstream(&buf, &len);

	ck_assert_int_eq(storm_status_parse(text, &st), 0);
	snprintf(st.nodes[0].name, sizeof(st.nodes[0].name), "a\"b");
	ck_assert_int_eq(storm_status_fprint_json(fp, &st), 0);
	fclose(fp);
	ck_assert_ptr_nonnull(strstr(buf, "{\"header\":{\"version\":1,\"written\":1700000000,"));
	ck_assert_ptr_nonnull(strstr(buf, "\"provider\":\"tcp;ofi_rxm\","));
	ck_assert_ptr_nonnull(strstr(buf, "{\"rank\":0,\"name\":\"a\\\"b\",\"state\":\"live\",\"ack_us\":516,\"misses\":2,\"rejected\":{\"ctl\":1,\"bcast\":20,\"fabric\":300},\"clock_offset_us\":-5012,\"clock_uncert_us\":87,\"late_switches\":3,\"switch_at\":\"announced\",\"silent_ms\":12,\"failsafe_events\":3,\"failsafe_open\":1,\"switch_lag_us\":-42}"));
	ck_assert_ptr_nonnull(strstr(buf, "\"switch_at\":\"announced\",\"lead_us\":650,\"suspect_time_us\":250000,\"drains\":5,\"returns\":3,"));
	ck_assert_ptr_nonnull(strstr(buf, "{\"job_id\":7,\"slot\":1,\"mask\":3,\"nodes\":\"0-3,7\",\"policy\":\"flexible\",\"user\":\"alice\",\"name\":\"<img src=x onerror=alert(1)> 100%\\u0009\xc3\xa9\",\"cpus\":8,\"cpu_m\":3500,\"cpu_share\":43.8}"));
	ck_assert_ptr_nonnull(strstr(buf, "\"strobe_hist_us\":{\"le\":[10,25,50,100,250,500,1000,2500,5000,10000,25000,50000,100000],\"buckets\":[1,1,2,2,2,2,2,2,2,2,2,2,2,3],\"sum\":1000047},\"confirm_hist_us\":null}"));
	storm_status_free(&st);
	free(buf);
	free(text);
}
END_TEST

START_TEST(bcast_lines)
{
	storm_status_bcast_t b = { 0 };
	storm_status_t st;
	char *buf = NULL, *json = NULL;
	size_t len = 0, jlen = 0;
	FILE *fp = open_memstream(&buf, &len);

	b.relay = 2;
	snprintf(b.name, sizeof(b.name), "node3");
	b.key = 0xfedcba9876543210ULL;
	b.job_id = 12;
	snprintf(b.phase, sizeof(b.phase), "data");
	b.size = 1000000;
	b.received = 4096;
	b.nnodes = 3;
	b.start_us = 1700000000123456LL;
	b.elapsed_us = 2500;
	snprintf(b.ready, sizeof(b.ready), "0-1,3");
	b.count = 5;
	b.failed = 1;
	b.bytes = 77;
	fputs("version=1\n", fp);
	ck_assert_int_gt(storm_status_fprint_bcast(fp, &b), 0);
	fclose(fp);
	ck_assert_ptr_nonnull(strstr(buf, "bcast 2 node3 key=fedcba9876543210 job=12 phase=data size=1000000 received=4096 nodes=3 start_us=1700000000123456 elapsed_us=2500 ready=0-1,3 done=- count=5 failed=1 bytes=77 dur_hist_us=-\n"));
	ck_assert_int_eq(storm_status_parse(buf, &st), 0);
	ck_assert_int_eq(st.nbcasts, 1);
	ck_assert_mem_eq(&st.bcasts[0], &b, sizeof(b));
	fp = open_memstream(&json, &jlen);
	ck_assert_int_eq(storm_status_fprint_json(fp, &st), 0);
	fclose(fp);
	ck_assert_ptr_nonnull(strstr(json, "\"bcasts\":[\n{\"relay\":2,\"name\":\"node3\",\"key\":\"fedcba9876543210\",\"job_id\":12,\"phase\":\"data\",\"size\":1000000,\"received\":4096,\"nnodes\":3,\"start_us\":1700000000123456,\"elapsed_us\":2500,\"ready\":\"0-1,3\",\"done\":\"\",\"count\":5,\"failed\":1,\"bytes\":77,\"dur_hist_us\":null}]}"));
	storm_status_free(&st);
	free(json);
	free(buf);
}
END_TEST

/* A node that has not reported a switch lag: "-" in the file, null in
 * JSON, unknown again when read back. */
START_TEST(lag_unknown)
{
	storm_status_hdr_t h;
	storm_status_node_t n;
	storm_status_job_t j;
	storm_status_t st;
	char *buf = NULL, *json = NULL;
	size_t len = 0, jlen = 0;
	FILE *fp = open_memstream(&buf, &len);

	sample(&h, &n, &j);
	n.has_lag = false;
	n.switch_lag_us = 0;
	ck_assert_int_gt(storm_status_fprint_hdr(fp, &h), 0);
	ck_assert_int_gt(storm_status_fprint_node(fp, &n), 0);
	fclose(fp);
	ck_assert_ptr_nonnull(strstr(buf, " failsafe_open=1 switch_lag_us=-\n"));
	ck_assert_int_eq(storm_status_parse(buf, &st), 0);
	ck_assert_int_eq(st.nnodes, 1);
	ck_assert(!st.nodes[0].has_lag);
	ck_assert_mem_eq(&st.nodes[0], &n, sizeof(n));
	fp = open_memstream(&json, &jlen);
	ck_assert_int_eq(storm_status_fprint_json(fp, &st), 0);
	fclose(fp);
	ck_assert_ptr_nonnull(strstr(json, ",\"failsafe_open\":1,\"switch_lag_us\":null}"));
	storm_status_free(&st);
	free(json);
	free(buf);
}
END_TEST

/* A relay's histogram of broadcast durations: written, read back, in JSON;
 * truncated or out of order, it is absent rather than misread. */
START_TEST(hist_round_trip_and_malformed)
{
	storm_status_bcast_t b = { 0 };
	storm_hist_t d = { .sum_us = 0 };
	storm_status_t st;
	char *buf = NULL, *json = NULL;
	size_t len = 0, jlen = 0;
	int nle;
	const uint64_t *le = storm_hist_bcast_le_us(&nle);
	FILE *fp = open_memstream(&buf, &len);

	storm_hist_observe(&d, le, nle, 800);		/* <= 1 ms */
	storm_hist_observe(&d, le, nle, 1000);		/* <= 1 ms: bounds are inclusive */
	storm_hist_observe(&d, le, nle, 3000000);	/* <= 5 s */
	storm_hist_observe(&d, le, nle, 99000000);	/* +Inf */
	ck_assert_uint_eq(d.count[0], 2);
	ck_assert_uint_eq(d.count[11], 1);
	ck_assert_uint_eq(d.count[nle], 1);
	b.relay = 0;
	snprintf(b.name, sizeof(b.name), "node1");
	snprintf(b.phase, sizeof(b.phase), "done");
	storm_status_hist_set(&b.dur_hist_us, &d, le, nle);
	ck_assert_int_eq(b.dur_hist_us.n, nle + 1);
	ck_assert_uint_eq(b.dur_hist_us.cum[nle], 4);
	ck_assert_uint_eq(b.dur_hist_us.sum_us, 102001800);
	fputs("version=1\n", fp);
	ck_assert_int_gt(storm_status_fprint_bcast(fp, &b), 0);
	/* a header histogram cut short, one out of order, one without +Inf */
	fputs("strobe_hist_us=10:1,25:\nconfirm_hist_us=sum:5,+Inf:1\n", fp);
	fclose(fp);
	ck_assert_ptr_nonnull(strstr(buf, " dur_hist_us=1000:2,2500:2,5000:2,10000:2,25000:2,50000:2,100000:2,250000:2,500000:2,1000000:2,2500000:2,5000000:3,10000000:3,30000000:3,60000000:3,+Inf:4,sum:102001800\n"));
	ck_assert_int_eq(storm_status_parse(buf, &st), 0);
	ck_assert_int_eq(st.nbcasts, 1);
	ck_assert_mem_eq(&st.bcasts[0].dur_hist_us, &b.dur_hist_us, sizeof(b.dur_hist_us));
	ck_assert_int_eq(st.hdr.strobe_hist_us.n, 0);
	ck_assert_int_eq(st.hdr.confirm_hist_us.n, 0);
	fp = open_memstream(&json, &jlen);
	ck_assert_int_eq(storm_status_fprint_json(fp, &st), 0);
	fclose(fp);
	ck_assert_ptr_nonnull(strstr(json, "\"dur_hist_us\":{\"le\":[1000,2500,5000,10000,25000,50000,100000,250000,500000,1000000,2500000,5000000,10000000,30000000,60000000],\"buckets\":[2,2,2,2,2,2,2,2,2,2,2,3,3,3,3,4],\"sum\":102001800}}"));
	ck_assert_ptr_nonnull(strstr(json, "\"strobe_hist_us\":null,\"confirm_hist_us\":null}"));
	storm_status_free(&st);
	free(json);
	free(buf);
}
END_TEST

START_TEST(ranks_lists)
{
	ck_assert(storm_status_ranks_has("0-3,7", 0));
	ck_assert(storm_status_ranks_has("0-3,7", 3));
	ck_assert(!storm_status_ranks_has("0-3,7", 4));
	ck_assert(storm_status_ranks_has("0-3,7", 7));
	ck_assert(!storm_status_ranks_has("", 0));
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("storm_status");
	TCase *tc = tcase_create("status");

	tcase_add_test(tc, writer_format);
	tcase_add_test(tc, bcast_lines);
	tcase_add_test(tc, round_trip);
	tcase_add_test(tc, policy_optional_and_junk_skipped);
	tcase_add_test(tc, not_a_status_file);
	tcase_add_test(tc, file_write_and_read);
	tcase_add_test(tc, json_form);
	tcase_add_test(tc, lag_unknown);
	tcase_add_test(tc, ranks_lists);
	tcase_add_test(tc, hist_round_trip_and_malformed);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return storm_check_run(suite());
}
