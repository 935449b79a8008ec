/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test_bcast_libs.c - the shared-library closure srun sends with a program
 * (src/plugins/bcast/bcast_libs.c), against programs and libraries built
 * here with gcc: $ORIGIN in RPATH and RUNPATH, LD_LIBRARY_PATH, indirect
 * dependencies, the site's exclusions, missing libraries, static programs,
 * scripts, a loader that fails or hangs; and the parser on canned
 * listings.
 */
#include <check.h>
#include <elf.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "src/common/storm_time.h"
#include "src/plugins/bcast/bcast_libs.h"

#include "check_run.h"

#define SLURM_DEFAULT_EXCLUDE "/lib,/usr/lib,/lib64,/usr/lib64"

static char T[512];	/* the fixtures' directory, a real path */
static bool have_static, have_static_pie;

static int sh(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void put(const char *rel, const char *text, mode_t mode)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", T, rel);
	f = fopen(path, "w");
	if (!f || fputs(text, f) < 0 || fclose(f)) {
		perror(path);
		exit(EXIT_FAILURE);
	}
	chmod(path, mode);
}

static void must(int rc, const char *what)
{
	if (rc) {
		fprintf(stderr, "fixture failed: %s\n", what);
		exit(EXIT_FAILURE);
	}
}

#define CC "gcc -O0 -w"

/* Built once, before the tests fork:
 *   lib/libdep.so, lib/libhello.so (needs libdep, RUNPATH $ORIGIN)
 *   bin/prog_rpath    DT_RPATH $ORIGIN/../lib
 *   bin/prog_runpath  DT_RUNPATH $ORIGIN/../lib
 *   bin/prog_plain    no path: LD_LIBRARY_PATH finds lib/
 *   lib2/libhello.so (no RUNPATH) + lib2/libdep.so, bin2/prog_runpath2:
 *                     RUNPATH does not reach libhello's own needs
 *   bin/prog_gone     needs gone/libgone.so, deleted after the link
 *   sp ace/lib/libhello.so + sp ace/bin/prog: a path with spaces
 *   link/prog -> ../bin/prog_rpath
 *   bin/prog_slow, bin/prog_fail, bin/prog_noldr: PT_INTERP a script that
 *                     hangs, one that fails, one that does not exist
 *   bin/prog_static, bin/prog_static_pie (when libc.a is installed)
 *   bin/script.sh, data.txt */
static void build_fixtures(void)
{
	char tmpl[] = "/tmp/test_bcast_libs.XXXXXX", real[PATH_MAX];

	if (!mkdtemp(tmpl) || !realpath(tmpl, real) ||
	    strlen(real) >= sizeof(T)) {
		perror("mkdtemp");
		exit(EXIT_FAILURE);
	}
	strcpy(T, real);
	must(sh("cd '%s' && mkdir -p src lib lib2 bin bin2 gone link "
		"'sp ace/lib' 'sp ace/bin' real", T), "dirs");
	put("src/dep.c", "int dep(void) { return 42; }\n", 0644);
	/* libhello needs libc too, libdep nothing else */
	put("src/hello.c", "#include <unistd.h>\nint dep(void);\n"
	    "int hello(void) { return dep() + (getpid() < 0); }\n", 0644);
	put("src/gone.c", "int gone(void) { return 1; }\n", 0644);
	put("src/main.c", "int hello(void);\n"
	    "int main(void) { return hello() == 42 ? 0 : 1; }\n", 0644);
	put("src/gonemain.c", "int gone(void);\n"
	    "int main(void) { return gone(); }\n", 0644);
	put("src/plain.c", "int main(void) { return 0; }\n", 0644);

	must(sh("cd '%s' && " CC " -shared -fPIC -o lib/libdep.so src/dep.c && "
		CC " -shared -fPIC -o lib/libhello.so src/hello.c -Llib -ldep "
		"-Wl,--enable-new-dtags -Wl,-rpath,'$ORIGIN'", T), "lib");
	must(sh("cd '%s' && " CC " -o bin/prog_rpath src/main.c -Llib -lhello "
		"-Wl,-rpath-link,lib -Wl,--disable-new-dtags "
		"-Wl,-rpath,'$ORIGIN/../lib'", T), "prog_rpath");
	must(sh("cd '%s' && " CC " -o bin/prog_runpath src/main.c -Llib "
		"-lhello -Wl,-rpath-link,lib -Wl,--enable-new-dtags "
		"-Wl,-rpath,'$ORIGIN/../lib'", T), "prog_runpath");
	must(sh("cd '%s' && " CC " -o bin/prog_plain src/main.c -Llib -lhello "
		"-Wl,-rpath-link,lib", T), "prog_plain");
	must(sh("cd '%s' && cp lib/libdep.so lib2/ && " CC " -shared -fPIC "
		"-o lib2/libhello.so src/hello.c -Llib2 -ldep && "
		CC " -o bin2/prog_runpath2 src/main.c -Llib2 -lhello "
		"-Wl,-rpath-link,lib2 -Wl,--enable-new-dtags "
		"-Wl,-rpath,'$ORIGIN/../lib2'", T), "prog_runpath2");
	must(sh("cd '%s' && " CC " -shared -fPIC -o gone/libgone.so "
		"src/gone.c && " CC " -o bin/prog_gone src/gonemain.c -Lgone "
		"-lgone -Wl,-rpath,'$ORIGIN/../gone' && rm gone/libgone.so", T),
	     "prog_gone");
	must(sh("cd '%s' && cp lib/libdep.so lib/libhello.so 'sp ace/lib/' && "
		CC " -o 'sp ace/bin/prog' src/main.c -Llib -lhello "
		"-Wl,-rpath-link,lib -Wl,-rpath,'$ORIGIN/../lib'", T),
	     "spaces");
	must(sh("cd '%s' && ln -s ../bin/prog_rpath link/prog", T), "link");

	put("slowld", "#!/bin/sh\nexec sleep 117\n", 0755);
	put("failld", "#!/bin/sh\necho 'failld: no good' >&2\n"
	    "echo 'second line' >&2\nexit 3\n", 0755);
	must(sh("cd '%s' && " CC " -o bin/prog_slow src/plain.c "
		"-Wl,--dynamic-linker='%s/slowld' && "
		CC " -o bin/prog_fail src/plain.c "
		"-Wl,--dynamic-linker='%s/failld' && "
		CC " -o bin/prog_noldr src/plain.c "
		"-Wl,--dynamic-linker=/nonexistent/ld.so", T, T, T),
	     "odd loaders");

	have_static = !sh("cd '%s' && " CC " -static -o bin/prog_static "
			  "src/plain.c 2>/dev/null", T);
	have_static_pie = !sh("cd '%s' && " CC " -static-pie "
			      "-o bin/prog_static_pie src/plain.c 2>/dev/null",
			      T);
	put("bin/script.sh", "#!/bin/sh\necho hi\n", 0755);
	put("data.txt", "not an ELF file\n", 0644);
}

/* ---------------------------------------------------------------------
 * helpers
 */

static char *fx(const char *rel)
{
	static char buf[4][PATH_MAX];
	static int k;

	k = (k + 1) % 4;
	snprintf(buf[k], sizeof(buf[k]), "%s/%s", T, rel);
	return buf[k];
}

static const char *base(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* libs, resolved, are exactly the fixture files rels, in this order */
static void expect_real(char **libs, int n, int want, const char *const *rels)
{
	ck_assert_int_eq(n, want);
	for (int i = 0; i < n; i++) {
		char real[PATH_MAX];

		ck_assert_ptr_nonnull(libs[i]);
		ck_assert_msg(libs[i][0] == '/', "not absolute: %s", libs[i]);
		ck_assert_msg(realpath(libs[i], real), "%s: %s", libs[i],
			      strerror(errno));
		ck_assert_str_eq(real, fx(rels[i]));
	}
	ck_assert_ptr_null(libs[n]);
}

static bool has_base_prefix(char **libs, const char *prefix)
{
	for (char **p = libs; *p; p++)
		if (!strncmp(base(*p), prefix, strlen(prefix)))
			return true;
	return false;
}

static int closure(const char *file, const char *exclude, char ***libs,
		   int *missing, char *err)
{
	int n = bcast_libs_closure(file, exclude, libs, missing, err, 512);

	if (n < 0)
		ck_assert_ptr_null(*libs);
	else
		ck_assert_ptr_nonnull(*libs);
	return n;
}

static void self_interp(char *buf, size_t len)
{
	ck_assert_int_eq(bcast_libs_interp("/proc/self/exe", buf, len), 1);
}

/* ---------------------------------------------------------------------
 * closures of real programs
 */

START_TEST(rpath_origin_with_indirect_dependency)
{
	static const char *const want[] = { "lib/libhello.so", "lib/libdep.so" };
	char err[512] = "", **libs;
	int missing = -1, n;

	unsetenv("LD_LIBRARY_PATH");
	n = closure(fx("bin/prog_rpath"), SLURM_DEFAULT_EXCLUDE, &libs,
		    &missing, err);
	ck_assert_msg(n >= 0, "%s", err);
	expect_real(libs, n, 2, want);
	ck_assert_int_eq(missing, 0);
	/* as the loader names them: $ORIGIN expanded, not resolved */
	ck_assert_str_eq(libs[0], fx("bin/../lib/libhello.so"));
	bcast_libs_free(libs);
}
END_TEST

START_TEST(runpath_origin)
{
	static const char *const want[] = { "lib/libhello.so", "lib/libdep.so" };
	char err[512] = "", **libs;
	int missing = -1, n;

	unsetenv("LD_LIBRARY_PATH");
	n = closure(fx("bin/prog_runpath"), SLURM_DEFAULT_EXCLUDE, &libs,
		    &missing, err);
	ck_assert_msg(n >= 0, "%s", err);
	expect_real(libs, n, 2, want);
	ck_assert_int_eq(missing, 0);
	bcast_libs_free(libs);
}
END_TEST

/* The loader's rule, not DT_NEEDED walked by hand: a RUNPATH serves the
 * program's own needs only, so libhello's libdep is not found beside it. */
START_TEST(runpath_not_inherited)
{
	static const char *const want[] = { "lib2/libhello.so" };
	char err[512] = "", **libs;
	int missing = -1, n;

	unsetenv("LD_LIBRARY_PATH");
	n = closure(fx("bin2/prog_runpath2"), SLURM_DEFAULT_EXCLUDE, &libs,
		    &missing, err);
	ck_assert_msg(n >= 0, "%s", err);
	expect_real(libs, n, 1, want);
	ck_assert_int_eq(missing, 1);
	bcast_libs_free(libs);
}
END_TEST

START_TEST(ld_library_path_from_environment)
{
	static const char *const want[] = { "lib/libhello.so", "lib/libdep.so" };
	char err[512] = "", **libs;
	int missing = -1, n;

	setenv("LD_LIBRARY_PATH", fx("lib"), 1);
	n = closure(fx("bin/prog_plain"), SLURM_DEFAULT_EXCLUDE, &libs,
		    &missing, err);
	ck_assert_msg(n >= 0, "%s", err);
	expect_real(libs, n, 2, want);
	ck_assert_str_eq(libs[0], fx("lib/libhello.so"));
	ck_assert_int_eq(missing, 0);
	bcast_libs_free(libs);

	/* a relative entry: absolute against the working directory */
	ck_assert_int_eq(chdir(T), 0);
	setenv("LD_LIBRARY_PATH", "lib", 1);
	n = closure(fx("bin/prog_plain"), SLURM_DEFAULT_EXCLUDE, &libs,
		    &missing, err);
	ck_assert_msg(n >= 0, "%s", err);
	expect_real(libs, n, 2, want);
	ck_assert_str_eq(libs[0], fx("lib/libhello.so"));
	bcast_libs_free(libs);

	/* without it the program's library is missing, and with it what
	 * that library would have needed */
	unsetenv("LD_LIBRARY_PATH");
	n = closure(fx("bin/prog_plain"), SLURM_DEFAULT_EXCLUDE, &libs,
		    &missing, err);
	ck_assert_msg(n >= 0, "%s", err);
	ck_assert_int_eq(n, 0);
	ck_assert_int_eq(missing, 1);
	bcast_libs_free(libs);
}
END_TEST

START_TEST(none_keeps_system_libraries)
{
	char err[512] = "", interp[PATH_MAX], **libs;
	int n;

	unsetenv("LD_LIBRARY_PATH");
	self_interp(interp, sizeof(interp));
	for (int i = 0; i < 3; i++) {
		const char *ex = i == 0 ? "none" : i == 1 ? "" : NULL;

		n = closure(fx("bin/prog_rpath"), ex, &libs, NULL, err);
		ck_assert_msg(n >= 3, "%d: %s", n, err);
		ck_assert(has_base_prefix(libs, "libc.so."));
		ck_assert_str_eq(base(libs[0]), "libhello.so");
		for (int j = 0; j < n; j++) {
			ck_assert_str_ne(libs[j], interp);
			ck_assert(!strstr(libs[j], "vdso"));
			for (int k = j + 1; k < n; k++)
				ck_assert_str_ne(libs[j], libs[k]);
		}
		bcast_libs_free(libs);
	}
}
END_TEST

/* Slurm's default list drops everything a Debian system has in its own
 * directories, whichever of /lib and /usr/lib the loader names. */
START_TEST(default_exclude_drops_system_dirs)
{
	char err[512] = "", **all, **libs;
	int n, nall;

	unsetenv("LD_LIBRARY_PATH");
	nall = closure(fx("bin/prog_rpath"), "none", &all, NULL, err);
	ck_assert_msg(nall >= 3, "%s", err);
	n = closure(fx("bin/prog_rpath"), SLURM_DEFAULT_EXCLUDE, &libs, NULL,
		    err);
	ck_assert_int_eq(n, 2);
	for (int i = 0; i < nall; i++) {
		bool fixture = !strncmp(all[i], T, strlen(T)) &&
			       all[i][strlen(T)] == '/';

		ck_assert_msg(fixture || bcast_libs_excluded(all[i],
					 SLURM_DEFAULT_EXCLUDE),
			      "kept: %s", all[i]);
	}
	bcast_libs_free(all);
	bcast_libs_free(libs);
}
END_TEST

START_TEST(missing_library_counted)
{
	char err[512] = "", **libs;
	int missing = -1, n;

	unsetenv("LD_LIBRARY_PATH");
	n = closure(fx("bin/prog_gone"), "none", &libs, &missing, err);
	ck_assert_msg(n >= 1, "%d: %s", n, err);
	ck_assert_int_eq(missing, 1);
	ck_assert(has_base_prefix(libs, "libc.so."));
	for (char **p = libs; *p; p++)
		ck_assert(!strstr(*p, "libgone"));
	bcast_libs_free(libs);

	n = closure(fx("bin/prog_gone"), SLURM_DEFAULT_EXCLUDE, &libs, NULL,
		    err);
	ck_assert_int_eq(n, 0);
	bcast_libs_free(libs);
}
END_TEST

START_TEST(path_with_spaces)
{
	static const char *const want[] = { "sp ace/lib/libhello.so",
					    "sp ace/lib/libdep.so" };
	char err[512] = "", **libs;
	int n;

	unsetenv("LD_LIBRARY_PATH");
	n = closure(fx("sp ace/bin/prog"), SLURM_DEFAULT_EXCLUDE, &libs,
		    NULL, err);
	ck_assert_msg(n >= 0, "%s", err);
	expect_real(libs, n, 2, want);
	bcast_libs_free(libs);
}
END_TEST

/* Run through a symlink, a program's $ORIGIN is its real directory (the
 * kernel's /proc/self/exe): link/ has no ../lib, bin/ has. */
START_TEST(symlinked_program_origin_is_real_dir)
{
	static const char *const want[] = { "lib/libhello.so", "lib/libdep.so" };
	char err[512] = "", **libs;
	int missing = -1, n;

	unsetenv("LD_LIBRARY_PATH");
	ck_assert_int_eq(sh("'%s' && '%s'", fx("link/prog"),
			    fx("bin/prog_rpath")), 0);
	n = closure(fx("link/prog"), SLURM_DEFAULT_EXCLUDE, &libs, &missing,
		    err);
	ck_assert_msg(n >= 0, "%s", err);
	expect_real(libs, n, 2, want);
	ck_assert_int_eq(missing, 0);
	bcast_libs_free(libs);

	/* a relative name works as well */
	ck_assert_int_eq(chdir(fx("link")), 0);
	n = closure("prog", SLURM_DEFAULT_EXCLUDE, &libs, &missing, err);
	ck_assert_msg(n >= 0, "%s", err);
	expect_real(libs, n, 2, want);
	bcast_libs_free(libs);
}
END_TEST

START_TEST(shared_library_as_file)
{
	static const char *const want[] = { "lib/libdep.so" };
	char err[512] = "", **libs;
	int missing = -1, n;

	unsetenv("LD_LIBRARY_PATH");
	n = closure(fx("lib/libhello.so"), SLURM_DEFAULT_EXCLUDE, &libs,
		    &missing, err);
	ck_assert_msg(n >= 0, "%s", err);
	expect_real(libs, n, 1, want);
	ck_assert_int_eq(missing, 0);
	bcast_libs_free(libs);

	n = closure(fx("lib/libhello.so"), "none", &libs, &missing, err);
	ck_assert_msg(n >= 2, "%d: %s", n, err);
	ck_assert(has_base_prefix(libs, "libc.so."));
	for (char **p = libs; *p; p++)
		ck_assert_str_ne(base(*p), "libhello.so");
	bcast_libs_free(libs);

	/* a library whose own need is not found: the loader's trace mode
	 * on a library, still never run */
	n = closure(fx("lib2/libhello.so"), "none", &libs, &missing, err);
	ck_assert_msg(n >= 1, "%d: %s", n, err);
	ck_assert_int_eq(missing, 1);
	bcast_libs_free(libs);
}
END_TEST

START_TEST(static_program_gives_zero)
{
	char err[512] = "", **libs;
	int missing = -1;

	if (!have_static && !have_static_pie) {
		fprintf(stderr, "test_bcast_libs: no static libc (libc.a), "
			"static programs not tested\n");
		return;
	}
	if (have_static) {
		ck_assert_int_eq(closure(fx("bin/prog_static"), "none", &libs,
					 &missing, err), 0);
		ck_assert_ptr_null(libs[0]);
		ck_assert_int_eq(missing, 0);
		bcast_libs_free(libs);
	}
	if (have_static_pie) {
		/* ET_DYN without PT_INTERP, like a library: the loader says
		 * "statically linked" */
		ck_assert_int_eq(closure(fx("bin/prog_static_pie"), "none",
					 &libs, &missing, err), 0);
		ck_assert_ptr_null(libs[0]);
		bcast_libs_free(libs);
	}
}
END_TEST

START_TEST(script_and_data_give_zero)
{
	const char *files[] = { "bin/script.sh", "data.txt", "src/main.c" };
	char err[512] = "", **libs;

	for (int i = 0; i < 3; i++) {
		int missing = -1;

		ck_assert_int_eq(closure(fx(files[i]), "none", &libs, &missing,
					 err), 0);
		ck_assert_ptr_null(libs[0]);
		ck_assert_int_eq(missing, 0);
		bcast_libs_free(libs);
	}
}
END_TEST

/* Copy of prog_rpath with a byte of its ELF header changed. */
static const char *patched(const char *name, long off, const void *bytes,
			   size_t len)
{
	const char *out = fx(name);
	FILE *f;

	ck_assert_int_eq(sh("cp '%s' '%s'", fx("bin/prog_rpath"), out), 0);
	f = fopen(out, "r+");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fseek(f, off, SEEK_SET), 0);
	ck_assert_uint_eq(fwrite(bytes, 1, len, f), len);
	ck_assert_int_eq(fclose(f), 0);
	return out;
}

START_TEST(other_class_or_machine_gives_zero)
{
	unsigned char class32 = ELFCLASS32;
#if defined(__aarch64__)
	uint16_t arm = EM_X86_64;
#else
	uint16_t arm = EM_AARCH64;
#endif
	char err[512] = "", buf[PATH_MAX], **libs;
	const char *f;

	f = patched("bin/prog_class32", EI_CLASS, &class32, 1);
	ck_assert_int_eq(bcast_libs_interp(f, buf, sizeof(buf)), 0);
	ck_assert_int_eq(closure(f, "none", &libs, NULL, err), 0);
	bcast_libs_free(libs);

	/* e_machine, in this host's byte order as the file is */
	f = patched("bin/prog_arm", offsetof(Elf64_Ehdr, e_machine), &arm, 2);
	ck_assert_int_eq(bcast_libs_interp(f, buf, sizeof(buf)), 0);
	ck_assert_int_eq(closure(f, "none", &libs, NULL, err), 0);
	bcast_libs_free(libs);
}
END_TEST

START_TEST(unreadable_file_fails)
{
	char err[512] = "", **libs;

	ck_assert_int_eq(closure(fx("no/such/file"), "none", &libs, NULL,
				 err), -1);
	ck_assert_msg(strstr(err, strerror(ENOENT)), "%s", err);
	ck_assert_int_eq(closure(fx("lib"), "none", &libs, NULL, err), -1);
	ck_assert_msg(strstr(err, strerror(EISDIR)), "%s", err);
}
END_TEST

START_TEST(failing_loader_first_stderr_line)
{
	char err[512] = "", **libs;

	ck_assert_int_eq(closure(fx("bin/prog_fail"), "none", &libs, NULL,
				 err), -1);
	ck_assert_str_eq(err, "failld: no good");
	ck_assert_int_eq(closure(fx("bin/prog_noldr"), "none", &libs, NULL,
				 err), -1);
	ck_assert_msg(strstr(err, "/nonexistent/ld.so") &&
		      strstr(err, strerror(ENOENT)), "%s", err);
	/* every child reaped */
	ck_assert_int_eq(waitpid(-1, NULL, WNOHANG), -1);
	ck_assert_int_eq(errno, ECHILD);
}
END_TEST

START_TEST(hanging_loader_killed_at_deadline)
{
	char err[512] = "", **libs;
	uint64_t t0 = storm_mono_ns(), ms;

	ck_assert_int_eq(closure(fx("bin/prog_slow"), "none", &libs, NULL,
				 err), -1);
	ms = (storm_mono_ns() - t0) / 1000000;
	ck_assert_msg(ms >= BCAST_LIBS_TIMEOUT_MS - 50, "%llu ms",
		      (unsigned long long) ms);
	/* generous: the host may be busy, but it must not wait for the
	 * loader's own two minutes */
	ck_assert_msg(ms < BCAST_LIBS_TIMEOUT_MS + 20000, "%llu ms",
		      (unsigned long long) ms);
	ck_assert_msg(strstr(err, "within"), "%s", err);
	ck_assert_int_eq(waitpid(-1, NULL, WNOHANG), -1);
	ck_assert_int_eq(errno, ECHILD);
	/* the whole process group went: no sleep of the fixture's left */
	ck_assert_int_ne(sh("pgrep -f '^sleep 117$' >/dev/null"), 0);
}
END_TEST

/* ---------------------------------------------------------------------
 * the interpreter
 */

START_TEST(interp_of_files)
{
	char buf[PATH_MAX], self[PATH_MAX], small[4];

	self_interp(self, sizeof(self));
	ck_assert(self[0] == '/');
	ck_assert_int_eq(bcast_libs_interp(fx("bin/prog_rpath"), buf,
					   sizeof(buf)), 1);
	ck_assert_str_eq(buf, self);
	ck_assert_int_eq(bcast_libs_interp(fx("bin/prog_slow"), buf,
					   sizeof(buf)), 1);
	ck_assert_str_eq(buf, fx("slowld"));
	ck_assert_int_eq(bcast_libs_interp(fx("lib/libhello.so"), buf,
					   sizeof(buf)), 0);
	ck_assert_int_eq(bcast_libs_interp(fx("bin/script.sh"), buf,
					   sizeof(buf)), 0);
	ck_assert_int_eq(bcast_libs_interp(fx("data.txt"), buf,
					   sizeof(buf)), 0);
	if (have_static)
		ck_assert_int_eq(bcast_libs_interp(fx("bin/prog_static"), buf,
						   sizeof(buf)), 0);
	/* truncated: the header, not the program headers */
	ck_assert_int_eq(sh("head -c 100 '%s' > '%s'", fx("bin/prog_rpath"),
			    fx("bin/truncated")), 0);
	ck_assert_int_eq(bcast_libs_interp(fx("bin/truncated"), buf,
					   sizeof(buf)), 0);
	errno = 0;
	ck_assert_int_eq(bcast_libs_interp(fx("nope"), buf, sizeof(buf)), -1);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_int_eq(bcast_libs_interp(fx("bin/prog_rpath"), small,
					   sizeof(small)), -1);
	ck_assert_int_eq(errno, ERANGE);
	/* unreadable (root reads anything: then the case says nothing) */
	ck_assert_int_eq(sh("cp '%s' '%s' && chmod 0 '%s'",
			    fx("bin/prog_rpath"), fx("bin/noread"),
			    fx("bin/noread")), 0);
	if (access(fx("bin/noread"), R_OK)) {
		ck_assert_int_eq(bcast_libs_interp(fx("bin/noread"), buf,
						   sizeof(buf)), -1);
		ck_assert_int_eq(errno, EACCES);
	}
}
END_TEST

/* ---------------------------------------------------------------------
 * exclusions
 */

START_TEST(excluded_component_boundary)
{
	ck_assert(bcast_libs_excluded("/usr/lib/x/libc.so.6", "/usr/lib"));
	ck_assert(bcast_libs_excluded("/usr/lib", "/usr/lib"));
	ck_assert(!bcast_libs_excluded("/usr/lib64x/libfoo.so", "/usr/lib"));
	ck_assert(!bcast_libs_excluded("/usr/libfoo.so", "/usr/lib"));
	ck_assert(!bcast_libs_excluded("/usr/lib/libfoo.so", "/usr/li"));
	ck_assert(bcast_libs_excluded("/opt/b/libx.so", "/opt/a,/opt/b"));
	ck_assert(!bcast_libs_excluded("/opt/c/libx.so", "/opt/a,/opt/b"));
	ck_assert(bcast_libs_excluded("/anything/at/all.so", "/"));
	/* trailing slashes and spaces around entries */
	ck_assert(bcast_libs_excluded("/usr/lib/libfoo.so", "/usr/lib/"));
	ck_assert(bcast_libs_excluded("/usr/lib/libfoo.so", "/opt,/usr/lib//"));
	ck_assert(!bcast_libs_excluded("/usr/lib64x/libfoo.so", "/usr/lib/"));
	ck_assert(bcast_libs_excluded("/usr/lib/libfoo.so", " /opt , /usr/lib "));
	/* none, empty, relative entries */
	ck_assert(!bcast_libs_excluded("/usr/lib/libfoo.so", "none"));
	ck_assert(!bcast_libs_excluded("/usr/lib/libfoo.so", "NONE"));
	ck_assert(!bcast_libs_excluded("/usr/lib/libfoo.so", ""));
	ck_assert(!bcast_libs_excluded("/usr/lib/libfoo.so", NULL));
	ck_assert(!bcast_libs_excluded("/usr/lib/libfoo.so", "usr/lib"));
	ck_assert(!bcast_libs_excluded("/usr/lib/libfoo.so", ",,"));
	ck_assert(!bcast_libs_excluded("relative/libfoo.so", "/"));
	/* ".", ".." and doubled slashes in a name, taken by name (these
	 * paths do not exist, so no realpath helps) */
	ck_assert(bcast_libs_excluded("/nx/usr//lib/./x.so", "/nx/usr/lib"));
	ck_assert(bcast_libs_excluded("/nx/a/bin/../lib/x.so", "/nx/a/lib"));
	ck_assert(!bcast_libs_excluded("/nx/a/bin/../lib/x.so", "/nx/a/bin"));
	ck_assert(bcast_libs_excluded("/nx/../../nx/x.so", "/nx"));
}
END_TEST

START_TEST(excluded_through_symlinks)
{
	char lib[PATH_MAX];
	struct stat st;

	ck_assert_int_eq(sh("mkdir -p '%s' && touch '%s' && "
			    "ln -sfn real '%s'", fx("real/sub"),
			    fx("real/sub/x.so"), fx("alias")), 0);
	/* the path as named, its realpath, the directory's realpath */
	ck_assert(bcast_libs_excluded(fx("alias/sub/x.so"), fx("alias")));
	ck_assert(bcast_libs_excluded(fx("alias/sub/x.so"), fx("real")));
	ck_assert(bcast_libs_excluded(fx("real/sub/x.so"), fx("alias")));
	ck_assert(bcast_libs_excluded(fx("real/sub/x.so"), fx("alias/sub/")));
	ck_assert(!bcast_libs_excluded(fx("real/sub/x.so"), fx("rea")));
	/* ".." in a loader's name: the realpath decides */
	ck_assert(bcast_libs_excluded(fx("bin/../lib/libdep.so"), fx("lib")));
	ck_assert(!bcast_libs_excluded(fx("bin/../lib/libdep.so"), fx("bin")));

	/* Debian: /lib is a symlink to usr/lib */
	if (!lstat("/lib", &st) && S_ISLNK(st.st_mode) &&
	    realpath("/lib", lib) && !strcmp(lib, "/usr/lib")) {
		ck_assert(bcast_libs_excluded("/lib/x86_64-linux-gnu/libc.so.6",
					      "/usr/lib") ||
			  access("/lib/x86_64-linux-gnu/libc.so.6", F_OK));
		ck_assert(bcast_libs_excluded("/usr/lib/x86_64-linux-gnu",
					      "/lib"));
	}
}
END_TEST

/* ---------------------------------------------------------------------
 * the parser, on canned listings
 */

static int parse(const char *out, const char *interp, const char *ex,
		 char ***libs, int *missing)
{
	char err[256] = "";
	int n = bcast_libs_parse(out, interp, ex, libs, missing, err,
				 sizeof(err));

	ck_assert_msg(n >= 0, "%s", err);
	ck_assert_ptr_nonnull(*libs);
	ck_assert_ptr_null((*libs)[n]);
	return n;
}

START_TEST(parse_typical_listing)
{
	const char *out =
		"\tlinux-vdso.so.1 (0x00007ffd5a1e4000)\n"
		"\tlibfoo.so.1 => /opt/x/lib/libfoo.so.1 (0x00007f0a1c000000)\n"
		"\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f0a1be00000)\n"
		"\tlibbar.so => not found\n"
		"\t/lib64/ld-linux-x86-64.so.2 (0x00007f0a1c200000)\n";
	char **libs;
	int missing = -1, n;

	n = parse(out, "/lib64/ld-linux-x86-64.so.2", "none", &libs, &missing);
	ck_assert_int_eq(n, 2);
	ck_assert_str_eq(libs[0], "/opt/x/lib/libfoo.so.1");
	ck_assert_str_eq(libs[1], "/lib/x86_64-linux-gnu/libc.so.6");
	ck_assert_int_eq(missing, 1);
	bcast_libs_free(libs);

	n = parse(out, "/lib64/ld-linux-x86-64.so.2", SLURM_DEFAULT_EXCLUDE,
		  &libs, &missing);
	ck_assert_int_eq(n, 1);
	ck_assert_str_eq(libs[0], "/opt/x/lib/libfoo.so.1");
	bcast_libs_free(libs);

	/* no interpreter named: the loader's own line is a library */
	n = parse(out, NULL, "none", &libs, NULL);
	ck_assert_int_eq(n, 3);
	ck_assert_str_eq(libs[2], "/lib64/ld-linux-x86-64.so.2");
	bcast_libs_free(libs);
}
END_TEST

START_TEST(parse_spaces_and_odd_names)
{
	const char *out =
		"\tlibfoo.so.1 => /opt/my apps (x86)/lib/libfoo.so.1 (0x00007f0a1c000000)\n"
		"\tlibodd.so => /opt/a (0x1)/libodd.so (0x00007f0a1c100000)\n"
		"\tlibmusl.so => /opt/m/libmusl.so (0x7f0a1c2)\n"
		"\tlibnoaddr.so => /opt/n/libnoaddr.so\n"
		"\t/opt/pre load/libpre.so (0x00007f0a1c300000)\n";
	char **libs;
	int n;

	n = parse(out, "/lib64/ld-linux-x86-64.so.2", "none", &libs, NULL);
	ck_assert_int_eq(n, 5);
	ck_assert_str_eq(libs[0], "/opt/my apps (x86)/lib/libfoo.so.1");
	ck_assert_str_eq(libs[1], "/opt/a (0x1)/libodd.so");
	ck_assert_str_eq(libs[2], "/opt/m/libmusl.so");
	ck_assert_str_eq(libs[3], "/opt/n/libnoaddr.so");
	ck_assert_str_eq(libs[4], "/opt/pre load/libpre.so");
	bcast_libs_free(libs);
}
END_TEST

START_TEST(parse_duplicates_once)
{
	const char *out =
		"\tlibfoo.so.1 => /opt/x/lib/libfoo.so.1 (0x00007f0a1c000000)\n"
		"\tlibbar.so => not found\n"
		"\tlibfoo.so => /opt/x/lib/libfoo.so.1 (0x00007f0a1c000000)\n"
		"\tlibbaz.so => /opt/x/lib/libbaz.so (0x00007f0a1c100000)\n"
		"\tlibbar.so => not found\n"
		"\tlibqux.so => not found\n"
		"\tlibfoo.so.1 => /opt/x/lib/libfoo.so.1 (0x00007f0a1c000000)\n";
	char **libs;
	int missing = -1, n;

	n = parse(out, NULL, NULL, &libs, &missing);
	ck_assert_int_eq(n, 2);
	ck_assert_str_eq(libs[0], "/opt/x/lib/libfoo.so.1");
	ck_assert_str_eq(libs[1], "/opt/x/lib/libbaz.so");
	ck_assert_int_eq(missing, 2);
	bcast_libs_free(libs);
}
END_TEST

START_TEST(parse_nothing_to_send)
{
	const char *outs[] = {
		"", "\tstatically linked\n", "\tnot a dynamic executable\n",
		"\tlinux-vdso.so.1 (0x00007ffd5a1e4000)\n"
		"\t/lib64/ld-linux-x86-64.so.2 (0x00007f0a1c200000)\n",
		/* LD_VERBOSE's version lines and an undefined symbol */
		"\n\tVersion information:\n\t./prog:\n"
		"\t\tlibc.so.6 (GLIBC_2.34) => /lib/x86_64-linux-gnu/libc.so.6\n"
		"\tundefined symbol: dep\t(./libhello.so)\n",
		"no tab => /opt/x/libfoo.so (0x00007f0a1c000000)\n",
	};
	char **libs;
	int missing;

	for (size_t i = 0; i < sizeof(outs) / sizeof(outs[0]); i++) {
		missing = -1;
		ck_assert_int_eq(parse(outs[i], "/lib64/ld-linux-x86-64.so.2",
				       "none", &libs, &missing), 0);
		ck_assert_int_eq(missing, 0);
		bcast_libs_free(libs);
	}
	ck_assert_int_eq(parse(NULL, NULL, NULL, &libs, NULL), 0);
	bcast_libs_free(libs);
	bcast_libs_free(NULL);
}
END_TEST

START_TEST(parse_relative_and_interp_by_file)
{
	char interp[PATH_MAX], real[PATH_MAX], out[3 * PATH_MAX], want[PATH_MAX];
	char **libs;
	int n;

	/* a relative name, as a relative LD_LIBRARY_PATH gives it */
	ck_assert_int_eq(chdir(T), 0);
	n = parse("\tlibhello.so => ./lib/libhello.so (0x00007f0a1c000000)\n",
		  NULL, "none", &libs, NULL);
	ck_assert_int_eq(n, 1);
	snprintf(want, sizeof(want), "%s/lib/libhello.so", T);
	ck_assert_str_eq(libs[0], want);
	bcast_libs_free(libs);

	/* the loader named by another path (libc's DT_NEEDED on the
	 * loader): the same file is still the interpreter */
	self_interp(interp, sizeof(interp));
	ck_assert_ptr_nonnull(realpath(interp, real));
	if (!strcmp(real, interp))
		return;
	snprintf(out, sizeof(out),
		 "\tld-linux.so => %s (0x00007f0a1c000000)\n"
		 "\t%s (0x00007f0a1c200000)\n", real, interp);
	ck_assert_int_eq(parse(out, interp, "none", &libs, NULL), 0);
	bcast_libs_free(libs);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("bcast_libs");
	TCase *tc = tcase_create("closure");
	TCase *slow = tcase_create("deadline");
	TCase *tp = tcase_create("parse");

	/* each case runs a compiler-free loader a few times; the host is
	 * shared and busy */
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, rpath_origin_with_indirect_dependency);
	tcase_add_test(tc, runpath_origin);
	tcase_add_test(tc, runpath_not_inherited);
	tcase_add_test(tc, ld_library_path_from_environment);
	tcase_add_test(tc, none_keeps_system_libraries);
	tcase_add_test(tc, default_exclude_drops_system_dirs);
	tcase_add_test(tc, missing_library_counted);
	tcase_add_test(tc, path_with_spaces);
	tcase_add_test(tc, symlinked_program_origin_is_real_dir);
	tcase_add_test(tc, shared_library_as_file);
	tcase_add_test(tc, static_program_gives_zero);
	tcase_add_test(tc, script_and_data_give_zero);
	tcase_add_test(tc, other_class_or_machine_gives_zero);
	tcase_add_test(tc, unreadable_file_fails);
	tcase_add_test(tc, failing_loader_first_stderr_line);
	tcase_add_test(tc, interp_of_files);
	suite_add_tcase(s, tc);

	tcase_set_timeout(slow, 120);
	tcase_add_test(slow, hanging_loader_killed_at_deadline);
	suite_add_tcase(s, slow);

	tcase_set_timeout(tp, 60);
	tcase_add_test(tp, excluded_component_boundary);
	tcase_add_test(tp, excluded_through_symlinks);
	tcase_add_test(tp, parse_typical_listing);
	tcase_add_test(tp, parse_spaces_and_odd_names);
	tcase_add_test(tp, parse_duplicates_once);
	tcase_add_test(tp, parse_nothing_to_send);
	tcase_add_test(tp, parse_relative_and_interp_by_file);
	suite_add_tcase(s, tp);
	return s;
}

int main(void)
{
	int rc;

	build_fixtures();
	rc = storm_check_run(suite());
	if (rc == EXIT_SUCCESS)
		sh("rm -rf '%s'", T);
	else
		fprintf(stderr, "test_bcast_libs: fixtures kept in %s\n", T);
	return rc;
}
