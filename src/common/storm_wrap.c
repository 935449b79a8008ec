/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * storm_wrap.c - open a stock Slurm plugin that a STORM plugin wraps.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storm_wrap.h"

static int find_in_dirs(const char *dirs, const char *file, char *out,
			size_t outlen)
{
	const char *p = dirs;

	while (p && *p) {
		const char *colon = strchr(p, ':');
		size_t n = colon ? (size_t) (colon - p) : strlen(p);

		if (n && n < outlen) {
			snprintf(out, outlen, "%.*s/%s", (int) n, p, file);
			if (access(out, R_OK) == 0)
				return 0;
		}
		p = colon ? colon + 1 : NULL;
	}
	return -1;
}

extern int storm_wrap_open(storm_wrap_t *w, const char *plugindir,
			   const char *fallback_dir, const char *name,
			   const char *const *syms, void **ptrs, size_t nsyms,
			   char *errbuf, size_t errlen)
{
	char file[256];
	int (*init_fn)(void);

	memset(w, 0, sizeof(*w));
	snprintf(file, sizeof(file), "%s.so", name);
	if (find_in_dirs(plugindir, file, w->path, sizeof(w->path)) &&
	    find_in_dirs(fallback_dir, file, w->path, sizeof(w->path))) {
		snprintf(errbuf, errlen, "%s not found in PluginDir %s or %s",
			 file, plugindir ? plugindir : "(unset)",
			 fallback_dir ? fallback_dir : "(none)");
		return -1;
	}
	/*
	 * RTLD_GLOBAL is not wanted: the stock plugin resolves Slurm's symbols
	 * from the host process, and its own must not shadow anyone's.
	 */
	w->handle = dlopen(w->path, RTLD_LAZY | RTLD_LOCAL);
	if (!w->handle) {
		snprintf(errbuf, errlen, "dlopen(%s): %s", w->path, dlerror());
		return -1;
	}
	for (size_t i = 0; i < nsyms; i++) {
		ptrs[i] = dlsym(w->handle, syms[i]);
		if (!ptrs[i]) {
			snprintf(errbuf, errlen, "%s lacks symbol %s", w->path,
				 syms[i]);
			dlclose(w->handle);
			w->handle = NULL;
			return -1;
		}
	}
	*(void **) (&init_fn) = dlsym(w->handle, "init");
	if (init_fn && init_fn() != 0) {
		snprintf(errbuf, errlen, "%s: init() failed", w->path);
		dlclose(w->handle);
		w->handle = NULL;
		return -1;
	}
	return 0;
}

extern void storm_wrap_close(storm_wrap_t *w, bool call_fini)
{
	int (*fini_fn)(void);

	if (!w->handle)
		return;
	*(void **) (&fini_fn) = dlsym(w->handle, "fini");
	if (call_fini && fini_fn)
		(void) fini_fn();
	dlclose(w->handle);
	w->handle = NULL;
}

extern bool storm_same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	if (stat(a, &sa) || stat(b, &sb))
		return false;
	return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}
