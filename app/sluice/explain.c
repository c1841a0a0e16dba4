/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sluice --explain: how the appliance reads request heads, without EAL
 * or ports. The same parser, normaliser, identity, blocklist, matcher and
 * bucket keys as the data path, printed as JSON, so that an operator can
 * see why a request was or was not limited and a test can compare
 * sluice's view with the backend's.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sl_http.h"
#include "sl_ident.h"
#include "sl_rules.h"

#include "explain.h"

/* heads back to back, one explained after another */
#define INPUT_MAX (4u << 20)

/* A JSON string: quotes, backslashes and control bytes escaped. */
static void
json_str(FILE *f, const char *p, uint32_t n)
{
	uint32_t i;

	fputc('"', f);
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)p[i];

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static int
read_input(const char *path, char *buf, size_t cap, size_t *len)
{
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");

	if (f == NULL)
		return -1;
	*len = fread(buf, 1, cap, f);
	if (f != stdin)
		fclose(f);
	return 0;
}

static int
peer_addr(const char *s, uint8_t *af, uint8_t addr[16])
{
	memset(addr, 0, 16);
	if (inet_pton(AF_INET, s, addr) == 1) {
		*af = 4;
		return 0;
	}
	if (inet_pton(AF_INET6, s, addr) == 1) {
		*af = 6;
		return 0;
	}
	return -1;
}

/* The override a rule's limit and burst above came from: its line in
 * the file, when it ends, and why it was given. */
static void
print_override(const struct sl_override *o)
{
	char when[32];
	struct tm tm;
	time_t t = (time_t)o->expires;

	gmtime_r(&t, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	printf(",\"override\":{\"line\":%u,\"expires\":\"%s\",\"reason\":",
	       o->line, when);
	json_str(stdout, o->reason, (uint32_t)strlen(o->reason));
	printf("}");
}

static void
print_rules(const struct sl_ruleset *rs, const struct sl_http_req *req,
	    const struct sl_identity *id, const struct sl_match_req *m)
{
	uint16_t idx[SL_MAX_RULES];
	uint32_t n = sl_ruleset_match(rs, m, idx, SL_MAX_RULES), i;

	printf(",\"rules\":[");
	for (i = 0; i < n; i++) {
		const struct sl_rule *r = sl_ruleset_rule(rs, idx[i]);
		const struct sl_override *o = NULL;
		const struct sl_rate *lim = &r->limit;
		uint64_t burst = r->burst;
		struct sl_scope_id s;
		uint64_t k[2];

		sl_scope_of(r->scope, req, id, &s);
		sl_bucket_words(sl_ruleset_rule_id(rs, idx[i]), &s, k);
		if (s.kind != 0xff)
			o = sl_ruleset_override(rs, idx[i], s.kind, s.b, s.len,
						(int64_t)time(NULL));
		if (o != NULL) {
			lim = &o->limit;
			burst = o->burst;
		}
		printf("%s{\"name\":", i ? "," : "");
		json_str(stdout, r->name, (uint32_t)strlen(r->name));
		printf(",\"scope\":\"%s\",\"shadow\":%s,"
		       "\"algorithm\":\"%s\",\"limit\":%llu,"
		       "\"period_ms\":%llu,\"burst\":%llu,\"cost\":%u,"
		       "\"bucket\":\"%016llx%016llx\"",
		       sl_scope_name(r->scope), r->shadow ? "true" : "false",
		       sl_algo_name(r->algo), (unsigned long long)lim->count,
		       (unsigned long long)lim->period_ms,
		       (unsigned long long)burst, r->cost,
		       (unsigned long long)k[0], (unsigned long long)k[1]);
		if (o != NULL)
			print_override(o);
		printf("}");
	}
	printf("]");
}

/* The decision's inputs, as far as they do not need the store. */
static int
explain_req(const struct sl_config *c, const struct sl_ruleset *rs,
	    const struct sl_http_req *req, uint8_t af, const uint8_t *peer)
{
	struct sl_ident_cfg ic;
	struct sl_identity id;
	struct sl_http_norm nt;
	struct sl_match_req m;
	char *scratch = malloc(req->target.len + req->host.len +
			       req->path_override.len + 1);
	char who[SL_IDENT_MAX * 2 + 16];
	int tier = -1, blocked, err;

	if (scratch == NULL)
		return 1;
	sl_config_ident_cfg(c, &ic);
	err = sl_ident_extract(&ic, req, af, peer, &id);
	if (err != 0) {
		printf("{\"refused\":\"%s\"}\n", sl_http_err_name(err));
		free(scratch);
		return 0;
	}
	sl_ident_format(&id, who, sizeof(who));
	blocked =
		(req->api_key.len &&
		 sl_ruleset_key_info(rs, req->api_key.p, req->api_key.len,
				     &tier)) ||
		(req->bearer.len &&
		 sl_ruleset_key_blocked(rs, req->bearer.p, req->bearer.len)) ||
		(req->key_param.len &&
		 sl_ruleset_key_blocked(rs, req->key_param.p,
					req->key_param.len)) ||
		sl_ruleset_ip_blocked(rs, id.ip_af, id.addr);
	printf("{\"identity\":");
	json_str(stdout, who, (uint32_t)strlen(who));
	printf(",\"blocked\":%s", blocked ? "true" : "false");
	err = sl_http_normalize(
		&c->request, req, scratch,
		req->target.len + req->host.len + req->path_override.len, &nt);
	if (err == 0 && sl_http_credentials_conflict(req))
		err = SL_HTTP_E_CREDENTIALS;
	if (err != 0) {
		printf(",\"refused\":\"%s\"}\n", sl_http_err_name(err));
		free(scratch);
		return 0;
	}
	printf(",\"path\":");
	json_str(stdout, nt.path.p, nt.path.len);
	if (nt.alt_path.len) {
		/* the path a framework honouring X-Original-URL routes by */
		printf(",\"path_override\":");
		json_str(stdout, nt.alt_path.p, nt.alt_path.len);
	}
	printf(",\"host\":");
	json_str(stdout, nt.host.p, nt.host.len);
	sl_match_req_init(&m, rs, req, &nt);
	m.tier = (int16_t)(m.has_key ? (tier >= 0 ? tier
						  : sl_ruleset_default_tier(rs))
				     : -1);
	if (m.tier >= 0)
		printf(",\"tier\":\"%s\"",
		       sl_ruleset_tier_name(rs, (uint32_t)m.tier));
	print_rules(rs, req, &id, &m);
	printf("}\n");
	free(scratch);
	return 0;
}

/* Where the head at p[0..n) (refused) ends: past its blank line, or n. */
static size_t
past_blank_line(const char *p, size_t n)
{
	size_t i;

	for (i = 0; i + 3 < n; i++)
		if (memcmp(p + i, "\r\n\r\n", 4) == 0)
			return i + 4;
	return n;
}

/*
 * Each head of buf in turn, one line each: heads back to back, as a
 * client pipelines them (a body by Content-Length is skipped; a chunked
 * one ends the run). A refused head's bytes up to its blank line are
 * skipped, so that one input can hold many spellings; trailing bytes that
 * are no whole head are "incomplete".
 */
static void
explain_all(const struct sl_config *c, const struct sl_ruleset *rs,
	    const char *buf, size_t len, uint8_t af, const uint8_t *addr)
{
	struct sl_http_cfg hc;
	struct sl_http_req req;
	size_t off = 0;

	sl_config_http_cfg(c, &hc);
	do {
		int n = sl_http_parse_request(buf + off, len - off, &hc, &req);

		if (n == SL_HTTP_INCOMPLETE) {
			printf("{\"refused\":\"incomplete\"}\n");
			return;
		}
		if (n < 0) {
			printf("{\"refused\":\"%s\"}\n",
			       sl_http_err_name(req.error));
			off += past_blank_line(buf + off, len - off);
			continue;
		}
		if (explain_req(c, rs, &req, af, addr) != 0 || req.chunked)
			return;
		off += (size_t)n;
		off += req.content_length < len - off ? req.content_length
						      : len - off;
	} while (off < len);
}

int
sl_explain(const char *config, const char *file, const char *peer)
{
	char err[8192], *buf = malloc(INPUT_MAX);
	struct sl_config *c = sl_config_load(config, err, sizeof(err));
	struct sl_ruleset *rs = NULL;
	uint8_t af, addr[16];
	size_t len;
	int rc = 1;

	if (c == NULL) {
		fputs(err, stderr);
	} else if (buf == NULL || (rs = sl_ruleset_build(c)) == NULL) {
		fprintf(stderr, "sluice: out of memory\n");
	} else if (peer_addr(peer, &af, addr) != 0) {
		fprintf(stderr, "sluice: --peer: not an address: %s\n", peer);
	} else if (read_input(file, buf, INPUT_MAX, &len) != 0) {
		perror(file);
	} else {
		explain_all(c, rs, buf, len, af, addr);
		rc = 0;
	}
	sl_ruleset_free(rs);
	sl_config_free(c);
	free(buf);
	return rc;
}
