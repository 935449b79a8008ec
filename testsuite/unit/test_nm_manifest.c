/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_nm_manifest.c - the node manager's check of a broadcast manifest
 * (nm_bcast_xfer_accept: nm_bcast_auth.c, nm_bcast_dir.c,
 * nm_bcast_xfer.c): every refusal, with the state the relay is told and
 * the line the node manager logs, and what an accepted manifest prepares.
 *
 * munged and slurmctld are stood in for through nm_bcast_auth_ops_t.  A
 * stand-in credential reads "<uid> <gid> <flags>|<payload>" (flags: R,
 * munged says replayed; N, the payload lacks its terminating NUL) or
 * "E<munge error>".  BcastDir is a fresh directory under /tmp per test.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/common/storm_bcast.h"
#include "src/common/storm_bundle.h"
#include "src/nm/nm_bcast_auth.h"
#include "src/nm/nm_bcast_dir.h"
#include "src/nm/nm_bcast_xfer.h"

#include "check_run.h"

#define ROOT_RANK 3		/* the relay of the transfers below */
#define JOB 42
#define MAX_BYTES (1u << 20)

/* ------------------------------------------------------- stand-ins */
static struct {
	int rc;			/* load_job's answer */
	uid_t owner;
	bool running;
	const char *nodes;
	int calls;
} job;

static munge_err_t fake_decode(const char *cred, void **payload, int *len,
			       uid_t *uid, gid_t *gid)
{
	unsigned u, g;
	char flags[8];
	int n = 0;
	const char *p;
	munge_err_t e = EMUNGE_SUCCESS;

	*payload = NULL;
	*len = 0;
	if (cred[0] == 'E')
		return (munge_err_t) atoi(cred + 1);
	if (sscanf(cred, "%u %u %7[^|]|%n", &u, &g, flags, &n) != 3 || !n)
		return EMUNGE_CRED_INVALID;
	p = cred + n;
	*uid = u;
	*gid = g;
	*payload = strdup(p);
	*len = (int) strlen(p) + (strchr(flags, 'N') ? 0 : 1);
	if (strchr(flags, 'R'))
		e = EMUNGE_CRED_REPLAYED;
	return e;
}

static munge_err_t fake_encode(char **cred, const void *payload, int len)
{
	ck_assert_int_eq(((const char *) payload)[len - 1], '\0');
	return asprintf(cred, "0 0 -|%s", (const char *) payload) < 0 ?
	       EMUNGE_NO_MEMORY : EMUNGE_SUCCESS;
}

static int fake_load_job(uint32_t id, nm_bcast_job_t *out)
{
	job.calls++;
	ck_assert_uint_eq(id, JOB);
	if (job.rc)
		return job.rc;
	out->owner = job.owner;
	out->running = job.running;
	out->nodes = job.nodes ? strdup(job.nodes) : NULL;
	return 0;
}

static const nm_bcast_auth_ops_t fake_ops = {
	.decode = fake_decode,
	.encode = fake_encode,
	.load_job = fake_load_job,
};

/* ------------------------------------------------------- manifests */
typedef struct mf {
	unsigned cuid, cgid;	/* whom munged vouches for */
	const char *flags;
	unsigned job, uid, gid;
	uint64_t key, size;
	unsigned mode;
	const char *dir, *name;
	bool tree;		/* a bundle, extracted on commit */
} mf_t;

static char data[4096];

static mf_t mf(uint64_t key)
{
	return (mf_t) { .cuid = getuid(), .cgid = getgid(), .flags = "-",
			.job = JOB, .uid = getuid(), .gid = getgid(),
			.key = key, .size = sizeof(data), .mode = 0755,
			.dir = "-", .name = "a.out" };
}

static char *cred(const mf_t *m)
{
	char *s;

	ck_assert_int_ge(asprintf(&s, "%u %u %s|storm-bcast-1 job=%u step=0 uid=%u gid=%u key=%" PRIx64
				  " size=%" PRIu64 " mode=%o hash=%" PRIx64 " dir=%s name=%s%s",
				  m->cuid, m->cgid, m->flags, m->job, m->uid,
				  m->gid, m->key, m->size, m->mode,
				  storm_bcast_hash(data, m->size <= sizeof(data) ?
						   m->size : 0),
				  m->dir, m->name,
				  m->tree ? " " STORM_BCAST_KIND_TREE : ""), 0);
	return s;
}

static char *raw(const char *payload)
{
	char *s;

	ck_assert_int_ge(asprintf(&s, "%u %u -|%s", (unsigned) getuid(),
				  (unsigned) getgid(), payload), 0);
	return s;
}

/* ---------------------------------------------------------- fixture */
static nm_t nm;
static char dir[64], logpath[80];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/test_nm_manifest.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(logpath, sizeof(logpath), "%s.log", dir);
	ck_assert_int_eq(nm_log_open(logpath, NM_DEBUG), 0);
	memset(&nm, 0, sizeof(nm));
	snprintf(nm.node, sizeof(nm.node), "node1");
	snprintf(nm.conf.bcast_dir, sizeof(nm.conf.bcast_dir), "%s", dir);
	nm.conf.bcast_max_bytes = MAX_BYTES;
	nm.conf.timeout_us = 1000000;
	job.rc = 0;
	job.owner = getuid();
	job.running = true;
	job.nodes = "node[1-4]";
	job.calls = 0;
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (char) (i * 7);
	nm_bcast_auth_init(&nm, &fake_ops);
	nm_bcast_xfer_init(&nm);
	ck_assert_int_eq(nm_bcast_dir_open(&nm), 0);
}

static int rm_entry(const char *path, const struct stat *st, int flag,
		    struct FTW *ftw)
{
	return remove(path);
}

static void teardown(void)
{
	nm_bcast_xfer_fini();
	nm_bcast_dir_close();
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	unlink(logpath);
}

/* Did the node manager log this? */
static bool logged(const char *what)
{
	char buf[65536];
	FILE *fp = fopen(logpath, "r");
	size_t n;

	ck_assert_ptr_nonnull(fp);
	n = fread(buf, 1, sizeof(buf) - 1, fp);
	fclose(fp);
	buf[n] = '\0';
	return strstr(buf, what) != NULL;
}

/* Check c (and attest) for the transfer (ROOT_RANK, key), as the data
 * comes over the fabric. */
static int check(char *c, const char *attest, uint64_t key,
		 nm_bcast_xfer_t **x)
{
	int st = nm_bcast_xfer_accept(c, attest, ROOT_RANK, key,
				      NM_XFER_READY, x);

	free(c);
	if (st != STORM_BCAST_READY)
		ck_assert_ptr_null(*x);
	else
		ck_assert_ptr_nonnull(*x);
	return st;
}

static void refused(char *c, const char *attest, uint64_t key, int st,
		    const char *line)
{
	nm_bcast_xfer_t *x;
	int before = nm_bcast_xfer_count();

	ck_assert_int_eq(check(c, attest, key, &x), st);
	ck_assert_msg(logged(line), "not logged: %s", line);
	ck_assert_int_eq(nm_bcast_xfer_count(), before);	/* no slot kept */
}

static void refused_mf(const mf_t *m, int st, const char *line)
{
	refused(cred(m), NULL, m->key, st, line);
}

static void path_of(char *out, size_t len, const char *d, const char *name)
{
	snprintf(out, len, "%s/%s", d, name);
}

/* ------------------------------------------------- accepted manifests */
START_TEST(test_accepted)
{
	mf_t m = mf(0x101);
	nm_bcast_xfer_t *x;
	char jd[128], p[256], tmp[256];
	struct stat st;
	uint64_t size;
	void *map;

	ck_assert_int_eq(check(cred(&m), NULL, m.key, &x), STORM_BCAST_READY);
	ck_assert(logged("bcast: job 42.0: receiving a.out (4096 bytes) from rank 3 (job checked with slurmctld)"));
	ck_assert_int_eq(job.calls, 1);
	ck_assert_ptr_eq(nm_bcast_xfer_find(ROOT_RANK, m.key), x);
	ck_assert_int_eq(nm_bcast_xfer_count(), 1);
	ck_assert(nm_bcast_xfer_busy(JOB));
	ck_assert_uint_eq(nm_bcast_xfer_uid(x), getuid());
	/* the job's directory: the user's, 0700; a hidden temporary file */
	snprintf(jd, sizeof(jd), "%s/job_%u", dir, JOB);
	ck_assert_int_eq(stat(jd, &st), 0);
	ck_assert_uint_eq(st.st_uid, getuid());
	ck_assert_uint_eq(st.st_mode & 07777, 0700);
	path_of(tmp, sizeof(tmp), jd, ".storm-000000000101");
	ck_assert_int_eq(stat(tmp, &st), 0);
	ck_assert_uint_eq(st.st_size, sizeof(data));
	ck_assert_uint_eq(st.st_mode & 07777, 0600);
	/* the data over the fabric, then the commit */
	ck_assert_ptr_null(nm_bcast_xfer_receive(ROOT_RANK, m.key, 1));
	map = nm_bcast_xfer_receive(ROOT_RANK, m.key, sizeof(data));
	ck_assert_ptr_eq(map, nm_bcast_xfer_map(x, &size));
	ck_assert_uint_eq(size, sizeof(data));
	memcpy(map, data, sizeof(data));
	ck_assert_int_eq(nm_bcast_xfer_finish(x, true), STORM_BCAST_DONE);
	path_of(p, sizeof(p), jd, "a.out");
	ck_assert_int_eq(stat(p, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0755);
	ck_assert_int_eq(access(tmp, F_OK), -1);
	ck_assert_int_eq(nm_bcast_xfer_count(), 0);
}
END_TEST

/* A bundle of one file, lib/x.so ("bundled"), into data; its size. */
static uint64_t bundle_into_data(void)
{
	char src[] = "/tmp/test_nm_manifest_srcXXXXXX", f[128], err[256];
	storm_bundle_t *b = storm_bundle_new();
	int fd;
	uint64_t size;

	ck_assert_ptr_nonnull(mkdtemp(src));
	snprintf(f, sizeof(f), "%s/x.so", src);
	fd = open(f, O_WRONLY | O_CREAT | O_EXCL, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "bundled", 7), 7);
	close(fd);
	ck_assert_int_eq(storm_bundle_add(b, f, "lib/x.so", false, err,
					  sizeof(err)), 0);
	snprintf(f, sizeof(f), "%s/bundle", src);
	fd = open(f, O_RDWR | O_CREAT | O_EXCL, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(storm_bundle_write(b, fd, err, sizeof(err)), 0);
	size = storm_bundle_size(b);
	ck_assert_uint_le(size, sizeof(data));
	ck_assert_int_eq(pread(fd, data, size, 0), (ssize_t) size);
	close(fd);
	storm_bundle_free(b);
	unlink(f);
	snprintf(f, sizeof(f), "%s/x.so", src);
	unlink(f);
	rmdir(src);
	return size;
}

START_TEST(test_accepted_tree)
{
	/* a bundle becomes a directory of the transfer's name, whole; the
	 * bundle file and the hidden extraction directory go */
	mf_t m = mf(0x10a);
	nm_bcast_xfer_t *x;
	char jd[128], p[256], buf[16] = "";
	uint64_t size;
	void *map;
	int fd;

	m.tree = true;
	m.name = "s0_tree";
	m.size = bundle_into_data();
	ck_assert_int_eq(check(cred(&m), NULL, m.key, &x), STORM_BCAST_READY);
	map = nm_bcast_xfer_receive(ROOT_RANK, m.key, m.size);
	ck_assert_ptr_eq(map, nm_bcast_xfer_map(x, &size));
	memcpy(map, data, m.size);
	ck_assert_int_eq(nm_bcast_xfer_finish(x, true), STORM_BCAST_DONE);
	snprintf(jd, sizeof(jd), "%s/job_%u", dir, JOB);
	path_of(p, sizeof(p), jd, "s0_tree/lib/x.so");
	fd = open(p, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(read(fd, buf, sizeof(buf)), 7);
	close(fd);
	ck_assert_str_eq(buf, "bundled");
	path_of(p, sizeof(p), jd, ".storm-00000000010a");
	ck_assert_int_eq(access(p, F_OK), -1);
	path_of(p, sizeof(p), jd, ".storm-d00000000010a");
	ck_assert_int_eq(access(p, F_OK), -1);
}
END_TEST

START_TEST(test_tree_that_cannot_be_extracted_leaves_nothing)
{
	/* the checksum matches (the sender's own garbage): refused on
	 * extraction, and nothing stays */
	mf_t m = mf(0x10b);
	nm_bcast_xfer_t *x;
	char jd[128], p[256];
	uint64_t size;
	void *map;

	m.tree = true;
	m.name = "s0_tree";
	m.size = bundle_into_data();
	memcpy(data + STORM_BUNDLE_HDR + STORM_BUNDLE_ENTRY_HDR, "../", 3);
	ck_assert_int_eq(check(cred(&m), NULL, m.key, &x), STORM_BCAST_READY);
	map = nm_bcast_xfer_receive(ROOT_RANK, m.key, m.size);
	ck_assert_ptr_eq(map, nm_bcast_xfer_map(x, &size));
	memcpy(map, data, m.size);
	ck_assert_int_eq(nm_bcast_xfer_finish(x, true), STORM_BCAST_EBADTREE);
	snprintf(jd, sizeof(jd), "%s/job_%u", dir, JOB);
	path_of(p, sizeof(p), jd, "s0_tree");
	ck_assert_int_eq(access(p, F_OK), -1);
	path_of(p, sizeof(p), jd, ".storm-00000000010b");
	ck_assert_int_eq(access(p, F_OK), -1);
	path_of(p, sizeof(p), jd, ".storm-d00000000010b");
	ck_assert_int_eq(access(p, F_OK), -1);
}
END_TEST

START_TEST(test_accepted_replayed_credential)
{
	/* one munged for several node managers of a host: every one of them
	 * decodes the same credential */
	mf_t m = mf(0x102);
	nm_bcast_xfer_t *x;

	m.flags = "R";
	ck_assert_int_eq(check(cred(&m), NULL, m.key, &x), STORM_BCAST_READY);
}
END_TEST

START_TEST(test_accepted_empty_file)
{
	mf_t m = mf(0x103);
	nm_bcast_xfer_t *x;
	uint64_t size = 1;

	m.size = 0;
	ck_assert_int_eq(check(cred(&m), NULL, m.key, &x), STORM_BCAST_READY);
	ck_assert_ptr_nonnull(nm_bcast_xfer_map(x, &size));
	ck_assert_uint_eq(size, 0);
	ck_assert_int_eq(nm_bcast_xfer_finish(x, true), STORM_BCAST_DONE);
}
END_TEST

START_TEST(test_accepted_mode_bits_only)
{
	mf_t m = mf(0x104);
	nm_bcast_xfer_t *x;
	char p[256];
	struct stat st;
	uint64_t size;

	m.mode = 0170750;	/* file-type bits are not the sender's to set */
	ck_assert_int_eq(check(cred(&m), NULL, m.key, &x), STORM_BCAST_READY);
	memcpy(nm_bcast_xfer_map(x, &size), data, sizeof(data));
	ck_assert_int_eq(nm_bcast_xfer_finish(x, true), STORM_BCAST_DONE);
	snprintf(p, sizeof(p), "%s/job_%u/a.out", dir, JOB);
	ck_assert_int_eq(stat(p, &st), 0);
	ck_assert(S_ISREG(st.st_mode));
	ck_assert_uint_eq(st.st_mode & 07777, 0750);
}
END_TEST

START_TEST(test_accepted_absolute_destination)
{
	mf_t m = mf(0x105);
	nm_bcast_xfer_t *x;
	char dest[128], p[256];
	uint64_t size;

	snprintf(dest, sizeof(dest), "%s/dest", dir);
	ck_assert_int_eq(mkdir(dest, 0755), 0);
	m.dir = dest;
	ck_assert_int_eq(check(cred(&m), NULL, m.key, &x), STORM_BCAST_READY);
	snprintf(p, sizeof(p), "%s/.storm-000000000105", dest);
	ck_assert_int_eq(access(p, F_OK), 0);
	memcpy(nm_bcast_xfer_map(x, &size), data, sizeof(data));
	ck_assert_int_eq(nm_bcast_xfer_finish(x, true), STORM_BCAST_DONE);
	snprintf(p, sizeof(p), "%s/a.out", dest);
	ck_assert_int_eq(access(p, F_OK), 0);
}
END_TEST

START_TEST(test_accepted_at_max_size)
{
	mf_t m = mf(0x106);
	nm_bcast_xfer_t *x;

	m.size = MAX_BYTES;
	ck_assert_int_eq(check(cred(&m), NULL, m.key, &x), STORM_BCAST_READY);
}
END_TEST

START_TEST(test_checksum_mismatch_dropped)
{
	mf_t m = mf(0x107);
	nm_bcast_xfer_t *x;
	char p[256];

	ck_assert_int_eq(check(cred(&m), NULL, m.key, &x), STORM_BCAST_READY);
	ck_assert(!nm_bcast_xfer_verify(x));	/* the data never came */
	ck_assert_int_eq(nm_bcast_xfer_finish(x, true), STORM_BCAST_EBADMSG);
	ck_assert(logged("bcast: job 42: a.out: checksum mismatch, dropped"));
	snprintf(p, sizeof(p), "%s/job_%u/a.out", dir, JOB);
	ck_assert_int_eq(access(p, F_OK), -1);
}
END_TEST

START_TEST(test_root_sends_for_any_job)
{
	mf_t m = mf(0x108);
	nm_bcast_xfer_t *x;

	if (getuid() != 0)
		return;		/* the job directory goes to another user */
	m.cuid = m.uid = 0;
	m.cgid = m.gid = 0;
	job.owner = 4242;
	ck_assert_int_eq(check(cred(&m), NULL, m.key, &x), STORM_BCAST_READY);
}
END_TEST

/* ------------------------------------------------ the credential */
START_TEST(test_refuse_bad_credential)
{
	char *c = strdup("E15");	/* EMUNGE_CRED_EXPIRED */

	refused(c, NULL, 0x201, STORM_BCAST_EPERM,
		"bcast: rank 3: bad credential: ");
	ck_assert_int_eq(job.calls, 0);
}
END_TEST

START_TEST(test_refuse_unterminated_payload)
{
	mf_t m = mf(0x202);

	m.flags = "N";
	refused_mf(&m, STORM_BCAST_EPERM, "bcast: rank 3: malformed manifest");
}
END_TEST

START_TEST(test_refuse_malformed)
{
	static const char *const payloads[] = {
		"",
		"storm-bcast-2 job=42 step=0 uid=0 gid=0 key=301 size=1 mode=755 hash=0 dir=- name=a",
		"storm-bcast-1 job=42 step=0 uid=0 gid=0 key=301 size=1 mode=755 hash=0 dir=-",
		"storm-bcast-1 job=42 step=0 uid=0 gid=0 key=301 size=1 mode=755 hash=0 dir=- name=a more",
		"storm-bcast-1 job=42 step=0 uid=0 gid=0 key=301 size=1 mode=755 hash=0 dir=- name=a kind=trees",
		"storm-bcast-1 job=42 step=0 uid=0 gid=0 key=301 size=1 mode=755 hash=0 dir=- name=a kind=tree ",
		"storm-bcast-1 job=42 step=0 uid=0 gid=0 key=301 size=1 mode=9 hash=0 dir=- name=a",
		"storm-bcast-1 job=42 step=0 uid=0 gid=0 key=zz size=1 mode=755 hash=0 dir=- name=a",
		"storm-bcast-1 job=x step=0 uid=0 gid=0 key=301 size=1 mode=755 hash=0 dir=- name=a",
		"storm-bcast-1 job=42 step=0 uid=0 gid=0 key=301 size=-1x mode=755 hash=0 dir=- name=a",
	};

	for (size_t i = 0; i < sizeof(payloads) / sizeof(payloads[0]); i++)
		refused(raw(payloads[i]), NULL, 0x301, STORM_BCAST_EPERM,
			"bcast: rank 3: malformed manifest");
	ck_assert_int_eq(job.calls, 0);
}
END_TEST

START_TEST(test_refuse_bad_names)
{
	static const char *const names[] = {
		".hidden", "..", "a/b", "/etc/passwd", "tab\there", "del\x7f",
		"high\xc3\xa9",
	};
	char longname[256];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		mf_t m = mf(0x400 + i);

		m.name = names[i];
		refused_mf(&m, STORM_BCAST_EPERM,
			   "bcast: rank 3: malformed manifest");
	}
	memset(longname, 'x', 200);
	longname[200] = '\0';
	mf_t m = mf(0x4ff);

	m.name = longname;
	refused_mf(&m, STORM_BCAST_EPERM, "bcast: rank 3: malformed manifest");
	ck_assert_int_eq(job.calls, 0);
}
END_TEST

START_TEST(test_refuse_bad_paths)
{
	static const char *const dirs[] = {
		"relative/dir", "", "/tmp/../etc", "/tmp/./x", "-x",
	};

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		mf_t m = mf(0x500 + i);

		m.dir = dirs[i];
		refused_mf(&m, STORM_BCAST_EPERM,
			   "bcast: rank 3: malformed manifest");
	}
	ck_assert_int_eq(job.calls, 0);
}
END_TEST

START_TEST(test_refuse_other_transfer)
{
	mf_t m = mf(0x601);

	refused(cred(&m), NULL, 0x602, STORM_BCAST_EPERM,
		"bcast: rank 3: credential is for another transfer");
}
END_TEST

START_TEST(test_refuse_replayed_key)
{
	mf_t m = mf(0x701);
	nm_bcast_xfer_t *x;
	char *c;

	ck_assert_int_eq(check(cred(&m), NULL, m.key, &x), STORM_BCAST_READY);
	ck_assert_int_eq(nm_bcast_xfer_finish(x, false), STORM_BCAST_ABORTED);
	refused_mf(&m, STORM_BCAST_EPERM,
		   "bcast: rank 3: replayed manifest key 701");
	/* the key counts per relay */
	c = cred(&m);
	ck_assert_int_eq(nm_bcast_xfer_accept(c, NULL, ROOT_RANK + 1, m.key,
					      NM_XFER_READY, &x),
			 STORM_BCAST_READY);
	free(c);
}
END_TEST

START_TEST(test_refuse_uid_claim)
{
	mf_t m = mf(0x801);

	m.cuid = 1000;
	m.uid = 1001;
	refused_mf(&m, STORM_BCAST_EPERM,
		   "bcast: job 42: credential of uid 1000 claims uid 1001");
}
END_TEST

START_TEST(test_refuse_gid_claim)
{
	mf_t m = mf(0x802);

	m.cuid = m.uid = 1000;
	m.cgid = 1000;
	m.gid = 0;
	refused_mf(&m, STORM_BCAST_EPERM,
		   "bcast: job 42: credential of uid 1000 claims uid 1000");
}
END_TEST

/* ------------------------------------------------------- the job */
START_TEST(test_refuse_job_unknown)
{
	mf_t m = mf(0x901);

	job.rc = -ENOENT;
	refused_mf(&m, STORM_BCAST_EPERM,
		   "bcast: job 42: cannot look it up in slurmctld");
	m.key = 0x902;
	job.rc = -EIO;
	refused_mf(&m, STORM_BCAST_EPERM,
		   "bcast: job 42: cannot look it up in slurmctld");
}
END_TEST

START_TEST(test_refuse_job_not_running)
{
	mf_t m = mf(0xa01);

	job.running = false;
	refused_mf(&m, STORM_BCAST_EPERM,
		   "bcast: refusing a.out for job 42 from uid");
	ck_assert(logged(": job not running"));
}
END_TEST

START_TEST(test_refuse_not_on_node)
{
	mf_t m = mf(0xa02);

	job.nodes = "node[2-4]";
	refused_mf(&m, STORM_BCAST_EPERM,
		   ": this node is not in the job's allocation");
	m.key = 0xa03;
	job.nodes = NULL;
	refused_mf(&m, STORM_BCAST_EPERM,
		   ": this node is not in the job's allocation");
}
END_TEST

START_TEST(test_refuse_not_owner)
{
	mf_t m = mf(0xa04);

	m.cuid = m.uid = 1000;
	m.cgid = m.gid = 1000;
	job.owner = 1001;
	refused_mf(&m, STORM_BCAST_EPERM,
		   "bcast: refusing a.out for job 42 from uid 1000: uid does not own the job");
}
END_TEST

START_TEST(test_job_cache)
{
	/* a running job is asked for once; a refused one every time */
	mf_t m = mf(0xa05);
	nm_bcast_xfer_t *x;

	ck_assert_int_eq(check(cred(&m), NULL, m.key, &x), STORM_BCAST_READY);
	m.key = 0xa06;
	ck_assert_int_eq(check(cred(&m), NULL, m.key, &x), STORM_BCAST_READY);
	ck_assert_int_eq(job.calls, 1);
	nm_bcast_job_forget(JOB);
	job.running = false;
	m.key = 0xa07;
	refused_mf(&m, STORM_BCAST_EPERM, ": job not running");
	ck_assert_int_eq(job.calls, 2);
	ck_assert_int_eq(nm_bcast_job_runs_here(JOB), 0);
	ck_assert_int_eq(job.calls, 3);
}
END_TEST

/* --------------------------------------------------------- sizes */
START_TEST(test_refuse_too_large)
{
	mf_t m = mf(0xb01);

	m.size = MAX_BYTES + 1;
	refused_mf(&m, STORM_BCAST_EFBIG,
		   "bcast: job 42: a.out is 1048577 bytes, BcastMaxSize is 1048576");
}
END_TEST

START_TEST(test_refuse_does_not_fit)
{
	mf_t m = mf(0xb02);

	nm.conf.bcast_max_bytes = UINT64_MAX;
	m.size = (uint64_t) 1 << 60;
	refused_mf(&m, STORM_BCAST_ENOSPC,
		   "bcast: job 42: a.out (1152921504606846976 bytes) does not fit in ");
}
END_TEST

START_TEST(test_refuse_too_many_transfers)
{
	nm_bcast_xfer_t *x;

	for (int i = 0; i < NM_BCAST_MAX_XFERS; i++) {
		mf_t m = mf(0xc00 + i);

		m.size = 0;
		ck_assert_int_eq(check(cred(&m), NULL, m.key, &x),
				 STORM_BCAST_READY);
	}
	mf_t m = mf(0xcff);

	m.size = 0;
	ck_assert_int_eq(check(cred(&m), NULL, m.key, &x), STORM_BCAST_EIO);
	ck_assert(logged("bcast: too many transfers in progress"));
	ck_assert_int_eq(nm_bcast_xfer_count(), NM_BCAST_MAX_XFERS);
}
END_TEST

/* --------------------------------------------------------- paths */
START_TEST(test_refuse_job_dir_not_a_dir)
{
	mf_t m = mf(0xd01);
	char p[128];
	int fd;

	snprintf(p, sizeof(p), "%s/job_%u", dir, JOB);
	fd = open(p, O_WRONLY | O_CREAT, 0600);
	ck_assert_int_ge(fd, 0);
	close(fd);
	refused_mf(&m, STORM_BCAST_EIO,
		   "bcast: job 42: cannot create its directory in ");
}
END_TEST

START_TEST(test_refuse_job_dir_of_another_user)
{
	mf_t m = mf(0xd02);
	char p[128];

	if (getuid() != 0)
		return;		/* cannot give a directory away */
	snprintf(p, sizeof(p), "%s/job_%u", dir, JOB);
	ck_assert_int_eq(mkdir(p, 0700), 0);
	ck_assert_int_eq(chown(p, 4242, 4242), 0);
	refused_mf(&m, STORM_BCAST_EIO,
		   "bcast: job 42: cannot create its directory in ");
}
END_TEST

START_TEST(test_refuse_job_dir_link)
{
	mf_t m = mf(0xd03);
	char p[128];

	snprintf(p, sizeof(p), "%s/job_%u", dir, JOB);
	ck_assert_int_eq(symlink("/tmp", p), 0);
	refused_mf(&m, STORM_BCAST_EIO,
		   "bcast: job 42: cannot create its directory in ");
}
END_TEST

START_TEST(test_refuse_missing_destination)
{
	mf_t m = mf(0xd04);

	m.dir = "/nonexistent/storm";
	refused_mf(&m, STORM_BCAST_EIO,
		   "bcast: job 42: destination /nonexistent/storm: No such file or directory");
}
END_TEST

START_TEST(test_refuse_temporary_file_exists)
{
	mf_t m = mf(0xd05);
	char p[128];
	int fd;

	snprintf(p, sizeof(p), "%s/job_%u", dir, JOB);
	ck_assert_int_eq(mkdir(p, 0700), 0);
	snprintf(p, sizeof(p), "%s/job_%u/.storm-000000000d05", dir, JOB);
	fd = open(p, O_WRONLY | O_CREAT, 0600);
	ck_assert_int_ge(fd, 0);
	close(fd);
	refused_mf(&m, STORM_BCAST_EIO,
		   "bcast: job 42: cannot create a.out: File exists");
}
END_TEST

/* --------------------------------------------------- attestation */
static char *attestation(unsigned uid, uint64_t key, unsigned jobid,
			 const char *nodes)
{
	char *s;

	ck_assert_int_ge(asprintf(&s, "%u 0 -|storm-bcast-job-1 key=%" PRIx64 " job=%u owner=%u nodes=%s",
				  uid, key, jobid, (unsigned) getuid(), nodes),
			 0);
	return s;
}

START_TEST(test_attested)
{
	mf_t m = mf(0xe01);
	nm_bcast_xfer_t *x;
	char *a = attestation(0, m.key, JOB, "node[1-2]");

	ck_assert_int_eq(check(cred(&m), a, m.key, &x), STORM_BCAST_READY);
	ck_assert_int_eq(job.calls, 0);
	ck_assert(logged("(job checked by the relay)"));
	free(a);
}
END_TEST

START_TEST(test_refuse_attested_elsewhere)
{
	/* the relay's slurmctld lookup counts: no second opinion */
	mf_t m = mf(0xe02);
	char *a = attestation(0, m.key, JOB, "node[5-6]");

	refused(cred(&m), a, m.key, STORM_BCAST_EPERM,
		": this node is not in the job's allocation");
	ck_assert_int_eq(job.calls, 0);
	free(a);
}
END_TEST

START_TEST(test_attestation_unusable)
{
	/* each falls back on slurmctld */
	struct { char *att; const char *why; } c[] = {
		{ strdup("E15"), "not usable (" },
		{ attestation(1000, 0xe10, JOB, "node1"), "(not made by root)" },
		{ strdup("0 0 N|storm-bcast-job-1 key=e11 job=42 owner=0 nodes=node1"), "(malformed)" },
		{ strdup("0 0 -|storm-bcast-job-2 key=e12 job=42 owner=0 nodes=node1"), "(malformed)" },
		{ attestation(0, 0xfff, JOB, "node1"), "(for another transfer)" },
		{ attestation(0, 0xe14, JOB + 1, "node1"), "(for another transfer)" },
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		mf_t m = mf(0xe10 + i);
		nm_bcast_xfer_t *x;

		nm_bcast_job_forget(JOB);
		ck_assert_int_eq(check(cred(&m), c[i].att, m.key, &x),
				 STORM_BCAST_READY);
		ck_assert_int_eq(job.calls, (int) i + 1);
		ck_assert_msg(logged(c[i].why), "not logged: %s", c[i].why);
		free(c[i].att);
	}
	ck_assert(logged("bcast: rank 3: the relay's job attestation is not usable"));
}
END_TEST

START_TEST(test_relay_makes_attestation)
{
	mf_t m = mf(0xe20);
	nm_bcast_xfer_t *x;
	char want[128];
	char *c = cred(&m);
	int st = nm_bcast_xfer_accept(c, NULL, ROOT_RANK, m.key,
				      NM_XFER_RECEIVING, &x);

	free(c);
	ck_assert_int_eq(st, STORM_BCAST_READY);
	ck_assert(logged("from srun, to relay to the step's nodes"));
	ck_assert_ptr_nonnull(nm_bcast_xfer_attest(x));
	snprintf(want, sizeof(want), "0 0 -|storm-bcast-job-1 key=e20 job=42 owner=%u nodes=node[1-4]",
		 (unsigned) getuid());
	ck_assert_str_eq(nm_bcast_xfer_attest(x), want);
	/* the relay writes the data itself: none comes over the fabric */
	ck_assert_ptr_null(nm_bcast_xfer_receive(ROOT_RANK, m.key,
						 sizeof(data)));
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("nm_manifest");
	TCase *ok = tcase_create("accepted");
	TCase *cr = tcase_create("credential");
	TCase *jb = tcase_create("job");
	TCase *fs = tcase_create("sizes and paths");
	TCase *at = tcase_create("attestation");
	TCase *all[] = { ok, cr, jb, fs, at };

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		tcase_add_checked_fixture(all[i], setup, teardown);
		suite_add_tcase(s, all[i]);
	}
	tcase_add_test(ok, test_accepted);
	tcase_add_test(ok, test_accepted_replayed_credential);
	tcase_add_test(ok, test_accepted_tree);
	tcase_add_test(ok, test_tree_that_cannot_be_extracted_leaves_nothing);
	tcase_add_test(ok, test_accepted_empty_file);
	tcase_add_test(ok, test_accepted_mode_bits_only);
	tcase_add_test(ok, test_accepted_absolute_destination);
	tcase_add_test(ok, test_accepted_at_max_size);
	tcase_add_test(ok, test_checksum_mismatch_dropped);
	tcase_add_test(ok, test_root_sends_for_any_job);
	tcase_add_test(cr, test_refuse_bad_credential);
	tcase_add_test(cr, test_refuse_unterminated_payload);
	tcase_add_test(cr, test_refuse_malformed);
	tcase_add_test(cr, test_refuse_bad_names);
	tcase_add_test(cr, test_refuse_bad_paths);
	tcase_add_test(cr, test_refuse_other_transfer);
	tcase_add_test(cr, test_refuse_replayed_key);
	tcase_add_test(cr, test_refuse_uid_claim);
	tcase_add_test(cr, test_refuse_gid_claim);
	tcase_add_test(jb, test_refuse_job_unknown);
	tcase_add_test(jb, test_refuse_job_not_running);
	tcase_add_test(jb, test_refuse_not_on_node);
	tcase_add_test(jb, test_refuse_not_owner);
	tcase_add_test(jb, test_job_cache);
	tcase_add_test(fs, test_refuse_too_large);
	tcase_add_test(fs, test_refuse_does_not_fit);
	tcase_add_test(fs, test_refuse_too_many_transfers);
	tcase_add_test(fs, test_refuse_job_dir_not_a_dir);
	tcase_add_test(fs, test_refuse_job_dir_of_another_user);
	tcase_add_test(fs, test_refuse_job_dir_link);
	tcase_add_test(fs, test_refuse_missing_destination);
	tcase_add_test(fs, test_refuse_temporary_file_exists);
	tcase_add_test(at, test_attested);
	tcase_add_test(at, test_refuse_attested_elsewhere);
	tcase_add_test(at, test_attestation_unusable);
	tcase_add_test(at, test_relay_makes_attestation);
	return s;
}

int main(void)
{
	return storm_check_run(suite());
}
