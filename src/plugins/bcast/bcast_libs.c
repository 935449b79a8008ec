/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bcast_libs.c - the shared libraries a program needs, asked of the dynamic
 * loader itself rather than worked out from DT_NEEDED by hand: only the
 * loader knows its search rules exactly ($ORIGIN, RPATH against RUNPATH,
 * hwcaps subdirectories, ld.so.cache, the caller's LD_LIBRARY_PATH).
 *
 * srun is multi-threaded and large, so the loader is started with
 * posix_spawn (vfork-like, no copy of srun's address space), in a process
 * group of its own so that a deadline can kill whatever it started.
 */
#include <ctype.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bcast_libs.h"
#include "src/common/storm_time.h"

extern char **environ;

/* A listing larger than this is no loader's answer about one file. */
#define OUT_MAX (4u << 20)
/* Enough of stderr for its first line. */
#define ERR_MAX 1024

#if __SIZEOF_POINTER__ == 8
#define SELF_CLASS ELFCLASS64
#else
#define SELF_CLASS ELFCLASS32
#endif
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define SELF_DATA ELFDATA2LSB
#else
#define SELF_DATA ELFDATA2MSB
#endif

typedef struct {
	char **v;
	int n, cap;
} strv_t;

static int strv_push(strv_t *s, char *str)
{
	if (s->n + 2 > s->cap) {
		int cap = s->cap ? 2 * s->cap : 16;
		char **v = realloc(s->v, cap * sizeof(*v));

		if (!v)
			return -1;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = str;
	s->v[s->n] = NULL;
	return 0;
}

static bool strv_has(const strv_t *s, const char *str)
{
	for (int i = 0; i < s->n; i++)
		if (!strcmp(s->v[i], str))
			return true;
	return false;
}

void bcast_libs_free(char **libs)
{
	if (!libs)
		return;
	for (char **p = libs; *p; p++)
		free(*p);
	free(libs);
}

static char **empty_list(void)
{
	return calloc(1, sizeof(char *));
}

/* ---------------------------------------------------------------------
 * Exclusions
 */

static const char *skip_space(const char *s, const char *e)
{
	while (s < e && isspace((unsigned char) *s))
		s++;
	return s;
}

static bool exclude_none(const char *exclude)
{
	const char *e;

	if (!exclude)
		return true;
	e = exclude + strlen(exclude);
	exclude = skip_space(exclude, e);
	while (e > exclude && isspace((unsigned char) e[-1]))
		e--;
	return e == exclude ||
	       (e - exclude == 4 && !strncasecmp(exclude, "none", 4));
}

/* path lies in dir (dlen bytes, no trailing slash; 0 for "/"), whole
 * components only. */
static bool under(const char *path, const char *dir, size_t dlen)
{
	if (!path || path[0] != '/')
		return false;
	if (!dlen)
		return true;
	return !strncmp(path, dir, dlen) &&
	       (path[dlen] == '/' || path[dlen] == '\0');
}

static size_t trim_slashes(const char *dir, size_t len)
{
	while (len > 0 && dir[len - 1] == '/')
		len--;
	return len;
}

/* path with ".", ".." and repeated slashes resolved by name alone (the
 * loader names "$ORIGIN/../lib/libfoo.so"); NULL if too long. */
static char *lexical(const char *path, char *buf, size_t len)
{
	size_t n = 0;

	for (const char *p = path; *p;) {
		const char *e;

		while (*p == '/')
			p++;
		e = strchrnul(p, '/');
		if (e - p == 1 && p[0] == '.') {
			/* nothing */
		} else if (e - p == 2 && p[0] == '.' && p[1] == '.') {
			while (n > 0 && buf[--n] != '/')
				;
		} else if (e > p) {
			if (n + 1 + (e - p) >= len)
				return NULL;
			buf[n++] = '/';
			memcpy(buf + n, p, e - p);
			n += e - p;
		}
		p = e;
	}
	if (!n)
		buf[n++] = '/';
	buf[n] = '\0';
	return buf;
}

bool bcast_libs_excluded(const char *path, const char *exclude)
{
	char dir[PATH_MAX], named[PATH_MAX], *real, *rdir;
	const char *p, *end, *e;
	bool hit = false;

	if (!path || path[0] != '/' || exclude_none(exclude))
		return false;
	/* the file the loader opens: the name taken physically */
	real = realpath(path, NULL);
	path = lexical(path, named, sizeof(named)) ? named : path;
	for (p = exclude; *p && !hit; p = *end ? end + 1 : end) {
		size_t len;

		end = strchrnul(p, ',');
		e = end;
		p = skip_space(p, e);
		while (e > p && isspace((unsigned char) e[-1]))
			e--;
		if (e == p || *p != '/' || (size_t) (e - p) >= sizeof(dir))
			continue;
		memcpy(dir, p, e - p);
		dir[e - p] = '\0';
		len = trim_slashes(dir, e - p);
		dir[len] = '\0';
		hit = under(path, dir, len) || under(real, dir, len);
		if (hit)
			break;
		/* a listed directory that is itself a symlink (a site's
		 * /sw -> /gpfs/sw) holds what its target holds */
		rdir = realpath(len ? dir : "/", NULL);
		if (rdir) {
			size_t rlen = trim_slashes(rdir, strlen(rdir));

			hit = under(path, rdir, rlen) || under(real, rdir, rlen);
			free(rdir);
		}
	}
	free(real);
	return hit;
}

/* ---------------------------------------------------------------------
 * The ELF file
 */

typedef struct {
	bool elf;		/* an ELF this process's loader can map */
	bool has_interp;
	bool has_dynamic;
	uint16_t type;
} elf_facts_t;

/* The machine this process runs as, from its own ELF header; EM_NONE if
 * it cannot be read (then any machine passes: the loader judges). */
static uint16_t self_machine(void)
{
	ElfW(Ehdr) eh;
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return EM_NONE;
	n = pread(fd, &eh, sizeof(eh), 0);
	close(fd);
	if (n != (ssize_t) sizeof(eh) || memcmp(eh.e_ident, ELFMAG, SELFMAG))
		return EM_NONE;
	return eh.e_machine;
}

/* Reads file's ELF header and program headers; PT_INTERP into buf.
 * 0 (facts filled, f->elf false for anything but a usable ELF), or -1
 * with errno. */
static int elf_inspect(const char *file, elf_facts_t *f, char *buf,
		       size_t len)
{
	ElfW(Ehdr) eh;
	ElfW(Phdr) *ph = NULL;
	struct stat st;
	uint16_t self;
	ssize_t n;
	size_t phsz;
	int fd, rc = -1, saved;

	memset(f, 0, sizeof(*f));
	if (len)
		buf[0] = '\0';
	/* O_NONBLOCK: a FIFO named by mistake must not hang srun */
	fd = open(file, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st))
		goto done;
	if (!S_ISREG(st.st_mode)) {
		errno = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
		goto done;
	}
	n = pread(fd, &eh, sizeof(eh), 0);
	if (n < 0)
		goto done;
	rc = 0;
	if (n != (ssize_t) sizeof(eh) || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != SELF_CLASS ||
	    eh.e_ident[EI_DATA] != SELF_DATA ||
	    (eh.e_type != ET_EXEC && eh.e_type != ET_DYN) ||
	    eh.e_phentsize != sizeof(ElfW(Phdr)) || !eh.e_phnum ||
	    eh.e_phnum == PN_XNUM)
		goto done;
	self = self_machine();
	if (self != EM_NONE && eh.e_machine != self)
		goto done;
	phsz = (size_t) eh.e_phnum * sizeof(*ph);
	ph = malloc(phsz);
	if (!ph) {
		rc = -1;
		goto done;
	}
	n = pread(fd, ph, phsz, eh.e_phoff);
	if (n < 0) {
		rc = -1;
		goto done;
	}
	if ((size_t) n != phsz)
		goto done;
	f->type = eh.e_type;
	for (int i = 0; i < eh.e_phnum; i++) {
		if (ph[i].p_type == PT_DYNAMIC)
			f->has_dynamic = true;
		if (ph[i].p_type != PT_INTERP || f->has_interp)
			continue;
		if (!ph[i].p_filesz || ph[i].p_filesz > PATH_MAX)
			goto done;
		if (ph[i].p_filesz > len) {
			errno = ERANGE;
			rc = -1;
			goto done;
		}
		n = pread(fd, buf, ph[i].p_filesz, ph[i].p_offset);
		if (n < 0) {
			rc = -1;
			goto done;
		}
		if ((size_t) n != ph[i].p_filesz ||
		    !memchr(buf, '\0', ph[i].p_filesz) || buf[0] != '/') {
			buf[0] = '\0';
			goto done;
		}
		f->has_interp = true;
	}
	f->elf = true;
done:
	saved = errno;
	free(ph);
	close(fd);
	errno = saved;
	if (rc || !f->elf)
		memset(f, 0, sizeof(*f));
	if (!f->has_interp && len)
		buf[0] = '\0';
	return rc;
}

int bcast_libs_interp(const char *file, char *buf, size_t len)
{
	elf_facts_t f;

	if (elf_inspect(file, &f, buf, len))
		return -1;
	return f.has_interp ? 1 : 0;
}

/* ---------------------------------------------------------------------
 * The loader's listing
 */

/* End of the path in [s, e): before a trailing " (0x<hex>)", or e when
 * there is none. */
static const char *strip_addr(const char *s, const char *e)
{
	const char *a = NULL;

	for (const char *p = s; p + 4 <= e; p++)
		if (!memcmp(p, " (0x", 4))
			a = p;
	if (!a || e[-1] != ')')
		return e;
	for (const char *p = a + 4; p < e - 1; p++)
		if (!isxdigit((unsigned char) *p))
			return e;
	return a + 4 < e - 1 ? a : e;
}

/* A path the loader printed relative to its working directory (a
 * relative LD_LIBRARY_PATH entry), made absolute against ours, which the
 * loader inherited. */
static char *absolute(const char *s, size_t len)
{
	char cwd[PATH_MAX], *out;

	if (len && s[0] == '/')
		return strndup(s, len);
	if (!getcwd(cwd, sizeof(cwd)))
		return NULL;
	while (len >= 2 && s[0] == '.' && s[1] == '/') {
		s += 2;
		len -= 2;
		while (len && *s == '/') {
			s++;
			len--;
		}
	}
	if (asprintf(&out, "%s%s%.*s", cwd, strcmp(cwd, "/") ? "/" : "",
		     (int) len, s) < 0)
		return NULL;
	return out;
}

static bool is_interp(const char *path, const char *interp,
		      const struct stat *ist)
{
	struct stat st;

	if (!interp)
		return false;
	if (!strcmp(path, interp))
		return true;
	return ist && !stat(path, &st) && st.st_dev == ist->st_dev &&
	       st.st_ino == ist->st_ino;
}

int bcast_libs_parse(const char *out, const char *interp, const char *exclude,
		     char ***libs, int *missing, char *err, size_t errlen)
{
	strv_t found = { 0 }, gone = { 0 };
	struct stat ist;
	bool have_ist = interp && !stat(interp, &ist);
	const char *line, *next;

	*libs = NULL;
	if (missing)
		*missing = 0;
	for (line = out ? out : ""; *line; line = next) {
		const char *s, *e, *arrow, *rhs, *pe;
		char *path;

		e = strchrnul(line, '\n');
		next = *e ? e + 1 : e;
		/* one tab: a loaded object; two: LD_VERBOSE's version
		 * lines, which name libraries too */
		if (line[0] != '\t' || line[1] == '\t')
			continue;
		s = line + 1;
		arrow = memmem(s, e - s, " => ", 4);
		if (arrow) {
			rhs = arrow + 4;
			if (e - rhs == 9 && !memcmp(rhs, "not found", 9)) {
				char *name = strndup(s, arrow - s);

				if (!name)
					goto nomem;
				if (strv_has(&gone, name))
					free(name);
				else if (strv_push(&gone, name)) {
					free(name);
					goto nomem;
				}
				continue;
			}
			pe = strip_addr(rhs, e);
		} else {
			/* "/lib64/ld-linux-x86-64.so.2 (0x...)", a preloaded
			 * library; "linux-vdso.so.1 (0x...)" is in no file */
			rhs = s;
			pe = strip_addr(s, e);
			if (pe == e || *s != '/')
				continue;
		}
		if (pe == rhs)
			continue;
		path = absolute(rhs, pe - rhs);
		if (!path)
			goto nomem;
		if (is_interp(path, interp, have_ist ? &ist : NULL) ||
		    strv_has(&found, path) || bcast_libs_excluded(path, exclude)) {
			free(path);
			continue;
		}
		if (strv_push(&found, path)) {
			free(path);
			goto nomem;
		}
	}
	if (missing)
		*missing = gone.n;
	bcast_libs_free(gone.v);
	if (!found.v && !(found.v = empty_list()))
		goto nomem;
	*libs = found.v;
	return found.n;
nomem:
	bcast_libs_free(found.v);
	bcast_libs_free(gone.v);
	snprintf(err, errlen, "cannot list libraries: %s", strerror(ENOMEM));
	return -1;
}

/* ---------------------------------------------------------------------
 * Running the loader
 */

typedef struct {
	char *out;		/* stdout, NUL-terminated */
	size_t outlen;
	char errtxt[ERR_MAX + 1];	/* the start of stderr */
	size_t errlen;
	int status;		/* waitpid's */
} capture_t;

/* The caller's environment without the variables that change what the
 * loader prints (ldd clears the same ones), plus extra (or NULL). */
static char **loader_env(const char *extra)
{
	static const char *const drop[] = {
		"LD_TRACE_LOADED_OBJECTS=", "LD_VERBOSE=", "LD_WARN=",
		"LD_BIND_NOW=", "LD_LIBRARY_VERSION=", NULL
	};
	size_t n = 0, k = 0;
	char **env;

	for (char **e = environ; e && *e; e++)
		n++;
	env = calloc(n + 2, sizeof(*env));
	if (!env)
		return NULL;
	for (char **e = environ; e && *e; e++) {
		bool keep = true;

		for (const char *const *d = drop; *d && keep; d++)
			keep = strncmp(*e, *d, strlen(*d)) != 0;
		if (keep)
			env[k++] = *e;
	}
	if (extra)
		env[k++] = (char *) extra;
	env[k] = NULL;
	return env;
}

static int remaining_ms(uint64_t deadline)
{
	uint64_t now = storm_mono_ns();

	if (now >= deadline)
		return 0;
	return (int) ((deadline - now + 999999) / 1000000);
}

static void kill_reap(pid_t pid)
{
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}

/* Reads both pipes until both close. 0, 1 on the deadline, -1 with err. */
static int drain(int ofd, int efd, uint64_t deadline, capture_t *c,
		 char *err, size_t errlen)
{
	struct pollfd pfd[2] = { { ofd, POLLIN, 0 }, { efd, POLLIN, 0 } };
	size_t cap = 0;

	while (pfd[0].fd >= 0 || pfd[1].fd >= 0) {
		int ms = remaining_ms(deadline), r;

		if (!ms)
			return 1;
		r = poll(pfd, 2, ms);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			snprintf(err, errlen, "poll: %s", strerror(errno));
			return -1;
		}
		for (int i = 0; i < 2; i++) {
			char sink[4096], *dst;
			size_t room;
			ssize_t n;

			if (pfd[i].fd < 0 || !pfd[i].revents)
				continue;
			if (i == 0) {
				if (cap - c->outlen < 4096) {
					char *o;

					cap = cap ? 2 * cap : 16384;
					o = realloc(c->out, cap + 1);
					if (!o) {
						snprintf(err, errlen,
							 "cannot list libraries: %s",
							 strerror(ENOMEM));
						return -1;
					}
					c->out = o;
				}
				dst = c->out + c->outlen;
				room = cap - c->outlen;
			} else if (c->errlen < ERR_MAX) {
				dst = c->errtxt + c->errlen;
				room = ERR_MAX - c->errlen;
			} else {
				dst = sink;
				room = sizeof(sink);
			}
			n = read(pfd[i].fd, dst, room);
			if (n < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (n <= 0) {
				pfd[i].fd = -1;
				continue;
			}
			if (i == 0) {
				c->outlen += n;
				c->out[c->outlen] = '\0';
				if (c->outlen > OUT_MAX) {
					snprintf(err, errlen,
						 "the loader's listing exceeds %u bytes",
						 OUT_MAX);
					return -1;
				}
			} else if (dst != sink) {
				c->errlen += n;
				c->errtxt[c->errlen] = '\0';
			}
		}
	}
	return 0;
}

/* Runs argv (argv[0] the loader) with env, stdin /dev/null, stdout and
 * stderr into c, until deadline.  0 when it ran and was reaped (c->status
 * set), -1 with err otherwise (a child still running is killed). */
static int run_loader(char *const argv[], char *const env[],
		      uint64_t deadline, capture_t *c, char *err,
		      size_t errlen)
{
	int opipe[2] = { -1, -1 }, epipe[2] = { -1, -1 };
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, all;
	pid_t pid = -1;
	int rc = -1, r;

	memset(c, 0, sizeof(*c));
	if (pipe2(opipe, O_CLOEXEC) || pipe2(epipe, O_CLOEXEC)) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		goto done;
	}
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&at);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, opipe[1], 1);
	posix_spawn_file_actions_adddup2(&fa, epipe[1], 2);
#if defined(__GLIBC__) && __GLIBC_PREREQ(2, 34)
	/* srun's own descriptors are none of the loader's business */
	posix_spawn_file_actions_addclosefrom_np(&fa, 3);
#endif
	/* srun's threads block and catch signals; the loader starts clean,
	 * in its own process group so that a deadline kills all of it */
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK |
				 POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &all);
	posix_spawnattr_setpgroup(&at, 0);
	r = posix_spawn(&pid, argv[0], &fa, &at, argv, env);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	close(opipe[1]);
	close(epipe[1]);
	opipe[1] = epipe[1] = -1;
	if (r) {
		snprintf(err, errlen, "cannot run the loader %s: %s", argv[0],
			 strerror(r));
		pid = -1;
		goto done;
	}
	r = drain(opipe[0], epipe[0], deadline, c, err, errlen);
	if (r < 0)
		goto done;
	/* both pipes closed: the loader is exiting, or closed them and
	 * lingers; either way the deadline holds */
	while (r == 0) {
		pid_t w = waitpid(pid, &c->status, WNOHANG);

		if (w == pid) {
			pid = -1;
			rc = 0;
			goto done;
		}
		if (w < 0 && errno != EINTR) {
			snprintf(err, errlen, "waitpid: %s", strerror(errno));
			goto done;
		}
		if (!remaining_ms(deadline))
			break;
		nanosleep(&(struct timespec) { 0, 1000000 }, NULL);
	}
	snprintf(err, errlen, "the loader %s did not list %s within %d s",
		 argv[0], argv[2] ? argv[2] : argv[1],
		 BCAST_LIBS_TIMEOUT_MS / 1000);
done:
	if (pid > 0)
		kill_reap(pid);
	for (int i = 0; i < 2; i++) {
		if (opipe[i] >= 0)
			close(opipe[i]);
		if (epipe[i] >= 0)
			close(epipe[i]);
	}
	if (rc) {
		free(c->out);
		c->out = NULL;
	}
	return rc;
}

/* Why the loader failed, into err: its stderr's first line, or how it
 * ended. */
static void loader_failed(const char *interp, const capture_t *c, char *err,
			  size_t errlen)
{
	size_t n = strcspn(c->errtxt, "\n");

	if (n)
		snprintf(err, errlen, "%.*s", (int) n, c->errtxt);
	else if (WIFSIGNALED(c->status))
		snprintf(err, errlen, "the loader %s was killed by signal %d",
			 interp, WTERMSIG(c->status));
	else
		snprintf(err, errlen, "the loader %s exited with status %d",
			 interp, WEXITSTATUS(c->status));
}

static bool exited_ok(const capture_t *c)
{
	return WIFEXITED(c->status) && WEXITSTATUS(c->status) == 0;
}

/* The loader that maps this process, for a shared library (which names
 * none): the same class and machine, the same search rules. */
static int self_interp(char *buf, size_t len)
{
	return bcast_libs_interp("/proc/self/exe", buf, len);
}

int bcast_libs_closure(const char *file, const char *exclude, char ***libs,
		       int *missing, char *err, size_t errlen)
{
	uint64_t deadline = storm_mono_ns() +
			    (uint64_t) BCAST_LIBS_TIMEOUT_MS * 1000000ULL;
	char interp[PATH_MAX], *target = NULL, **env = NULL;
	elf_facts_t f;
	capture_t c = { 0 };
	int rc = -1;

	*libs = NULL;
	if (missing)
		*missing = 0;
	if (errlen)
		err[0] = '\0';
	if (elf_inspect(file, &f, interp, sizeof(interp))) {
		snprintf(err, errlen, "%s: %s", file, strerror(errno));
		return -1;
	}
	if (!f.elf || (!f.has_interp && (f.type != ET_DYN || !f.has_dynamic)))
		goto none;
	if (!f.has_interp && self_interp(interp, sizeof(interp)) != 1) {
		snprintf(err, errlen, "%s: no dynamic loader to list its "
			 "libraries with", file);
		return -1;
	}
	/* said before spawning: not every posix_spawn reports a failed
	 * exec (then the child's 127 would read as a missing library) */
	if (access(interp, X_OK)) {
		snprintf(err, errlen, "cannot run the loader %s: %s", interp,
			 strerror(errno));
		return -1;
	}
	/* A program's $ORIGIN is where the kernel finds it
	 * (/proc/self/exe, symlinks resolved), but the loader run by name
	 * takes it from the name: give it the real path.  A library's
	 * $ORIGIN is the directory it was opened from: keep its name. */
	if (f.has_interp)
		target = realpath(file, NULL);
	else
		target = absolute(file, strlen(file));
	if (!target) {
		snprintf(err, errlen, "%s: %s", file, strerror(errno));
		return -1;
	}
	env = loader_env(NULL);
	if (!env) {
		snprintf(err, errlen, "cannot list libraries: %s",
			 strerror(ENOMEM));
		goto done;
	}
	if (run_loader((char *[]) { interp, "--list", target, NULL }, env,
		       deadline, &c, err, errlen))
		goto done;
	/* glibc's --list gives up at the first library it cannot find
	 * (status 127, nothing listed); ldd's way, the loader's trace mode,
	 * lists them all with the missing ones "not found".  Only glibc's
	 * message leads here, and only glibc's loader knows trace mode (any
	 * other would run the program). */
	if (!exited_ok(&c) && WIFEXITED(c.status) &&
	    WEXITSTATUS(c.status) == 127 &&
	    strstr(c.errtxt, "error while loading shared libraries: ") &&
	    strstr(c.errtxt, ": cannot open shared object file")) {
		free(env);
		free(c.out);
		env = loader_env("LD_TRACE_LOADED_OBJECTS=1");
		if (!env) {
			snprintf(err, errlen, "cannot list libraries: %s",
				 strerror(ENOMEM));
			goto done;
		}
		if (run_loader((char *[]) { interp, target, NULL }, env,
			       deadline, &c, err, errlen))
			goto done;
	}
	if (!exited_ok(&c)) {
		loader_failed(interp, &c, err, errlen);
		goto done;
	}
	rc = bcast_libs_parse(c.out, interp, exclude, libs, missing, err,
			      errlen);
done:
	free(c.out);
	free(env);
	free(target);
	return rc;
none:
	*libs = empty_list();
	if (!*libs) {
		snprintf(err, errlen, "cannot list libraries: %s",
			 strerror(ENOMEM));
		return -1;
	}
	return 0;
}
