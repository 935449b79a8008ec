/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_storm_conf.c - libFuzzer target: storm.conf text, as any admin (or
 * a broken configuration system) might write it.  A parse either fails
 * with a message or gives a configuration that formats and parses back to
 * itself (what `stormctl check-config` prints must be a valid file).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/common/storm_conf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char text[1 << 16], out[1 << 16];
	char err[STORM_CONF_ERRLEN];
	storm_conf_t a, b;

	if (size >= sizeof(text))
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	storm_conf_defaults(&a);
	if (storm_conf_parse("fuzz", text, &a, err, sizeof(err))) {
		if (!err[0])
			abort();	/* a refusal must say why */
		return 0;
	}
	if (storm_conf_format(&a, out, sizeof(out)) < 0)
		return 0;
	storm_conf_defaults(&b);
	if (storm_conf_parse("formatted", out, &b, err, sizeof(err))) {
		fprintf(stderr, "formatted configuration does not parse: %s\n%s",
			err, out);
		abort();
	}
	return 0;
}
