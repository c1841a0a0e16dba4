/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <rte_common.h>
#include <rte_telemetry.h>

#include "sl_telemetry.h"

#define MAX_CMDS 24

/*
 * The one place every /sluice command's context lives. DPDK 22.11 calls a
 * command's handler with the command's name and no context, so a handler
 * that needs its object found it in a file-scope pointer of its own; here
 * one dispatcher finds it by the name instead. The lock is held across
 * the handler, so that withdrawing a context waits for the reader that
 * uses it (a stopping subsystem frees it right after).
 */
static struct {
	pthread_mutex_t lock;
	unsigned int n;
	struct {
		char name[64];
		sl_tel_fn fn;
		void *ctx;
	} e[MAX_CMDS];
} table = {.lock = PTHREAD_MUTEX_INITIALIZER};

static int
dispatch(const char *cmd, const char *params, struct rte_tel_data *d)
{
	unsigned int i;
	int rc = -ENOENT;

	pthread_mutex_lock(&table.lock);
	for (i = 0; i < table.n; i++) {
		if (strcmp(table.e[i].name, cmd) != 0)
			continue;
		/* withdrawn: the command is there, its subject stopped */
		rc = table.e[i].ctx == NULL
			     ? -ESRCH
			     : table.e[i].fn(table.e[i].ctx, params, d);
		break;
	}
	pthread_mutex_unlock(&table.lock);
	return rc;
}

static int
find(const char *name)
{
	unsigned int i;

	for (i = 0; i < table.n; i++)
		if (strcmp(table.e[i].name, name) == 0)
			return (int)i;
	return -1;
}

int
sl_telemetry_cmd(const char *name, sl_tel_fn fn, void *ctx, const char *help)
{
	int i, rc = 0;

	if (strlen(name) >= sizeof(table.e[0].name))
		return -EINVAL;
	pthread_mutex_lock(&table.lock);
	i = find(name);
	if (i < 0 && table.n == MAX_CMDS)
		rc = -ENOSPC;
	else if (i < 0) {
		/* a second start of the same subject (the app tests) finds
		 * its command there: only the context is new */
		rc = rte_telemetry_register_cmd(name, dispatch, help);
		if (rc == 0) {
			i = (int)table.n++;
			snprintf(table.e[i].name, sizeof(table.e[i].name), "%s",
				 name);
		}
	}
	if (rc == 0) {
		table.e[i].fn = fn;
		table.e[i].ctx = ctx;
	}
	pthread_mutex_unlock(&table.lock);
	return rc;
}

void
sl_telemetry_withdraw(const char *name, const void *ctx)
{
	int i;

	pthread_mutex_lock(&table.lock);
	i = find(name);
	if (i >= 0 && table.e[i].ctx == ctx)
		table.e[i].ctx = NULL;
	pthread_mutex_unlock(&table.lock);
}
