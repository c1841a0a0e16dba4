/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer: the YAML config loader, its error reporting, and the
 * warnings it gives a config that loads. */
#include <stdint.h>
#include <string.h>

#include "sl_rules.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
warned(void *arg, uint32_t line, const char *msg)
{
	(void)line;
	*(size_t *)arg += strlen(msg);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[2048];
	struct sl_config *c = sl_config_parse("fuzz.yaml", (const char *)data,
					      size, err, sizeof(err));
	size_t said = 0;

	if (c != NULL)
		sl_config_lint(c, warned, &said);
	sl_config_free(c);
	return 0;
}
