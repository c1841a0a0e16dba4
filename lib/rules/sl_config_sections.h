/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The schema: one handler per key, one table per section. Included by
 * sl_config.c only; kept apart so the walker and the schema read alone.
 */

static int
is_token(const char *s, int allow_dot)
{
	if (*s == '\0')
		return 0;
	for (; *s; s++) {
		char c = *s;

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '-' || c == '_' ||
		      (allow_dot && c == '.')))
			return 0;
	}
	return 1;
}

/* The value of key name in a mapping; NULL when it has none. */
static yaml_node_t *
value_of(struct loader *L, yaml_node_t *map, const char *name)
{
	yaml_node_pair_t *p;

	for (p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
	     p++) {
		yaml_node_t *k = node(L, p->key);

		if (k->type == YAML_SCALAR_NODE &&
		    strcmp((const char *)k->data.scalar.value, name) == 0)
			return node(L, p->value);
	}
	return NULL;
}

static int
has_key(struct loader *L, yaml_node_t *map, const char *name)
{
	if (map->type != YAML_MAPPING_NODE)
		return 1; /* already reported as not a mapping */
	return value_of(L, map, name) != NULL;
}

static int
find_tier(const struct sl_config *c, const char *name)
{
	uint32_t i;

	for (i = 0; i < c->n_tiers; i++)
		if (strcmp(c->tiers[i], name) == 0)
			return (int)i;
	return -1;
}

static int
get_tier(struct loader *L, yaml_node_t *n, const char *what)
{
	const char *s = scalar(L, n, what);
	int t;

	if (s == NULL)
		return -1;
	t = find_tier(L->cfg, s);
	if (t < 0)
		error_at(L, n, "%s: unknown tier '%s'", what, s);
	return t;
}

static int
get_fraction(struct loader *L, yaml_node_t *n, const char *what, double min,
	     double max, uint32_t *ppm)
{
	const char *s = scalar(L, n, what);
	char *end;
	double d;

	if (s == NULL)
		return -1;
	d = strtod(s, &end);
	if (*s == '\0' || *end != '\0' || !(d >= min && d <= max)) {
		error_at(L, n, "%s: expected a number from %g to %g, got '%s'",
			 what, min, max, s);
		return -1;
	}
	*ppm = (uint32_t)(d * 1e6 + 0.5);
	return 0;
}

/* ---- dataplane ---- */

#define DP(L) (&(L)->cfg->dataplane)

static void
f_down(struct loader *L, yaml_node_t *v, void *o)
{
	(void)o;
	GET_UINT(L, v, "downstream_port", 0, 1023, DP(L)->downstream_port);
}
static void
f_up(struct loader *L, yaml_node_t *v, void *o)
{
	(void)o;
	GET_UINT(L, v, "upstream_port", 0, 1023, DP(L)->upstream_port);
}
static void
f_maxhead(struct loader *L, yaml_node_t *v, void *o)
{
	(void)o;
	GET_UINT(L, v, "max_head_bytes", 256, 65535, DP(L)->max_head_bytes);
}
static void
f_flows(struct loader *L, yaml_node_t *v, void *o)
{
	(void)o;
	GET_UINT(L, v, "flows_per_worker", 64, 1u << 26,
		 DP(L)->flows_per_worker);
}
static void
f_buckets(struct loader *L, yaml_node_t *v, void *o)
{
	(void)o;
	GET_UINT(L, v, "buckets_per_worker", 64, 1u << 26,
		 DP(L)->buckets_per_worker);
}
static void
f_heads(struct loader *L, yaml_node_t *v, void *o)
{
	(void)o;
	GET_UINT(L, v, "head_buffers_per_worker", 1, 1u << 20,
		 DP(L)->head_buffers_per_worker);
}
static void
f_heads_src(struct loader *L, yaml_node_t *v, void *o)
{
	(void)o;
	GET_UINT(L, v, "head_buffers_per_source", 0, 1u << 20,
		 DP(L)->head_buffers_per_source);
}
static void
f_head_timeout(struct loader *L, yaml_node_t *v, void *o)
{
	(void)o;
	GET_UINT(L, v, "head_timeout_ms", 100, 3600000, DP(L)->head_timeout_ms);
}
static void
f_idle(struct loader *L, yaml_node_t *v, void *o)
{
	(void)o;
	GET_UINT(L, v, "flow_idle_ms", 100, 86400000, DP(L)->flow_idle_ms);
}
static void
f_mbufs(struct loader *L, yaml_node_t *v, void *o)
{
	(void)o;
	GET_UINT(L, v, "mbufs", 1023, 1u << 22, DP(L)->mbufs);
}

static void
f_service_ports(struct loader *L, yaml_node_t *v, void *o)
{
	yaml_node_t *it;

	(void)o;
	if (!is_seq(L, v, "service_ports"))
		return;
	DP(L)->n_service_ports = 0;
	if (seq_len(v) == 0 || seq_len(v) > SL_MAX_SERVICE_PORTS)
		error_at(L, v, "service_ports: expected 1 to %d ports",
			 SL_MAX_SERVICE_PORTS);
	SEQ_FOREACH(L, v, it)
	{
		uint64_t p;

		if (get_u64(L, it, "service_ports", 1, 65535, &p) == 0 &&
		    DP(L)->n_service_ports < SL_MAX_SERVICE_PORTS)
			DP(L)->service_ports[DP(L)->n_service_ports++] =
				(uint16_t)p;
	}
}

static void
f_coord_timeout(struct loader *L, yaml_node_t *v, void *o)
{
	(void)o;
	GET_UINT(L, v, "coordinator_timeout_ms", 1, 10000,
		 DP(L)->coordinator_timeout_ms);
}

static void
f_idle_sleep(struct loader *L, yaml_node_t *v, void *o)
{
	(void)o;
	GET_UINT(L, v, "idle_sleep_us", 0, 100000, DP(L)->idle_sleep_us);
}

static const struct field dataplane_fields[] = {
	{"idle_sleep_us", f_idle_sleep},
	{"coordinator_timeout_ms", f_coord_timeout},
	{"downstream_port", f_down},
	{"upstream_port", f_up},
	{"service_ports", f_service_ports},
	{"max_head_bytes", f_maxhead},
	{"flows_per_worker", f_flows},
	{"buckets_per_worker", f_buckets},
	{"head_buffers_per_worker", f_heads},
	{"head_buffers_per_source", f_heads_src},
	{"head_timeout_ms", f_head_timeout},
	{"flow_idle_ms", f_idle},
	{"mbufs", f_mbufs},
	{NULL, NULL},
};

/* ---- identity ---- */

#define ID(L) (&(L)->cfg->identity)

static void
header_name(struct loader *L, yaml_node_t *v, const char *what, char *dst)
{
	if (get_str(L, v, what, dst, SL_NAME_MAX) == 0 && dst[0] != '\0' &&
	    !is_token(dst, 1))
		error_at(L, v, "%s: '%s' is not a valid header name", what,
			 dst);
}

static void
f_keyhdr(struct loader *L, yaml_node_t *v, void *o)
{
	(void)o;
	header_name(L, v, "api_key_header", ID(L)->api_key_header);
}
static void
f_userhdr(struct loader *L, yaml_node_t *v, void *o)
{
	(void)o;
	header_name(L, v, "user_header", ID(L)->user_header);
}
static void
f_hops(struct loader *L, yaml_node_t *v, void *o)
{
	(void)o;
	GET_UINT(L, v, "trusted_hops", 0, 16, ID(L)->trusted_hops);
}
static void
f_v6pfx(struct loader *L, yaml_node_t *v, void *o)
{
	(void)o;
	GET_UINT(L, v, "ipv6_prefix", 1, 128, ID(L)->ipv6_prefix);
}

static void
f_client_ip(struct loader *L, yaml_node_t *v, void *o)
{
	static const char *const names[] = {"peer", "x-forwarded-for", NULL};

	(void)o;
	get_enum(L, v, "client_ip", names, &ID(L)->use_xff);
}

static const struct field identity_fields[] = {
	{"api_key_header", f_keyhdr}, {"user_header", f_userhdr},
	{"client_ip", f_client_ip},   {"trusted_hops", f_hops},
	{"ipv6_prefix", f_v6pfx},     {NULL, NULL},
};

/* ---- tiers and keys ---- */

static void
f_tiers(struct loader *L, yaml_node_t *v, void *o)
{
	yaml_node_t *it;
	struct sl_config *c = L->cfg;

	(void)o;
	if (!is_seq(L, v, "tiers"))
		return;
	c->n_tiers = 0;
	if (seq_len(v) == 0 || seq_len(v) > SL_MAX_TIERS)
		error_at(L, v, "tiers: expected 1 to %d tiers", SL_MAX_TIERS);
	SEQ_FOREACH(L, v, it)
	{
		char name[SL_NAME_MAX];

		if (get_str(L, it, "tiers", name, sizeof(name)) != 0)
			continue;
		if (!is_token(name, 0))
			error_at(L, it, "tiers: '%s' is not a valid name",
				 name);
		else if (find_tier(c, name) >= 0)
			error_at(L, it, "tiers: duplicate tier '%s'", name);
		else if (c->n_tiers < SL_MAX_TIERS)
			strcpy(c->tiers[c->n_tiers++], name);
	}
}

static void
f_default_tier(struct loader *L, yaml_node_t *v, void *o)
{
	int t = get_tier(L, v, "default_tier");

	(void)o;
	if (t >= 0)
		L->cfg->default_tier = (uint8_t)t;
}

static void
f_keys(struct loader *L, yaml_node_t *v, void *o)
{
	struct sl_config *c = L->cfg;
	yaml_node_pair_t *p;

	(void)o;
	if (v->type != YAML_MAPPING_NODE) {
		error_at(L, v, "keys: expected a mapping of key: tier");
		return;
	}
	c->n_keys = 0;
	free(c->keys); /* a repeated section is reported; never leaked */
	c->keys = calloc((size_t)(v->data.mapping.pairs.top -
				  v->data.mapping.pairs.start) +
				 1,
			 sizeof(*c->keys));
	for (p = v->data.mapping.pairs.start; p < v->data.mapping.pairs.top;
	     p++) {
		struct sl_key_tier *kt = &c->keys[c->n_keys];
		int t;

		if (get_str(L, node(L, p->key), "keys", kt->key,
			    sizeof(kt->key)) != 0)
			continue;
		t = get_tier(L, node(L, p->value), "keys");
		if (t >= 0) {
			kt->tier = (uint8_t)t;
			c->n_keys++;
		}
	}
}

/* ---- rules ---- */

static void
f_methods(struct loader *L, yaml_node_t *v, void *o)
{
	struct sl_rule *r = o;
	yaml_node_t *it;

	if (!is_seq(L, v, "methods"))
		return;
	SEQ_FOREACH(L, v, it)
	{
		const char *s = scalar(L, it, "methods");
		uint32_t b;

		if (s == NULL)
			continue;
		b = sl_method_bit(s, strlen(s));
		if (b == 0)
			error_at(L, it, "methods: unknown method '%s'", s);
		r->methods |= b;
	}
}

/*
 * A rule's path must be written as sluice will see requests: in the
 * normal form of the request section (parsed before the rules), so that
 * a rule can never name a spelling no request resolves to.
 */
static void
check_normal(struct loader *L, yaml_node_t *v, const char *what,
	     const char *path)
{
	uint32_t len = (uint32_t)strlen(path);
	char out[SL_TEXT_MAX];
	int n;

	if (path[0] != '/') {
		error_at(L, v, "%s: must start with '/'", what);
		return;
	}
	n = sl_http_normalize_path(&L->cfg->request, path, len, out);
	if (n < 0)
		error_at(L, v, "%s: '%s' is refused as a request would be (%s)",
			 what, path, sl_http_err_name(-n));
	else if ((uint32_t)n != len || memcmp(out, path, len) != 0)
		error_at(L, v,
			 "%s: '%s' is not in normal form; requests for it "
			 "resolve to '%.*s'",
			 what, path, n, out);
}

static void
f_path_prefix(struct loader *L, yaml_node_t *v, void *o)
{
	struct sl_rule *r = o;

	if (get_str(L, v, "path_prefix", r->path_prefix,
		    sizeof(r->path_prefix)) == 0)
		check_normal(L, v, "path_prefix", r->path_prefix);
}

/* "{name}" segments and a last "*": the shapes sl_route_match knows. */
static void
check_route(struct loader *L, yaml_node_t *v, const char *path)
{
	const char *seg = path;

	while (seg != NULL && *seg == '/') {
		const char *end = strchr(seg + 1, '/');
		size_t n = end ? (size_t)(end - seg - 1) : strlen(seg + 1);
		const char *s = seg + 1;

		if (n == 1 && s[0] == '*' && end != NULL)
			error_at(L, v,
				 "path: '*' may only be the last segment");
		else if (n > 0 && s[0] == '{' &&
			 (n < 3 || s[n - 1] != '}' ||
			  memchr(s + 1, '{', n - 2) ||
			  memchr(s + 1, '}', n - 2)))
			error_at(L, v, "path: a '{name}' segment is malformed");
		else if (!(n > 0 && s[0] == '{') &&
			 (memchr(s, '{', n) || memchr(s, '}', n) ||
			  (n > 1 && memchr(s, '*', n))))
			error_at(L, v,
				 "path: '{name}' and '*' must be whole "
				 "segments");
		seg = end;
	}
}

static void
f_path(struct loader *L, yaml_node_t *v, void *o)
{
	struct sl_rule *r = o;

	if (get_str(L, v, "path", r->path, sizeof(r->path)) != 0)
		return;
	check_normal(L, v, "path", r->path);
	check_route(L, v, r->path);
}

static void
f_path_case(struct loader *L, yaml_node_t *v, void *o)
{
	static const char *const names[] = {"sensitive", "insensitive", NULL};

	get_enum(L, v, "path_case", names, &((struct sl_rule *)o)->path_icase);
}

static void
f_host(struct loader *L, yaml_node_t *v, void *o)
{
	struct sl_rule *r = o;
	size_t n;

	if (get_str(L, v, "host", r->host, sizeof(r->host)) != 0)
		return;
	/* compared with the request's normal host: lower case, no dot */
	for (n = 0; r->host[n]; n++)
		if (r->host[n] >= 'A' && r->host[n] <= 'Z')
			r->host[n] |= 0x20;
	if (n > 1 && r->host[n - 1] == '.')
		r->host[n - 1] = '\0';
}

static const struct field match_fields[] = {
	{"methods", f_methods}, {"path_prefix", f_path_prefix},
	{"path", f_path},       {"path_case", f_path_case},
	{"host", f_host},       {NULL, NULL},
};

static void
f_rname(struct loader *L, yaml_node_t *v, void *o)
{
	struct sl_rule *r = o;

	if (get_str(L, v, "name", r->name, sizeof(r->name)) != 0)
		return;
	if (!is_token(r->name, 1))
		error_at(L, v,
			 "name: '%s' may use only letters, digits, '-', '_' "
			 "and '.'",
			 r->name);
	else if (strcmp(r->name, "version") == 0)
		error_at(L, v,
			 "name: 'version' is reserved (telemetry reports it)");
}

static void
f_scope(struct loader *L, yaml_node_t *v, void *o)
{
	static const char *const names[] = {"key",      "user",   "ip",
					    "endpoint", "global", NULL};

	get_enum(L, v, "scope", names, &((struct sl_rule *)o)->scope);
}

static void
f_rtier(struct loader *L, yaml_node_t *v, void *o)
{
	int t = get_tier(L, v, "tier");

	if (t >= 0)
		((struct sl_rule *)o)->tier = (int16_t)t;
}

static void
f_match(struct loader *L, yaml_node_t *v, void *o)
{
	walk_map(L, v, "match", match_fields, o);
}

static void
f_algo(struct loader *L, yaml_node_t *v, void *o)
{
	static const char *const names[] = {"token_bucket", "gcra",
					    "fixed_window", "sliding_window",
					    "sliding_log",  NULL};

	get_enum(L, v, "algorithm", names, &((struct sl_rule *)o)->algo);
}

static void
f_limit(struct loader *L, yaml_node_t *v, void *o)
{
	get_rate(L, v, "limit", &((struct sl_rule *)o)->limit);
}
static void
f_burst(struct loader *L, yaml_node_t *v, void *o)
{
	GET_UINT(L, v, "burst", 1, 1000000000, ((struct sl_rule *)o)->burst);
}
static void
f_cost(struct loader *L, yaml_node_t *v, void *o)
{
	GET_UINT(L, v, "cost", 1, 1000000, ((struct sl_rule *)o)->cost);
}
static void
f_shadow(struct loader *L, yaml_node_t *v, void *o)
{
	get_bool(L, v, "shadow", &((struct sl_rule *)o)->shadow);
}
static void
f_accuracy(struct loader *L, yaml_node_t *v, void *o)
{
	get_fraction(L, v, "accuracy", 0.0001, 0.5,
		     &((struct sl_rule *)o)->accuracy_ppm);
}

static void
f_onfail(struct loader *L, yaml_node_t *v, void *o)
{
	static const char *const names[] = {"fail_open", "local_strict",
					    "fail_closed", NULL};

	get_enum(L, v, "on_store_failure", names,
		 &((struct sl_rule *)o)->on_store_failure);
}

static const struct field rule_fields[] = {
	{"name", f_rname},
	{"scope", f_scope},
	{"tier", f_rtier},
	{"match", f_match},
	{"algorithm", f_algo},
	{"limit", f_limit},
	{"burst", f_burst},
	{"cost", f_cost},
	{"on_store_failure", f_onfail},
	{"accuracy", f_accuracy},
	{"shadow", f_shadow},
	{NULL, NULL},
};

/* What the limiter can represent exactly, said at load time. */
static void
check_rule_numbers(struct loader *L, yaml_node_t *it, const struct sl_rule *r)
{
	uint64_t period_ns = r->limit.period_ms * 1000000ULL;

	if (r->limit.count == 0)
		return;
	if (r->algo == SL_ALGO_SLIDING_LOG && r->limit.count > 64)
		error_at(L, it,
			 "rule '%s': sliding_log keeps every arrival; its "
			 "limit is at most 64 per window",
			 r->name);
	if ((r->algo == SL_ALGO_TOKEN_BUCKET || r->algo == SL_ALGO_GCRA) &&
	    r->burst > (UINT64_MAX >> 2) / period_ns)
		error_at(L, it, "rule '%s': burst too large for the period",
			 r->name);
	if ((r->algo == SL_ALGO_TOKEN_BUCKET || r->algo == SL_ALGO_GCRA) &&
	    r->cost > r->burst)
		error_at(L, it,
			 "rule '%s': cost %u exceeds burst %llu: every request "
			 "would be rejected",
			 r->name, r->cost, (unsigned long long)r->burst);
	else if (r->algo != SL_ALGO_TOKEN_BUCKET && r->algo != SL_ALGO_GCRA &&
		 r->cost > r->limit.count)
		error_at(L, it,
			 "rule '%s': cost %u exceeds the limit: every request "
			 "would be rejected",
			 r->name, r->cost);
	if (r->algo == SL_ALGO_SLIDING_WINDOW && r->limit.count > UINT32_MAX)
		error_at(L, it, "rule '%s': sliding_window limit too large",
			 r->name);
}

static int
find_rule(const struct sl_config *c, const char *name)
{
	uint32_t i;

	for (i = 0; i < c->n_rules; i++)
		if (strcmp(c->rules[i].name, name) == 0)
			return (int)i;
	return -1;
}

static void
f_rules(struct loader *L, yaml_node_t *v, void *o)
{
	struct sl_config *c = L->cfg;
	yaml_node_t *it;

	(void)o;
	if (!is_seq(L, v, "rules"))
		return;
	free(c->rules);
	c->n_rules = 0;
	c->rules = calloc(seq_len(v) + 1, sizeof(*c->rules));
	SEQ_FOREACH(L, v, it)
	{
		struct sl_rule *r = &c->rules[c->n_rules];
		int before = L->nerr;

		/* a refused rule leaves its slot to the next: start clean */
		memset(r, 0, sizeof(*r));
		r->tier = -1;
		r->cost = 1;
		r->accuracy_ppm = 20000;
		r->scope = 0xff;
		r->line = (uint32_t)it->start_mark.line + 1;
		walk_map(L, it, "rule", rule_fields, r);
		if (r->name[0] == '\0')
			error_at(L, it, "rule: 'name' is required");
		else if (find_rule(c, r->name) >= 0)
			error_at(L, it, "rule '%s': duplicate name", r->name);
		if (!has_key(L, it, "limit"))
			error_at(L, it, "rule '%s': 'limit' is required",
				 r->name);
		if (!has_key(L, it, "scope"))
			error_at(L, it, "rule '%s': 'scope' is required",
				 r->name);
		if (r->burst && r->algo != SL_ALGO_TOKEN_BUCKET &&
		    r->algo != SL_ALGO_GCRA)
			error_at(L, it,
				 "rule '%s': 'burst' applies to token_bucket "
				 "and gcra only",
				 r->name);
		if (r->burst == 0)
			r->burst = r->limit.count;
		check_rule_numbers(L, it, r);
		if (c->n_rules >= SL_MAX_RULES)
			error_at(L, it, "rules: at most %d rules",
				 SL_MAX_RULES);
		if (L->nerr == before)
			c->n_rules++;
	}
}

/* ---- overrides ---- */

struct ovr_ctx {
	struct sl_override *o;
	int has_id;
};

static void
f_orule(struct loader *L, yaml_node_t *v, void *o)
{
	struct ovr_ctx *x = o;
	const char *s = scalar(L, v, "rule");
	int r;

	if (s == NULL)
		return;
	r = find_rule(L->cfg, s);
	if (r < 0)
		error_at(L, v, "rule: unknown rule '%s'", s);
	else
		x->o->rule = (uint32_t)r;
}

static void
ovr_id(struct loader *L, yaml_node_t *v, struct ovr_ctx *x, uint8_t kind,
       const char *what)
{
	if (x->has_id)
		error_at(L, v, "%s: an override names one of key, user or ip",
			 what);
	x->has_id = 1;
	x->o->kind = kind;
	get_str(L, v, what, x->o->key, sizeof(x->o->key));
}

static void
f_okey(struct loader *L, yaml_node_t *v, void *o)
{
	ovr_id(L, v, o, SL_SCOPE_KEY, "key");
}
static void
f_ouser(struct loader *L, yaml_node_t *v, void *o)
{
	ovr_id(L, v, o, SL_SCOPE_USER, "user");
}

static void
f_oip(struct loader *L, yaml_node_t *v, void *o)
{
	struct ovr_ctx *x = o;
	struct sl_cidr cidr;

	ovr_id(L, v, o, SL_SCOPE_IP, "ip");
	if (x->o->key[0] && sl_cidr_parse(x->o->key, &cidr) != 0)
		error_at(L, v, "ip: '%s' is not an address", x->o->key);
}

static void
f_olimit(struct loader *L, yaml_node_t *v, void *o)
{
	struct ovr_ctx *x = o;

	get_rate(L, v, "limit", &x->o->limit);
}

static void
f_oburst(struct loader *L, yaml_node_t *v, void *o)
{
	GET_UINT(L, v, "burst", 1, 1000000000, ((struct ovr_ctx *)o)->o->burst);
}
static void
f_oreason(struct loader *L, yaml_node_t *v, void *o)
{
	struct ovr_ctx *x = o;
	get_str(L, v, "reason", x->o->reason, sizeof(x->o->reason));
}

static void
f_oexpires(struct loader *L, yaml_node_t *v, void *o)
{
	struct ovr_ctx *x = o;
	const char *s = scalar(L, v, "expires");
	struct tm tm;
	char *end;

	if (s == NULL)
		return;
	memset(&tm, 0, sizeof(tm));
	end = strptime(s, "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (end == NULL || *end != '\0') {
		error_at(L, v,
			 "expires: expected a UTC time like "
			 "2026-12-31T00:00:00Z, got '%s'",
			 s);
		return;
	}
	x->o->expires = (int64_t)timegm(&tm);
}

static const struct field override_fields[] = {
	{"rule", f_orule},       {"key", f_okey},       {"user", f_ouser},
	{"ip", f_oip},           {"limit", f_olimit},   {"burst", f_oburst},
	{"expires", f_oexpires}, {"reason", f_oreason}, {NULL, NULL},
};

static void
f_overrides(struct loader *L, yaml_node_t *v, void *o)
{
	struct sl_config *c = L->cfg;
	yaml_node_t *it;

	(void)o;
	if (!is_seq(L, v, "overrides"))
		return;
	free(c->overrides);
	c->n_overrides = 0;
	c->overrides = calloc(seq_len(v) + 1, sizeof(*c->overrides));
	SEQ_FOREACH(L, v, it)
	{
		struct ovr_ctx x = {.o = &c->overrides[c->n_overrides]};
		int before = L->nerr;

		memset(x.o, 0, sizeof(*x.o));
		x.o->rule = UINT32_MAX;
		walk_map(L, it, "override", override_fields, &x);
		if (x.o->rule == UINT32_MAX && L->nerr == before)
			error_at(L, it, "override: 'rule' is required");
		if (!x.has_id)
			error_at(L, it,
				 "override: one of 'key', 'user' or 'ip' is "
				 "required");
		if (!has_key(L, it, "expires"))
			error_at(L, it, "override: 'expires' is required");
		if (!has_key(L, it, "limit"))
			error_at(L, it, "override: 'limit' is required");
		if (x.o->burst == 0)
			x.o->burst = x.o->limit.count;
		if (L->nerr == before)
			c->n_overrides++;
	}
}

/* ---- blocklist ---- */

static void
f_bkeys(struct loader *L, yaml_node_t *v, void *o)
{
	struct sl_config *c = L->cfg;
	yaml_node_t *it;

	(void)o;
	if (!is_seq(L, v, "keys"))
		return;
	free(c->block_keys);
	c->n_block_keys = 0;
	c->block_keys = calloc(seq_len(v) + 1, sizeof(*c->block_keys));
	SEQ_FOREACH(L, v, it)
	{
		if (get_str(L, it, "keys", c->block_keys[c->n_block_keys],
			    SL_KEY_MAX) == 0)
			c->n_block_keys++;
	}
}

static void
f_bcidrs(struct loader *L, yaml_node_t *v, void *o)
{
	struct sl_config *c = L->cfg;
	yaml_node_t *it;

	(void)o;
	if (!is_seq(L, v, "cidrs"))
		return;
	free(c->block_cidrs);
	c->n_block_cidrs = 0;
	c->block_cidrs = calloc(seq_len(v) + 1, sizeof(*c->block_cidrs));
	SEQ_FOREACH(L, v, it)
	{
		const char *s = scalar(L, it, "cidrs");

		if (s == NULL)
			continue;
		if (sl_cidr_parse(s, &c->block_cidrs[c->n_block_cidrs]) != 0)
			error_at(L, it,
				 "cidrs: '%s' is not a valid CIDR "
				 "(address/prefix, no host bits)",
				 s);
		else
			c->n_block_cidrs++;
	}
}

static const struct field blocklist_fields[] = {
	{"keys", f_bkeys},
	{"cidrs", f_bcidrs},
	{NULL, NULL},
};

/* ---- store ---- */

#define ST(L) (&(L)->cfg->store)

static void
f_endpoints(struct loader *L, yaml_node_t *v, void *o)
{
	yaml_node_t *it;

	(void)o;
	if (!is_seq(L, v, "endpoints"))
		return;
	if (seq_len(v) == 0 || seq_len(v) > SL_MAX_ENDPOINTS)
		error_at(L, v, "endpoints: expected 1 to %d endpoints",
			 SL_MAX_ENDPOINTS);
	SEQ_FOREACH(L, v, it)
	{
		const char *s = scalar(L, it, "endpoints");
		const char *colon;
		struct sl_endpoint *e;
		char *end;
		long port;

		if (s == NULL || ST(L)->n_endpoints >= SL_MAX_ENDPOINTS)
			continue;
		colon = strrchr(s, ':');
		e = &ST(L)->endpoints[ST(L)->n_endpoints];
		port = colon ? strtol(colon + 1, &end, 10) : 0;
		if (colon == NULL || colon == s || *end != '\0' || port < 1 ||
		    port > 65535 || (size_t)(colon - s) >= sizeof(e->host)) {
			error_at(L, it,
				 "endpoints: expected host:port, got '%s'", s);
			continue;
		}
		memcpy(e->host, s, (size_t)(colon - s));
		e->host[colon - s] = '\0';
		e->port = (uint16_t)port;
		ST(L)->n_endpoints++;
	}
}

static void
f_cluster(struct loader *L, yaml_node_t *v, void *o)
{
	(void)o;
	get_bool(L, v, "cluster", &ST(L)->cluster);
}
static void
f_timeout(struct loader *L, yaml_node_t *v, void *o)
{
	(void)o;
	GET_UINT(L, v, "timeout_ms", 1, 10000, ST(L)->timeout_ms);
}
static void
f_probe(struct loader *L, yaml_node_t *v, void *o)
{
	(void)o;
	GET_UINT(L, v, "probe_interval_ms", 10, 600000,
		 ST(L)->probe_interval_ms);
}

static const struct field redis_fields[] = {
	{"endpoints", f_endpoints},
	{"cluster", f_cluster},
	{"timeout_ms", f_timeout},
	{"probe_interval_ms", f_probe},
	{NULL, NULL},
};

static void
f_redis(struct loader *L, yaml_node_t *v, void *o)
{
	walk_map(L, v, "redis", redis_fields, o);
	if (ST(L)->n_endpoints == 0)
		error_at(L, v, "redis: 'endpoints' is required");
}

static void
f_expected(struct loader *L, yaml_node_t *v, void *o)
{
	(void)o;
	GET_UINT(L, v, "expected_appliances", 1, 10000,
		 ST(L)->expected_appliances);
}
static void
f_channel(struct loader *L, yaml_node_t *v, void *o)
{
	(void)o;
	get_str(L, v, "rules_channel", ST(L)->rules_channel, SL_NAME_MAX);
}

static void
f_reconcile(struct loader *L, yaml_node_t *v, void *o)
{
	(void)o;
	GET_UINT(L, v, "reconcile_ms", 100, 3600000, ST(L)->reconcile_ms);
}

static void
f_keys_hash(struct loader *L, yaml_node_t *v, void *o)
{
	(void)o;
	get_str(L, v, "keys_hash", ST(L)->keys_hash, SL_NAME_MAX);
}

static const struct field store_fields[] = {
	{"reconcile_ms", f_reconcile},
	{"keys_hash", f_keys_hash},
	{"redis", f_redis},
	{"expected_appliances", f_expected},
	{"rules_channel", f_channel},
	{NULL, NULL},
};

/* ---- response ---- */

static void
f_jitter(struct loader *L, yaml_node_t *v, void *o)
{
	(void)o;
	get_fraction(L, v, "retry_jitter", 0, 1,
		     &L->cfg->response.retry_jitter_ppm);
}

static void
f_hstyle(struct loader *L, yaml_node_t *v, void *o)
{
	static const char *const names[] = {"draft", "legacy", "both", NULL};

	(void)o;
	get_enum(L, v, "headers", names, &L->cfg->response.headers);
}

static void
f_expose(struct loader *L, yaml_node_t *v, void *o)
{
	(void)o;
	get_bool(L, v, "expose_rule", &L->cfg->response.expose_rule);
}

/* ---- request: how the backend resolves a target ---- */

static void
f_merge(struct loader *L, yaml_node_t *v, void *o)
{
	(void)o;
	get_bool(L, v, "merge_slashes", &L->cfg->request.merge_slashes);
}

static void
f_escslash(struct loader *L, yaml_node_t *v, void *o)
{
	static const char *const names[] = {"reject", "decode", "keep", NULL};

	(void)o;
	get_enum(L, v, "escaped_slashes", names,
		 &L->cfg->request.escaped_slashes);
}

static void
f_hostmis(struct loader *L, yaml_node_t *v, void *o)
{
	static const char *const names[] = {"reject", "allow", NULL};

	(void)o;
	get_enum(L, v, "host_mismatch", names, &L->cfg->request.host_mismatch);
}

static void
f_params(struct loader *L, yaml_node_t *v, void *o)
{
	static const char *const names[] = {"keep", "strip", "reject", NULL};

	(void)o;
	get_enum(L, v, "path_params", names, &L->cfg->request.path_params);
}

static const struct field request_fields[] = {
	{"merge_slashes", f_merge},
	{"path_params", f_params},
	{"escaped_slashes", f_escslash},
	{"host_mismatch", f_hostmis},
	{NULL, NULL},
};

static const struct field response_fields[] = {
	{"retry_jitter", f_jitter},
	{"headers", f_hstyle},
	{"expose_rule", f_expose},
	{NULL, NULL},
};

/* ---- decisions ---- */

#define DEC(L) (&(L)->cfg->decisions)

static void
f_dec_sample(struct loader *L, yaml_node_t *v, void *o)
{
	(void)o;
	get_fraction(L, v, "sample", 0, 1, &DEC(L)->sample_ppm);
}

static void
f_dec_rejected(struct loader *L, yaml_node_t *v, void *o)
{
	(void)o;
	get_fraction(L, v, "sample_rejected", 0, 1, &DEC(L)->rejected_ppm);
}

static void
f_dec_file(struct loader *L, yaml_node_t *v, void *o)
{
	(void)o;
	if (get_str(L, v, "file", DEC(L)->file, SL_PATH_MAX) == 0 &&
	    DEC(L)->file[0] == '\0')
		error_at(L, v, "file: expected a path");
}

static void
f_dec_stream(struct loader *L, yaml_node_t *v, void *o)
{
	(void)o;
	if (get_str(L, v, "stream", DEC(L)->stream, SL_NAME_MAX) == 0 &&
	    DEC(L)->stream[0] == '\0')
		error_at(L, v, "stream: expected a key name");
}

static void
f_dec_maxlen(struct loader *L, yaml_node_t *v, void *o)
{
	(void)o;
	GET_UINT(L, v, "maxlen", 100, 100000000, DEC(L)->maxlen);
}

static const struct field decisions_fields[] = {
	{"sample", f_dec_sample}, {"sample_rejected", f_dec_rejected},
	{"file", f_dec_file},     {"stream", f_dec_stream},
	{"maxlen", f_dec_maxlen}, {NULL, NULL},
};

/* ---- root ---- */

static void
f_version(struct loader *L, yaml_node_t *v, void *o)
{
	uint64_t ver;

	(void)o;
	if (get_u64(L, v, "version", 0, UINT32_MAX, &ver) == 0 && ver != 1)
		error_at(L, v,
			 "version: this sluice reads version 1 files, not %llu",
			 (unsigned long long)ver);
}

static void
f_rules_version(struct loader *L, yaml_node_t *v, void *o)
{
	(void)o;
	get_str(L, v, "rules_version", L->cfg->version,
		sizeof(L->cfg->version));
}

#define SECTION(fn, title, table)                                              \
	static void fn(struct loader *L, yaml_node_t *v, void *o)              \
	{                                                                      \
		(void)o;                                                       \
		walk_map(L, v, title, table, NULL);                            \
	}
SECTION(f_dataplane, "dataplane", dataplane_fields)
SECTION(f_identity, "identity", identity_fields)
SECTION(f_blocklist, "blocklist", blocklist_fields)
SECTION(f_response, "response", response_fields)
SECTION(f_request, "request", request_fields)
SECTION(f_decisions, "decisions", decisions_fields)

static void
f_store(struct loader *L, yaml_node_t *v, void *o)
{
	(void)o;
	ST(L)->present = 1;
	walk_map(L, v, "store", store_fields, NULL);
}

static void
f_skip(struct loader *L, yaml_node_t *v, void *o)
{
	(void)L;
	(void)v;
	(void)o;
}

/* Tiers and rules come first: other sections refer to them by name. */
static const struct field first_fields[] = {
	{"tiers", f_tiers},
	{"request", f_request}, /* rule paths are checked in its terms */
	{NULL, NULL},
};

static const struct field second_fields[] = {
	{"rules", f_rules},
	{NULL, NULL},
};

static const struct field root_fields[] = {
	{"version", f_version},
	{"rules_version", f_rules_version},
	{"dataplane", f_dataplane},
	{"identity", f_identity},
	{"tiers", f_skip},
	{"default_tier", f_default_tier},
	{"keys", f_keys},
	{"rules", f_skip},
	{"overrides", f_overrides},
	{"blocklist", f_blocklist},
	{"store", f_store},
	{"response", f_response},
	{"decisions", f_decisions},
	{"request", f_skip},
	{NULL, NULL},
};

/* Runs the handlers of table for the keys it names, ignoring others. */
static void
pick(struct loader *L, yaml_node_t *root, const struct field *table)
{
	yaml_node_pair_t *p;

	for (p = root->data.mapping.pairs.start;
	     p < root->data.mapping.pairs.top; p++) {
		yaml_node_t *k = node(L, p->key);
		const struct field *f;

		if (k->type != YAML_SCALAR_NODE)
			continue;
		for (f = table; f->name != NULL; f++)
			if (strcmp(f->name,
				   (const char *)k->data.scalar.value) == 0)
				f->fn(L, node(L, p->value), NULL);
	}
}

static void
load_root(struct loader *L, yaml_node_t *root)
{
	if (root->type != YAML_MAPPING_NODE) {
		error_at(L, root, "the file must be a mapping of sections");
		return;
	}
	pick(L, root, first_fields);
	pick(L, root, second_fields);
	walk_map(L, root, "config", root_fields, NULL);
}

/* Where sampled decisions go, once every section is known. */
static void
check_decisions(struct loader *L, yaml_node_t *root)
{
	struct sl_config *c = L->cfg;
	yaml_node_t *d = value_of(L, root, "decisions");

	if (c->decisions.rejected_ppm == UINT32_MAX)
		c->decisions.rejected_ppm = c->decisions.sample_ppm;
	if (d == NULL)
		return;
	if (c->decisions.stream[0] && !c->store.present)
		error_at(L, d,
			 "decisions: 'stream' needs a store; give a file");
	if ((c->decisions.sample_ppm || c->decisions.rejected_ppm) &&
	    !c->decisions.file[0] && !c->decisions.stream[0])
		error_at(L, d,
			 "decisions: sampling needs a 'file' (JSON lines) or, "
			 "with a store, a 'stream'");
}

/* Checks that relate sections to each other. */
static void
check_whole(struct loader *L, yaml_node_t *root)
{
	struct sl_config *c = L->cfg;

	check_decisions(L, root);

	if (c->dataplane.downstream_port == c->dataplane.upstream_port)
		error_at(L, root,
			 "dataplane: downstream_port and upstream_port must "
			 "differ");
	if (c->identity.use_xff && c->identity.trusted_hops == 0)
		error_at(L, root,
			 "identity: client_ip x-forwarded-for needs "
			 "trusted_hops >= 1");
	if (c->dataplane.head_buffers_per_worker >
	    c->dataplane.flows_per_worker)
		c->dataplane.head_buffers_per_worker =
			c->dataplane.flows_per_worker;
}
