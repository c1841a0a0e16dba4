/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer: the YAML config loader and its error reporting. */
#include <stdint.h>
#include <string.h>

#include "sl_rules.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[2048];
	struct sl_config *c = sl_config_parse("fuzz.yaml", (const char *)data,
					      size, err, sizeof(err));

	sl_config_free(c);
	return 0;
}
