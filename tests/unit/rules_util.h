/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RULES_UTIL_H
#define RULES_UTIL_H

#include <string.h>

#include "sl_rules.h"

/* A config from text, as if read from t.yaml (its errors name it). */
static inline struct sl_config *
load(const char *text, char *err, size_t errlen)
{
	return sl_config_parse("t.yaml", text, strlen(text), err, errlen);
}

#endif /* RULES_UTIL_H */
