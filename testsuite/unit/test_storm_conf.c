/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_storm_conf.c - storm.conf parsing: values, units, ranges, and that
 * every error names the file, the line and the key.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/common/storm_conf.h"

#include "check_run.h"

static storm_conf_t conf;
static char err[STORM_CONF_ERRLEN];

static int parse(const char *text)
{
	err[0] = '\0';
	return storm_conf_parse("storm.conf", text, &conf, err, sizeof(err));
}

START_TEST(defaults_when_empty)
{
	storm_conf_t d;

	ck_assert_int_eq(parse("# nothing\n\n"), 0);
	storm_conf_defaults(&d);
	ck_assert_mem_eq(&conf, &d, sizeof(d));
	ck_assert_uint_eq(conf.timeslice_us, 20000);
	ck_assert_str_eq(conf.provider, "tcp;ofi_rxm");
	/* a chain for files, the launch after the transfer: storm.conf(5) */
	ck_assert_uint_eq(conf.bcast_arity, 1);
	ck_assert(!conf.bcast_overlap);
	/* srun's request is due at once, well inside the transfer's bound */
	ck_assert_uint_eq(conf.bcast_request_us, 2000000);
	ck_assert_uint_lt(conf.bcast_request_us, conf.timeout_us);
}
END_TEST

START_TEST(values_and_units)
{
	ck_assert_int_eq(parse("Timeslice=500us MaxMPL=3\n"
			       "policy=Flexible   # case-insensitive\n"
			       "Port=7200-7231 FailSafe=1.5s\n"
			       "ChunkSize=1M BcastExecutable=yes BcastOverlap=yes\n"
			       "BcastArity=2 BcastRequestTimeout=250ms\n"
			       "Provider=shm BcastDir=/tmp/x\n"), 0);
	ck_assert_uint_eq(conf.timeslice_us, 500);
	ck_assert_uint_eq(conf.max_mpl, 3);
	ck_assert_int_eq(conf.policy, STORM_POLICY_FLEXIBLE);
	ck_assert_uint_eq(conf.port_lo, 7200);
	ck_assert_uint_eq(conf.port_hi, 7231);
	ck_assert_uint_eq(conf.failsafe_us, 1500000);
	ck_assert_uint_eq(conf.chunk_bytes, 1 << 20);
	ck_assert(conf.bcast_executable);
	ck_assert(conf.bcast_overlap);
	ck_assert_uint_eq(conf.bcast_arity, 2);
	ck_assert_uint_eq(conf.bcast_request_us, 250000);
	ck_assert_str_eq(conf.provider, "shm");
	ck_assert_str_eq(conf.bcast_dir, "/tmp/x");

	ck_assert_int_eq(parse("Timeslice=2ms\n"), 0);
	ck_assert_uint_eq(conf.timeslice_us, 2000);
	ck_assert_int_eq(parse("Timeslice=1s FailSafe=5s\n"), 0);
	ck_assert_uint_eq(conf.timeslice_us, 1000000);
	/* the stopping MM's quanta: 10 s unless told, 0 thaws at once */
	ck_assert_uint_eq(conf.handover_us, 10000000);
	ck_assert_int_eq(parse("HandoverTime=0\n"), 0);
	ck_assert_uint_eq(conf.handover_us, 0);
	ck_assert_int_eq(parse("HandoverTime=60s\n"), 0);
	ck_assert_uint_eq(conf.handover_us, 60000000);
}
END_TEST

START_TEST(partition_override)
{
	ck_assert_int_eq(parse("Policy=gang\n"
			       "PartitionName=batch Policy=local MaxMPL=4\n"), 0);
	ck_assert_int_eq(conf.nparts, 1);
	ck_assert_int_eq(storm_conf_part_policy(&conf, "batch"),
			 STORM_POLICY_LOCAL);
	ck_assert_int_eq(storm_conf_part_policy(&conf, "debug"),
			 STORM_POLICY_GANG);
	ck_assert_uint_eq(conf.parts[0].max_mpl, 4);
}
END_TEST

/* Each bad line yields an error naming file:line and the key. */
static const struct {
	const char *text, *expect1, *expect2;
} bad[] = {
	{ "MaxMPL=2\nTimeslise=2ms\n", "storm.conf:2:", "'Timeslise'" },
	{ "Timeslice=fast\n", "storm.conf:1:", "'Timeslice'" },
	{ "Timeslice=10ns\n", "storm.conf:1:", "'Timeslice'" },
	{ "Timeslice=50us\n", "storm.conf:1:", "Timeslice=50us is out of range" },
	{ "MaxMPL=0\n", "storm.conf:1:", "MaxMPL=0 is out of range" },
	{ "MaxMPL=17\n", "storm.conf:1:", "MaxMPL" },
	{ "MaxMPL=-1\n", "storm.conf:1:", "'MaxMPL'" },
	{ "MaxMPL=99999999999999999999999\n", "storm.conf:1:", "'MaxMPL'" },
	{ "Policy=fair\n", "storm.conf:1:", "'Policy'" },
	{ "\n\nPort=80\n", "storm.conf:3:", "Port=80" },
	{ "Port=7300-7200\n", "storm.conf:1:", "Port" },
	{ "BcastExecutable=maybe\n", "storm.conf:1:", "'BcastExecutable'" },
	{ "MaxMPL=2 MaxMPL=3\n", "storm.conf:1:", "'MaxMPL' given twice" },
	{ "Timeslice\n", "storm.conf:1:", "expected key=value" },
	{ "=3\n", "storm.conf:1:", "expected key=value" },
	{ "PartitionName=p Color=red\n", "storm.conf:1:", "'Color'" },
	{ "PartitionName=p Policy=x\n", "storm.conf:1:", "'Policy'" },
	{ "Provider=\n", "storm.conf:1:", "'Provider'" },
	{ "MaxMPL=2 PartitionName=p\n", "storm.conf:1:", "PartitionName" },
	{ "Timeslice=1s FailSafe=1s\n", "storm.conf", "FailSafe" },
	{ "BcastDir=relative\n", "storm.conf", "BcastDir" },
	/* gang keys */
	{ "Timeslice=50\n", "storm.conf:1", "Timeslice" },
	{ "Timeslice=2 ms\n", "storm.conf:1", "expected key=value" },
	{ "Timeslice=2h\n", "storm.conf:1", "Timeslice" },
	{ "MaxMPL=0\n", "storm.conf:1", "MaxMPL" },
	{ "MaxMPL=17\n", "storm.conf:1", "MaxMPL" },
	{ "Policy=roundrobin\n", "storm.conf:1", "Policy" },
	{ "FailSafe=10us\n", "storm.conf:1", "FailSafe" },
	{ "HandoverTime=3601s\n", "storm.conf:1", "HandoverTime" },
	{ "HandoverTime=soon\n", "storm.conf:1", "HandoverTime" },
	{ "SuspectQuanta=0\n", "storm.conf:1", "SuspectQuanta" },
	{ "SuspectTime=10ms\n", "storm.conf:1", "SuspectTime" },
	{ "SuspectTime=11m\n", "storm.conf:1", "SuspectTime" },
	{ "ReturnAfter=2h\n", "storm.conf:1", "ReturnAfter" },
	{ "ReturnAfter=soon\n", "storm.conf:1", "ReturnAfter" },
	{ "ControllerPort=80\n", "storm.conf:1", "ControllerPort" },
	{ "ControllerPort=70000\n", "storm.conf:1", "ControllerPort" },
	{ "Port=7100-7131 ControllerPort=7110\n", "storm.conf", "ControllerPort" },
	{ "Port=7100-7131 BcastPort=7300\n", "storm.conf", "BcastPort=7300-7300 must span" },
	{ "Port=7100-7131 BcastPort=7120-7151\n", "storm.conf", "overlaps Port" },
	{ "BcastPort=7099\n", "storm.conf", "ControllerPort=7099 lies inside BcastPort" },
	{ "BcastPort=99999\n", "storm.conf:1", "BcastPort" },
	{ "Port=65500\n", "storm.conf", "set BcastPort" },
	{ "StrobeInterval=5ms\n", "storm.conf", "StrobeInterval (5000 us) must be 0" },
	{ "StrobeInterval=800ms\n", "storm.conf", "twice StrobeInterval" },
	{ "Timeslice=1ms StrobeInterval=2s FailSafe=10s\n", "storm.conf", "at most 1000 quanta" },
	{ "StrobeInterval=2m\n", "storm.conf:1", "StrobeInterval" },
	{ "SwitchAt=soon\n", "storm.conf:1", "announced or arrival" },
	/* numbers past what a uint64_t holds, once scaled */
	{ "Timeslice=18446744073709551615\n", "storm.conf:1", "Timeslice" },
	{ "Timeslice=18446744073709551616ms\n", "storm.conf:1", "Timeslice" },
	{ "BcastMaxSize=17179869184G\n", "storm.conf:1", "BcastMaxSize" },
	{ "BcastCacheSize=2T\n", "storm.conf:1", "BcastCacheSize" },
	{ "BcastCacheSize=1025G\n", "storm.conf:1", "BcastCacheSize" },
	{ "BcastCacheSize=-1\n", "storm.conf:1", "BcastCacheSize" },
};

START_TEST(bad_input_names_line_and_key)
{
	storm_conf_t before;

	ck_assert_int_eq(parse("MaxMPL=5\n"), 0);
	before = conf;
	ck_assert_int_eq(parse(bad[_i].text), -1);
	ck_assert_msg(strstr(err, bad[_i].expect1),
		      "'%s' lacks '%s'", err, bad[_i].expect1);
	ck_assert_msg(strstr(err, bad[_i].expect2),
		      "'%s' lacks '%s'", err, bad[_i].expect2);
	/* A failed parse leaves the last good configuration alone. */
	ck_assert_mem_eq(&conf, &before, sizeof(conf));
}
END_TEST

START_TEST(gang_keys)
{
	ck_assert_int_eq(parse("Timeslice=300us MaxMPL=3 SuspectQuanta=4\n"
			       "FailSafe=20ms ControllerPort=7300\n"
			       "PartitionName=p MaxMPL=4\n"), 0);
	ck_assert_uint_eq(conf.timeslice_us, 300);
	ck_assert_uint_eq(conf.suspect_quanta, 4);
	ck_assert_uint_eq(conf.failsafe_us, 20000);
	ck_assert_uint_eq(conf.ctl_port, 7300);
	ck_assert_uint_eq(storm_conf_part_max_mpl(&conf, "p"), 4);
	ck_assert_uint_eq(storm_conf_part_max_mpl(&conf, "other"), 3);
	ck_assert_uint_eq(storm_conf_part_max_mpl(&conf, NULL), 3);
	/* StrobeInterval=auto: half of FailSafe in whole quanta, 9.9 ms */
	ck_assert_uint_eq(conf.strobe_interval_us, 9900);
	ck_assert_uint_eq(storm_conf_quanta_per_strobe(&conf), 33);
	ck_assert_int_eq(parse("Timeslice=2ms StrobeInterval=45ms\n"), 0);
	ck_assert_uint_eq(conf.strobe_interval_us, 45000);
	ck_assert_uint_eq(storm_conf_quanta_per_strobe(&conf), 22);
	ck_assert_int_eq(parse("Timeslice=2ms StrobeInterval=2ms\n"), 0);
	ck_assert_uint_eq(storm_conf_quanta_per_strobe(&conf), 1);
	ck_assert_int_eq(parse(""), 0);
	ck_assert_uint_eq(conf.ctl_port, 7099);
	ck_assert_uint_eq(conf.suspect_time_us, 1000000);
	ck_assert_uint_eq(storm_conf_beat_us(&conf), 250000);
	ck_assert_int_eq(parse("SuspectTime=250ms\n"), 0);
	ck_assert_uint_eq(conf.suspect_time_us, 250000);
	ck_assert_uint_eq(storm_conf_beat_us(&conf), 62500);
	/* ReturnAfter: the MM returns its drains after 2 s; 0 never */
	ck_assert_int_eq(parse(""), 0);
	ck_assert_uint_eq(conf.return_after_us, 2000000);
	ck_assert_int_eq(parse("ReturnAfter=0\n"), 0);
	ck_assert_uint_eq(conf.return_after_us, 0);
	ck_assert_int_eq(parse("ReturnAfter=500ms\n"), 0);
	ck_assert_uint_eq(conf.return_after_us, 500000);
	/* SwitchAt: announced instants unless told otherwise */
	ck_assert(!conf.switch_at_arrival);
	ck_assert_int_eq(parse("SwitchAt=arrival\n"), 0);
	ck_assert(conf.switch_at_arrival);
	ck_assert_int_eq(parse("SwitchAt=Announced\n"), 0);
	ck_assert(!conf.switch_at_arrival);
}
END_TEST

/* StrobeInterval=auto: what it picks from Timeslice and FailSafe */
static const struct {
	const char *text;
	uint64_t interval_us;
	uint32_t quanta;
} autos[] = {
	/* the default: a strobe every quantum from 20 ms up */
	{ "", 0, 1 },
	/* below, one strobe per 200 ms of whole quanta */
	{ "Timeslice=2ms\n", 200000, 100 },
	{ "Timeslice=19ms StrobeInterval=auto\n", 190000, 10 },
	/* no more than half of FailSafe, nor 1000 quanta */
	{ "Timeslice=2ms FailSafe=100ms\n", 50000, 25 },
	{ "Timeslice=150us\n", 150000, 1000 },
	/* and none when FailSafe leaves no room for two quanta */
	{ "Timeslice=10ms FailSafe=30ms\n", 0, 1 },
};

START_TEST(strobe_interval_auto)
{
	for (size_t i = 0; i < sizeof(autos) / sizeof(autos[0]); i++) {
		ck_assert_msg(parse(autos[i].text) == 0, "%s: %s", autos[i].text, err);
		ck_assert(conf.strobe_interval_auto);
		ck_assert_uint_eq(conf.strobe_interval_us, autos[i].interval_us);
		ck_assert_uint_eq(storm_conf_quanta_per_strobe(&conf), autos[i].quanta);
	}
	/* an explicit value wins, 0 included */
	ck_assert_int_eq(parse("Timeslice=2ms StrobeInterval=0\n"), 0);
	ck_assert(!conf.strobe_interval_auto);
	ck_assert_uint_eq(conf.strobe_interval_us, 0);
}
END_TEST

START_TEST(bcast_port_default_and_explicit)
{
	ck_assert_int_eq(parse(""), 0);
	ck_assert_uint_eq(conf.bcast_port_lo, 7200);
	ck_assert_uint_eq(conf.bcast_port_hi, 7200);
	/* default: the Port range moved up by 100, one port per NM */
	ck_assert_int_eq(parse("Port=7100-7131\n"), 0);
	ck_assert_uint_eq(conf.bcast_port_lo, 7200);
	ck_assert_uint_eq(conf.bcast_port_hi, 7231);
	ck_assert_int_eq(parse("Port=7100-7103 BcastPort=6000-6003\n"), 0);
	ck_assert_uint_eq(conf.port_lo, 7100);
	ck_assert_uint_eq(conf.port_hi, 7103);
	ck_assert_uint_eq(conf.bcast_port_lo, 6000);
	ck_assert_uint_eq(conf.bcast_port_hi, 6003);
}
END_TEST

START_TEST(load_files)
{
	char dir[] = "/tmp/storm_conf_testXXXXXX", path[256], big[300];
	FILE *fp;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/storm.conf", dir);

	/* missing: defaults when allowed, an error naming the path if not */
	ck_assert_int_eq(storm_conf_load(path, true, &conf, err, sizeof(err)), 0);
	ck_assert_int_eq(storm_conf_load(path, false, &conf, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, path));

	fp = fopen(path, "w");
	ck_assert_ptr_nonnull(fp);
	fputs("MaxMPL=4\nBogus=1\n", fp);
	fclose(fp);
	ck_assert_int_eq(storm_conf_load(path, true, &conf, err, sizeof(err)), -1);
	snprintf(big, sizeof(big), "%s:2: unknown key 'Bogus'", path);
	ck_assert_str_eq(err, big);

	/* a directory is not a configuration file */
	ck_assert_int_eq(storm_conf_load(dir, true, &conf, err, sizeof(err)), -1);

	unlink(path);
	rmdir(dir);
}
END_TEST

START_TEST(conf_path)
{
	char buf[256];

	unsetenv("STORM_CONF");
	ck_assert_str_eq(storm_conf_path("/a/b/slurm.conf", buf, sizeof(buf)),
			 "/a/b/storm.conf");
	ck_assert_str_eq(storm_conf_path(NULL, buf, sizeof(buf)),
			 "/etc/slurm/storm.conf");
	setenv("STORM_CONF", "/x/y.conf", 1);
	ck_assert_str_eq(storm_conf_path("/a/b/slurm.conf", buf, sizeof(buf)),
			 "/x/y.conf");
	unsetenv("STORM_CONF");
}
END_TEST

START_TEST(bcast_cache_size)
{
	char out[8192];

	/* off unless a site sizes it */
	ck_assert_int_eq(parse(""), 0);
	ck_assert_uint_eq(conf.bcast_cache_bytes, 0);
	ck_assert_int_eq(parse("BcastCacheSize=4G\n"), 0);
	ck_assert_uint_eq(conf.bcast_cache_bytes, 4ULL << 30);
	ck_assert_int_eq(parse("bcastcachesize=512MiB\n"), 0);
	ck_assert_uint_eq(conf.bcast_cache_bytes, 512ULL << 20);
	ck_assert_int_eq(parse("BcastCacheSize=1024G\n"), 0);
	ck_assert_uint_eq(conf.bcast_cache_bytes, 1ULL << 40);
	ck_assert_int_eq(parse("BcastCacheSize=0\n"), 0);
	ck_assert_uint_eq(conf.bcast_cache_bytes, 0);
	ck_assert_int_eq(parse("BcastCacheSize=300\n"), 0);
	ck_assert_int_gt(storm_conf_format(&conf, out, sizeof(out)), 0);
	ck_assert_ptr_nonnull(strstr(out, "\nBcastCacheSize=300\n"));
}
END_TEST

START_TEST(format_round_trip_values)
{
	char out[8192];

	ck_assert_int_eq(parse("Timeslice=3ms\nPartitionName=q Policy=local\n"), 0);
	ck_assert_int_gt(storm_conf_format(&conf, out, sizeof(out)), 0);
	ck_assert_ptr_nonnull(strstr(out, "Timeslice=3000us\n"));
	ck_assert_ptr_nonnull(strstr(out, "ControllerPort=7099\n"));
	ck_assert_ptr_nonnull(strstr(out, "BcastPort=7200-7200\n"));
	ck_assert_ptr_nonnull(strstr(out, "PartitionName=q Policy=local MaxMPL=2\n"));
	/* auto is printed as auto (a line that parses), with its value */
	ck_assert_ptr_nonnull(strstr(out, "StrobeInterval=auto\n# StrobeInterval=auto: 198000us"));
	ck_assert_int_eq(storm_conf_format(&conf, out, 10), -1);
	ck_assert_int_eq(parse("Timeslice=2ms StrobeInterval=0\n"), 0);
	ck_assert_int_gt(storm_conf_format(&conf, out, sizeof(out)), 0);
	ck_assert_ptr_nonnull(strstr(out, "StrobeInterval=0us\n"));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("storm_conf");
	TCase *tc = tcase_create("parse");

	tcase_add_test(tc, defaults_when_empty);
	tcase_add_test(tc, values_and_units);
	tcase_add_test(tc, partition_override);
	tcase_add_loop_test(tc, bad_input_names_line_and_key, 0,
			    sizeof(bad) / sizeof(bad[0]));
	tcase_add_test(tc, gang_keys);
	tcase_add_test(tc, strobe_interval_auto);
	tcase_add_test(tc, bcast_port_default_and_explicit);
	tcase_add_test(tc, load_files);
	tcase_add_test(tc, conf_path);
	tcase_add_test(tc, format_round_trip_values);
	tcase_add_test(tc, bcast_cache_size);
	suite_add_tcase(s, tc);
	return storm_check_run(s);
}
