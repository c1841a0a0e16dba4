/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The sampled decision stream: worker rings drained by a control thread
 * into JSON lines or a capped Redis Stream.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#include <rte_cycles.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_ring.h>
#include <rte_ring_elem.h>
#include <rte_telemetry.h>

#include "decisions.h"
#include "policy.h"
#include "redis.h"
#include "sl_telemetry.h"
#include "store.h"

#define DRAIN_BURST 256
#define LINE_MAX_B  1024
#define NS          1000000000ULL

struct sl_decisions {
	const struct sl_app *app;
	const struct sl_worker_view *ws;
	unsigned int n;
	struct rte_ring *rings[RTE_MAX_LCORE];
	char path[SL_PATH_MAX];
	FILE *f;
	char stream[SL_NAME_MAX];
	uint32_t maxlen;
	char host[256];
	uint16_t port;
	struct sl_redis_auth auth;
	uint8_t ident_clear; /* decisions.identity: clear */
	char ident_secret[SL_SECRET_MAX];
	redisContext *rc;
	uint64_t retry_ns; /* no connection attempt before then */
	char node[64];
	int64_t wall_off_ns; /* Unix ns = worker ns + this */
	pthread_t th;
	volatile int stop;
	volatile int reopen;
	/* written by the thread, read by telemetry */
	uint64_t file_written, stream_written;
	uint64_t file_errors, stream_errors, sink_dropped, redirects;
};

/* ---- formatting ---- */

/* JSON string body: quotes, backslashes and every byte outside printable
 * ASCII escaped, so any header bytes give valid JSON. */
static size_t
json_str(char *o, size_t cap, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	size_t n = 0;

	for (; *s && n + 7 < cap; s++) {
		uint8_t c = (uint8_t)*s;

		if (c == '"' || c == '\\') {
			o[n++] = '\\';
			o[n++] = (char)c;
		} else if (c < 0x20 || c >= 0x7f) {
			memcpy(o + n, "\\u00", 4);
			o[n + 4] = hex[c >> 4];
			o[n + 5] = hex[c & 15];
			n += 6;
		} else {
			o[n++] = (char)c;
		}
	}
	o[n] = '\0';
	return n;
}

static const char *const verdict_name[] = {"allowed", "rejected", "blocked"};

struct fields {
	char ts[40];
	char rule[SL_NAME_MAX * 7];
	char tier[SL_NAME_MAX * 7];
	char ident[SL_IDENT_MAX * 7 + 64];
	int has_rule, has_tier;
};

/*
 * An API key or user as "key#" or "user#" and the first 16 hex digits of
 * SHA-256(secret, a newline, "key:ID"): the same identity always reads the
 * same (grep, join, count), the secret never leaves the node, and who
 * knows a key and the secret finds its lines (docs/reference/decisions.md
 * says how). Addresses stay as they are.
 */
static void
digest_ident(const struct sl_decisions *d, char *s, size_t cap)
{
	char buf[SL_SECRET_MAX + SL_IDENT_MAX * 4 + 64], hex[65];
	size_t colon = strcspn(s, ":");
	int n = snprintf(buf, sizeof(buf), "%s\n%s", d->ident_secret, s);

	if (n < 0 || (size_t)n >= sizeof(buf) || s[colon] != ':')
		return;
	sl_sha256_hex(buf, (size_t)n, hex);
	snprintf(s + colon, cap - colon, "#%.16s", hex);
}

static void
fill_fields(const struct sl_decisions *d, const struct sl_dec_rec *r,
	    struct fields *f)
{
	int64_t ns = (int64_t)r->t_ns + d->wall_off_ns;
	time_t secs = (time_t)(ns / (int64_t)NS);
	struct sl_identity id;
	char rule[SL_NAME_MAX], tier[SL_NAME_MAX], s[SL_IDENT_MAX * 4 + 64];
	struct tm tm;
	size_t k;

	gmtime_r(&secs, &tm);
	k = strftime(f->ts, sizeof(f->ts), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(f->ts + k, sizeof(f->ts) - k, ".%06luZ",
		 (unsigned long)((ns % (int64_t)NS) / 1000));
	sl_telemetry_names(r->slot, r->tier, rule, sizeof(rule), tier,
			   sizeof(tier));
	f->has_rule = r->slot != SL_DEC_NO_RULE;
	f->has_tier = tier[0] != '\0';
	json_str(f->rule, sizeof(f->rule), rule);
	json_str(f->tier, sizeof(f->tier), tier);
	memset(&id, 0, sizeof(id));
	id.kind = r->kind;
	id.ip_af = r->ip_af;
	id.len = r->len;
	memcpy(id.id, r->id, r->len);
	sl_ident_format(&id, s, sizeof(s));
	if (!d->ident_clear && (id.kind == SL_ID_KEY || id.kind == SL_ID_USER))
		digest_ident(d, s, sizeof(s));
	json_str(f->ident, sizeof(f->ident), s);
}

static const char *
jbool(int b)
{
	return b ? "true" : "false";
}

static int
format_line(const struct sl_decisions *d, const struct sl_dec_rec *r,
	    const struct fields *f, char *buf, size_t cap)
{
	int n = snprintf(
		buf, cap,
		"{\"ts\":\"%s\",\"node\":\"%s\",\"worker\":%u,"
		"\"decision\":\"%s\",\"rule\":%s%s%s,\"tier\":%s%s%s,"
		"\"identity\":\"%s\",\"remaining\":%llu",
		f->ts, d->node, r->worker, verdict_name[r->verdict],
		f->has_rule ? "\"" : "", f->has_rule ? f->rule : "null",
		f->has_rule ? "\"" : "", f->has_tier ? "\"" : "",
		f->has_tier ? f->tier : "null", f->has_tier ? "\"" : "",
		f->ident, (unsigned long long)r->remaining);

	if (r->verdict == SL_V_REJECTED)
		n += snprintf(buf + n, cap - (size_t)n,
			      ",\"retry_after_ms\":%u", r->retry_ms);
	n += snprintf(
		buf + n, cap - (size_t)n,
		",\"degraded\":%s,\"parked\":%s,\"shadow_rejected\":%s}\n",
		jbool(r->flags & SL_DF_DEGRADED),
		jbool(r->flags & SL_DF_PARKED), jbool(r->flags & SL_DF_SHADOW));
	return n < (int)cap ? n : (int)cap - 1;
}

/* ---- Redis Stream sink ---- */

static uint64_t
mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * NS + (uint64_t)t.tv_nsec;
}

static void
drop_conn(struct sl_decisions *d)
{
	if (d->rc != NULL)
		redisFree(d->rc);
	d->rc = NULL;
	d->retry_ns = mono_ns() + NS;
}

static int
ensure_conn(struct sl_decisions *d)
{
	if (d->rc != NULL)
		return 0;
	if (mono_ns() < d->retry_ns)
		return -1;
	d->rc = sl_redis_connect_sync(d->host, d->port, &d->auth, 500, 1000);
	if (d->rc == NULL) {
		drop_conn(d);
		return -1;
	}
	return 0;
}

static void
append_xadd(struct sl_decisions *d, const struct sl_dec_rec *r,
	    const struct fields *f)
{
	char wk[8], rem[24], retry[16], maxlen[16], fl[4];
	const char *argv[32];
	int argc = 0;

	snprintf(wk, sizeof(wk), "%u", r->worker);
	snprintf(rem, sizeof(rem), "%llu", (unsigned long long)r->remaining);
	snprintf(retry, sizeof(retry), "%u", r->retry_ms);
	snprintf(maxlen, sizeof(maxlen), "%u", d->maxlen);
	snprintf(fl, sizeof(fl), "%u", r->flags);
#define ARG(x) (argv[argc++] = (x))
	ARG("XADD");
	ARG(d->stream);
	ARG("MAXLEN");
	ARG("~");
	ARG(maxlen);
	ARG("*");
	ARG("ts");
	ARG(f->ts);
	ARG("node");
	ARG(d->node);
	ARG("worker");
	ARG(wk);
	ARG("decision");
	ARG(verdict_name[r->verdict]);
	ARG("rule");
	ARG(f->has_rule ? f->rule : "");
	ARG("tier");
	ARG(f->tier);
	ARG("identity");
	ARG(f->ident);
	ARG("remaining");
	ARG(rem);
	if (r->verdict == SL_V_REJECTED) {
		ARG("retry_after_ms");
		ARG(retry);
	}
	ARG("flags");
	ARG(fl);
#undef ARG
	redisAppendCommandArgv(d->rc, argc, argv, NULL);
}

/* A cluster that moved the stream's slot says where: follow it. */
static void
follow_moved(struct sl_decisions *d, const char *err)
{
	struct sl_redirect r;

	if (!sl_redis_redirect(err, &r) || !r.moved)
		return;
	snprintf(d->host, sizeof(d->host), "%s", r.host);
	d->port = r.port;
	d->redirects++;
	drop_conn(d);
	d->retry_ns = 0;
}

/*
 * Reads the replies of the records sent; the indices a cluster answered
 * with MOVED are kept in idx (returned count) to send again.
 */
static uint32_t
read_replies(struct sl_decisions *d, uint16_t *idx, uint32_t n)
{
	char moved[300] = "";
	uint32_t i, again = 0;

	for (i = 0; i < n; i++) {
		redisReply *rep = NULL;

		if (redisGetReply(d->rc, (void **)&rep) != REDIS_OK) {
			d->stream_errors += n - i;
			drop_conn(d);
			return 0;
		}
		if (rep->type != REDIS_REPLY_ERROR) {
			d->stream_written++;
		} else if (strncmp(rep->str, "MOVED ", 6) == 0) {
			snprintf(moved, sizeof(moved), "%s", rep->str);
			idx[again++] = idx[i];
		} else {
			d->stream_errors++;
		}
		freeReplyObject(rep);
	}
	if (moved[0])
		follow_moved(d, moved);
	return again;
}

/* XADDs a batch, pipelined; follows one MOVED and sends those again. */
static void
send_stream(struct sl_decisions *d, const struct sl_dec_rec *recs,
	    const struct fields *fs, uint32_t n)
{
	uint16_t idx[DRAIN_BURST];
	uint32_t i, left = n, attempt;

	for (i = 0; i < n; i++)
		idx[i] = (uint16_t)i;
	for (attempt = 0; attempt < 2 && left > 0; attempt++) {
		if (ensure_conn(d) != 0) {
			d->sink_dropped += left;
			return;
		}
		for (i = 0; i < left; i++)
			append_xadd(d, &recs[idx[i]], &fs[idx[i]]);
		left = read_replies(d, idx, left);
	}
	d->stream_errors += left;
}

/* ---- the writer thread ---- */

static void
open_file(struct sl_decisions *d)
{
	FILE *f = fopen(d->path, "a");

	if (f == NULL) {
		SL_LOG(WARNING,
		       "decisions: cannot open %s: %s; still writing "
		       "to the old file",
		       d->path, strerror(errno));
		return;
	}
	setvbuf(f, NULL, _IOFBF, 1 << 20);
	if (d->f != NULL)
		fclose(d->f);
	d->f = f;
}

static void
write_file(struct sl_decisions *d, const struct sl_dec_rec *r,
	   const struct fields *f)
{
	char line[LINE_MAX_B + SL_IDENT_MAX * 7];
	int n = format_line(d, r, f, line, sizeof(line));

	if (fwrite(line, 1, (size_t)n, d->f) == (size_t)n)
		d->file_written++;
	else
		d->file_errors++;
}

static uint32_t
drain(struct sl_decisions *d)
{
	/* the writer thread's own: names resolved once for both sinks */
	static struct sl_dec_rec recs[DRAIN_BURST];
	static struct fields fs[DRAIN_BURST];
	uint32_t total = 0, i, k, j;

	for (i = 0; i < d->n; i++) {
		k = rte_ring_sc_dequeue_burst_elem(
			d->rings[i], recs, sizeof(recs[0]), DRAIN_BURST, NULL);
		for (j = 0; j < k; j++)
			fill_fields(d, &recs[j], &fs[j]);
		for (j = 0; d->f != NULL && j < k; j++)
			write_file(d, &recs[j], &fs[j]);
		if (d->stream[0] && k > 0)
			send_stream(d, recs, fs, k);
		total += k;
	}
	if (total > 0 && d->f != NULL && fflush(d->f) != 0) {
		d->file_errors++;
		clearerr(d->f);
	}
	return total;
}

static void *
writer(void *arg)
{
	struct sl_decisions *d = arg;

	while (!d->stop) {
		if (d->reopen) {
			d->reopen = 0;
			if (d->path[0])
				open_file(d);
		}
		if (drain(d) == 0)
			usleep(2000);
	}
	while (drain(d) > 0)
		;
	return NULL;
}

/* ---- telemetry ---- */

static int
cmd_decisions(void *ctx, const char *params, struct rte_tel_data *t)
{
	const struct sl_decisions *d = ctx;
	struct sl_policy_peek pk;
	uint64_t sampled = 0, dropped = 0;
	unsigned int i;

	RTE_SET_USED(params);
	rte_tel_data_start_dict(t);
	/* not through d->app->policy: a reload may free it meanwhile */
	sl_policy_peek(d->app, &pk);
	rte_tel_data_add_dict_u64(t, "sample_ppm", pk.dec_ppm[0]);
	rte_tel_data_add_dict_u64(t, "sample_rejected_ppm", pk.dec_ppm[1]);
	rte_tel_data_add_dict_string(t, "file", d->path);
	rte_tel_data_add_dict_string(t, "stream", d->stream);
	for (i = 0; i < d->n; i++) {
		sampled += d->ws[i].ctr->decisions_sampled;
		dropped += d->ws[i].ctr->decisions_dropped;
	}
	rte_tel_data_add_dict_u64(t, "sampled", sampled);
	rte_tel_data_add_dict_u64(t, "ring_dropped", dropped);
	/* lines plus entries: each sink counts its own */
	rte_tel_data_add_dict_u64(t, "written",
				  d->file_written + d->stream_written);
	rte_tel_data_add_dict_u64(t, "file_written", d->file_written);
	rte_tel_data_add_dict_u64(t, "stream_written", d->stream_written);
	rte_tel_data_add_dict_u64(t, "file_errors", d->file_errors);
	rte_tel_data_add_dict_u64(t, "stream_errors", d->stream_errors);
	rte_tel_data_add_dict_u64(t, "stream_unreachable_dropped",
				  d->sink_dropped);
	rte_tel_data_add_dict_u64(t, "stream_redirects", d->redirects);
	return 0;
}

/* ---- life cycle ---- */

/* The host name goes into JSON unescaped: keep it to name characters. */
static void
safe_node(char *s)
{
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '-' || *s == '.' ||
		      *s == '_'))
			*s = '_';
}

static int
make_rings(struct sl_decisions *d)
{
	unsigned int i;

	for (i = 0; i < d->n; i++) {
		char name[RTE_RING_NAMESIZE];

		snprintf(name, sizeof(name), "sl_dec%u", i);
		d->rings[i] = rte_ring_create_elem(
			name, sizeof(struct sl_dec_rec), SL_DEC_RING,
			(int)rte_lcore_to_socket_id(d->ws[i].lcore),
			RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (d->rings[i] == NULL)
			return -1;
		*d->ws[i].dec_ring = d->rings[i];
	}
	return 0;
}

static void
wall_offset(struct sl_decisions *d)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	d->wall_off_ns = (int64_t)t.tv_sec * (int64_t)NS + t.tv_nsec -
			 (int64_t)sl_tsc_ns(d->app, rte_rdtsc());
}

int
sl_decisions_create(const struct sl_config *cfg, const struct sl_app *app,
		    const struct sl_worker_view *ws, unsigned int n,
		    struct sl_decisions **out)
{
	struct sl_decisions *d;

	*out = NULL;
	if (!cfg->decisions.file[0] && !cfg->decisions.stream[0])
		return 0;
	d = rte_zmalloc("sl_decisions", sizeof(*d), RTE_CACHE_LINE_SIZE);
	if (d == NULL)
		return -1;
	d->app = app;
	d->ws = ws;
	d->n = n;
	snprintf(d->path, sizeof(d->path), "%s", cfg->decisions.file);
	snprintf(d->stream, sizeof(d->stream), "%s", cfg->decisions.stream);
	d->ident_clear = cfg->decisions.identity_clear;
	snprintf(d->ident_secret, sizeof(d->ident_secret), "%s",
		 cfg->decisions.identity_secret);
	d->maxlen = cfg->decisions.maxlen;
	if (cfg->store.present) {
		snprintf(d->host, sizeof(d->host), "%s",
			 cfg->store.endpoints[0].host);
		d->port = cfg->store.endpoints[0].port;
		sl_redis_auth_set(&d->auth, cfg->store.username,
				  cfg->store.password);
	}
	if (gethostname(d->node, sizeof(d->node)) != 0)
		snprintf(d->node, sizeof(d->node), "sluice");
	d->node[sizeof(d->node) - 1] = '\0';
	safe_node(d->node);
	wall_offset(d);
	if (d->path[0]) {
		open_file(d);
		if (d->f == NULL)
			goto fail;
	}
	if (make_rings(d) != 0)
		goto fail;
	*out = d;
	return 0;
fail:
	sl_decisions_stop(d);
	return -1;
}

int
sl_decisions_start(struct sl_decisions *d)
{
	if (d == NULL)
		return 0;
	if (sl_telemetry_cmd(
		    "/sluice/decisions", cmd_decisions, d,
		    "The sampled decision stream: rates, sink, counts") != 0)
		SL_LOG(WARNING, "/sluice/decisions not registered");
	return rte_ctrl_thread_create(&d->th, "sl-decisions", NULL, writer, d);
}

void
sl_decisions_reopen(struct sl_decisions *d)
{
	if (d != NULL)
		d->reopen = 1;
}

void
sl_decisions_stop(struct sl_decisions *d)
{
	unsigned int i;

	if (d == NULL)
		return;
	sl_telemetry_withdraw("/sluice/decisions", d);
	if (d->th) {
		d->stop = 1;
		pthread_join(d->th, NULL);
	}
	for (i = 0; i < d->n; i++) {
		if (*d->ws[i].dec_ring == d->rings[i])
			*d->ws[i].dec_ring = NULL;
		rte_ring_free(d->rings[i]);
	}
	if (d->f != NULL)
		fclose(d->f);
	if (d->rc != NULL)
		redisFree(d->rc);
	rte_free(d);
}
