/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Live reload: SIGHUP, the /sluice/reload telemetry command, or the file
 * changing on disk. A new file is validated whole and compiled into a new
 * policy, which replaces the running one under RCU: workers pick it up at
 * their next burst, the old one is freed once every worker has passed a
 * quiescent state. Buckets are keyed by rule name, so they carry over.
 * An invalid file changes nothing.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <rte_malloc.h>
#include <rte_telemetry.h>

#include "policy.h"
#include "sl_telemetry.h"

/* What the reloader keeps from one reload to the next (app->reloader). */
struct sl_reloader {
	/* counter slots by rule name, for the life of the process */
	char slot_names[SL_MAX_RULES][SL_NAME_MAX];
	uint32_t n_slots;
	struct stat last_stat; /* the file as last applied */
	/* a change not yet applied: the file as the last poll saw it */
	struct stat seen_stat;
	int seen;
	/* set once a rule set published through the store was applied */
	char published[32];
	uint8_t watch; /* reload.watch, as last applied */
	/* every reload tried, those refused, and why the last one was
	 * (its first line): /sluice/config, under the policy lock */
	uint64_t reloads, failures;
	char last_error[RTE_TEL_MAX_STRING_LEN];
};

/* Counts a reload tried; called with the policy lock held. */
static void
count(struct sl_reloader *rl, int rc, const char *msg)
{
	rl->reloads++;
	if (rc == 0)
		return;
	rl->failures++;
	snprintf(rl->last_error, sizeof(rl->last_error), "%.*s",
		 (int)strcspn(msg, "\n"), msg);
}

static int
slot_of(struct sl_reloader *rl, const char *name)
{
	uint32_t i;

	for (i = 0; i < rl->n_slots; i++)
		if (strcmp(rl->slot_names[i], name) == 0)
			return (int)i;
	if (rl->n_slots == SL_MAX_RULES)
		return -1;
	strcpy(rl->slot_names[rl->n_slots], name);
	return (int)rl->n_slots++;
}

static int
assign_slots(struct sl_reloader *rl, struct sl_policy *p, char *msg, size_t len)
{
	uint32_t i;

	for (i = 0; i < p->n_rules; i++) {
		int s = slot_of(rl, sl_ruleset_rule(p->rs, i)->name);

		if (s < 0) {
			snprintf(
				msg, len,
				"more than %d distinct rule names since start: "
				"restart to apply\n",
				SL_MAX_RULES);
			return -1;
		}
		p->slot[i] = (uint16_t)s;
	}
	sl_policy_index_slots(p);
	return 0;
}

static void
remember_stat(struct sl_reloader *rl, const char *path)
{
	/* no file (rules given as text, as the race test does): no poll */
	if (path == NULL || stat(path, &rl->last_stat) != 0)
		memset(&rl->last_stat, 0, sizeof(rl->last_stat));
}

/* What only a restart can change: said, never silently ignored. */
/*
 * What a reload cannot apply, said rather than ignored: the sections the
 * start-up sized or connected (docs/reference/config.md marks each key
 * "restart"). The running values of those stay in force; the rest of the
 * file applies now.
 */
static void
note_restart_only(const struct sl_config *old, struct sl_config *c, char *msg,
		  size_t len)
{
	size_t n = 0;

	/* the workers' translation table is sized at start: keep_alive
	 * (and the budgets it carries) turns on at the next restart; off,
	 * it applies now (connections kept so far stay translated) */
	if (c->response.keep_alive && !old->response.keep_alive) {
		c->response.keep_alive = 0;
		n += (size_t)snprintf(msg, len,
				      "note: response.keep_alive turned on "
				      "takes effect at the next restart\n");
	}
	if (n < len &&
	    (memcmp(&old->dataplane, &c->dataplane, sizeof(c->dataplane)) !=
		     0 ||
	     memcmp(&old->identity, &c->identity, sizeof(c->identity)) != 0 ||
	     (c->store.present &&
	      memcmp(&old->store, &c->store, sizeof(c->store)) != 0) ||
	     strcmp(old->decisions.file, c->decisions.file) != 0 ||
	     strcmp(old->decisions.stream, c->decisions.stream) != 0 ||
	     old->decisions.identity_clear != c->decisions.identity_clear ||
	     strcmp(old->decisions.identity_secret,
		    c->decisions.identity_secret) != 0))
		snprintf(msg + n, len - n,
			 "note: dataplane, identity, store and decisions "
			 "sinks or identity changes take effect at the next "
			 "restart "
			 "(the rest applies now)\n");
}

/* Compiles c and swaps it in; takes c. Called with the policy lock held. */
static int
apply_config(struct sl_app *app, struct sl_config *c, char *msg, size_t len)
{
	const char *region = app->cfg->store.region;
	struct sl_policy *p, *old;

	/* global rules at this appliance's slice, whoever wrote the set (a
	 * rule set published from another region was cut to its own) */
	if (region[0] && c->regions.n > 0 &&
	    sl_config_set_region(c, region) != 0) {
		snprintf(msg, len,
			 "regions: this appliance's region '%s' is not one "
			 "of the rule set's regions\n",
			 region);
		sl_config_free(c);
		return -1;
	}
	note_restart_only(app->cfg, c, msg, len);
	p = sl_policy_build(c);
	if (p == NULL || assign_slots(app->reloader, p, msg, len) != 0) {
		if (p == NULL)
			snprintf(msg, len,
				 "out of memory compiling the rules\n");
		sl_policy_free(p);
		sl_config_free(c);
		return -1;
	}
	app->reloader->watch = c->reload.watch;
	old = app->policy;
	__atomic_store_n(&app->policy, p, __ATOMIC_RELEASE);
	sl_telemetry_set_rules(p->rs, p->slot);
	/* every worker has finished any burst that may still read old.
	 * rte_rcu_qsbr_synchronize() without a reader on this thread, in
	 * its inline halves: a ThreadSanitizer build sees the acquire that
	 * orders the free after the workers' last reads (DPDK's own library
	 * is not built with it) */
	rte_rcu_qsbr_check(app->qs, rte_rcu_qsbr_start(app->qs), true);
	sl_policy_free(old);
	sl_config_free(c);
	return 0;
}

int
sl_reload(struct sl_app *app, char *msg, size_t len)
{
	struct sl_config *c;
	int rc;

	msg[0] = '\0';
	sl_policy_hold();
	remember_stat(app->reloader, app->config_path);
	if (app->reloader->published[0]) {
		snprintf(msg, len,
			 "rules are managed through the store (version %s): "
			 "publish with sluicectl\n",
			 app->reloader->published);
		count(app->reloader, -1, msg);
		sl_policy_release();
		return -1;
	}
	c = sl_config_load(app->config_path, msg, len);
	rc = c != NULL ? apply_config(app, c, msg, len) : -1;
	count(app->reloader, rc, msg);
	sl_policy_release();
	return rc;
}

int
sl_reload_text(struct sl_app *app, const char *version, const char *text,
	       size_t n, char *msg, size_t len)
{
	char name[64];
	struct sl_config *c;
	int rc;

	msg[0] = '\0';
	snprintf(name, sizeof(name), "published:%s", version);
	sl_policy_hold();
	c = sl_config_parse(name, text, n, msg, len);
	if (c != NULL)
		snprintf(c->version, sizeof(c->version), "%s", version);
	rc = c != NULL ? apply_config(app, c, msg, len) : -1;
	if (rc == 0)
		snprintf(app->reloader->published,
			 sizeof(app->reloader->published), "%s", version);
	count(app->reloader, rc, msg);
	sl_policy_release();
	return rc;
}

/*
 * The refusal's messages: "error", the first (as before), and "errors",
 * every line. A telemetry string holds at most RTE_TEL_MAX_STRING_LEN
 * bytes, so a longer line is cut there.
 */
static void
add_errors(struct rte_tel_data *d, const char *msg)
{
	struct rte_tel_data *all = rte_tel_data_alloc();
	char line[RTE_TEL_MAX_STRING_LEN];
	const char *p = msg;
	int first = 1;

	if (all != NULL)
		rte_tel_data_start_array(all, RTE_TEL_STRING_VAL);
	while (*p != '\0') {
		size_t n = strcspn(p, "\n");

		snprintf(line, sizeof(line), "%.*s", (int)n, p);
		if (first)
			rte_tel_data_add_dict_string(d, "error", line);
		if (all != NULL)
			rte_tel_data_add_array_string(all, line);
		first = 0;
		p += n + (p[n] == '\n');
	}
	if (all != NULL)
		rte_tel_data_add_dict_container(d, "errors", all, 0);
}

static int
cmd_reload(void *ctx, const char *params, struct rte_tel_data *d)
{
	struct sl_app *app = ctx;
	char msg[4096];
	struct sl_policy_peek pk;

	RTE_SET_USED(params);
	rte_tel_data_start_dict(d);
	if (sl_reload(app, msg, sizeof(msg)) == 0) {
		sl_policy_peek(app, &pk);
		rte_tel_data_add_dict_string(d, "version", pk.version);
		if (msg[0])
			rte_tel_data_add_dict_string(d, "note", msg);
		SL_LOG(NOTICE, "reload (telemetry): rules version %s",
		       pk.version);
	} else {
		add_errors(d, msg);
		SL_LOG(ERR, "reload (telemetry) refused, running rules kept");
	}
	return 0;
}

/* /sluice/config: what runs, from where, and how reloading went. */
static int
cmd_config(void *ctx, const char *params, struct rte_tel_data *d)
{
	struct sl_app *app = ctx;
	const struct sl_reloader *rl = app->reloader;
	struct sl_policy_peek pk;

	RTE_SET_USED(params);
	sl_policy_peek(app, &pk);
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_string(d, "path",
				     app->config_path ? app->config_path : "");
	rte_tel_data_add_dict_string(d, "version", pk.version);
	sl_policy_hold();
	rte_tel_data_add_dict_string(d, "published", rl->published);
	rte_tel_data_add_dict_u64(d, "watch", rl->watch);
	rte_tel_data_add_dict_u64(d, "reloads", rl->reloads);
	rte_tel_data_add_dict_u64(d, "reload_failures", rl->failures);
	rte_tel_data_add_dict_string(d, "last_error", rl->last_error);
	sl_policy_release();
	return 0;
}

int
sl_reload_init(struct sl_app *app)
{
	size_t sz = rte_rcu_qsbr_get_memsize(RTE_MAX_LCORE);
	char msg[256];

	app->reloader = calloc(1, sizeof(*app->reloader));
	app->qs = rte_zmalloc("sl_rcu", sz, RTE_CACHE_LINE_SIZE);
	if (app->reloader == NULL || app->qs == NULL ||
	    rte_rcu_qsbr_init(app->qs, RTE_MAX_LCORE) != 0)
		return -1;
	if (assign_slots(app->reloader, app->policy, msg, sizeof(msg)) != 0)
		return -1;
	sl_telemetry_set_rules(app->policy->rs, app->policy->slot);
	remember_stat(app->reloader, app->config_path);
	app->reloader->watch = app->cfg->reload.watch;
	if (sl_telemetry_cmd("/sluice/config", cmd_config, app,
			     "The config's path, version, reload counts and "
			     "last error") != 0)
		return -1;
	return sl_telemetry_cmd(
		"/sluice/reload", cmd_reload, app,
		"Reloads the config file; returns the version or the errors");
}

void
sl_reload_free(struct sl_app *app)
{
	sl_telemetry_withdraw("/sluice/reload", app);
	sl_telemetry_withdraw("/sluice/config", app);
	free(app->reloader);
	app->reloader = NULL;
}

static int
same_file(const struct stat *a, const struct stat *b)
{
	return a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	       a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	       a->st_size == b->st_size && a->st_ino == b->st_ino;
}

/*
 * Called once a second. A changed file is applied only once it has stayed
 * unchanged for a whole poll: an editor saving in place, or a deploy
 * copying over the file, leaves it half written for a moment, and a half
 * that parses (a rule cut after its limit, the rules after it gone) must
 * never go live. Writing by rename is atomic and costs the same second.
 */
void
sl_reload_poll(struct sl_app *app)
{
	struct sl_reloader *rl = app->reloader;
	struct stat st;
	char msg[8192];
	struct sl_policy_peek pk;

	if (!rl->watch || app->config_path == NULL ||
	    stat(app->config_path, &st) != 0 ||
	    same_file(&st, &rl->last_stat)) {
		rl->seen = 0;
		return;
	}
	if (!rl->seen || !same_file(&st, &rl->seen_stat)) {
		rl->seen_stat = st;
		rl->seen = 1;
		return;
	}
	rl->seen = 0;
	if (sl_reload(app, msg, sizeof(msg)) == 0) {
		sl_policy_peek(app, &pk);
		SL_LOG(NOTICE, "reload (file changed): rules version %s%s%s",
		       pk.version, msg[0] ? "; " : "", msg);
	} else
		SL_LOG(ERR,
		       "reload (file changed) refused, running rules "
		       "kept:\n%s",
		       msg);
}
