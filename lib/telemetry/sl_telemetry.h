/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SL_TELEMETRY_H
#define SL_TELEMETRY_H

/*
 * Per-worker counters and the /sluice/... DPDK telemetry commands.
 *
 * Each worker owns one sl_counters, written with plain stores (no atomics,
 * no sharing: the struct is cache-line aligned). Readers on the telemetry
 * thread sum them; an aligned 64-bit load never tears on the platforms
 * DPDK supports, so a reading is at worst a moment old.
 */

#include <stddef.h>
#include <stdint.h>

#include "sl_flow.h"
#include "sl_http.h"
#include "sl_limit.h"
#include "sl_net.h"
#include "sl_rules.h"
#include "sl_top.h"

struct sl_counters {
	uint64_t rx;
	uint64_t tx;
	uint64_t tx_dropped;  /* unsent after tx_burst: freed */
	uint64_t passthrough; /* forwarded without inspection */
	uint64_t inspected;   /* client segments on service ports */
	uint64_t requests;    /* = allowed + rejected + blocked + invalid */
	uint64_t allowed;
	uint64_t rejected;
	uint64_t blocked;
	uint64_t invalid; /* parse errors and oversized heads */
	uint64_t shadow_rejected;
	uint64_t degraded; /* the authority or store did not answer in time */
	/* decided from the worker's slice because the request could not
	 * wait for the authority (pipelined behind, a queue full) */
	uint64_t decided_alone;
	uint64_t malformed;
	uint64_t malformed_dropped;
	uint64_t frag_dropped;
	uint64_t bad_checksum;
	uint64_t head_too_large;
	uint64_t head_timeout; /* answered 408: the head lost its buffer */
	uint64_t ident_key;
	uint64_t ident_user;
	uint64_t ident_ip;
	uint64_t replies;  /* answers built: 429, 403, 400, 431 */
	uint64_t absorbed; /* client segments acknowledged after one */
	/* response.keep_alive: 429s that kept the connection, refusals that
	 * closed it instead (not translatable), segments translated, and
	 * answered heads sent again (the answer lost: the connection reset)
	 */
	uint64_t keepalive_replies;
	uint64_t keepalive_fallback;
	uint64_t keepalive_translated;
	uint64_t keepalive_resent;
	uint64_t keepalive_unkept; /* answers not kept: the share was full */
	/* decided segments kept by their mbuf until the server's ACK, and
	 * those digested instead because the workers' share of the pool
	 * was held */
	uint64_t decided_held;
	uint64_t decided_share_full;
	/* response.headers_on_allow: responses given their budget, given
	 * it again (the server sent the head again), not given it (another
	 * was unacknowledged, the share of kept frames full, its request not
	 * the last decided), refused it (a claimed identity the backend
	 * refused: 401, 403, 407), and server segments dropped because it
	 * could not be put in again (the server sends them once more) */
	uint64_t budget_headers;
	uint64_t budget_resent;
	uint64_t budget_skipped;
	uint64_t budget_unauthenticated;
	uint64_t budget_dropped;
	/* cost_from_response: requests whose response said their cost or
	 * nothing (the units charged more, and given back), and those whose
	 * could not be read (not a number, the framer lost, a reload moved
	 * the rule) */
	uint64_t cost_settled;
	uint64_t cost_charged;
	uint64_t cost_refunded;
	uint64_t cost_unsettled;
	/* charged the most their response could say: the connection's
	 * record waited for another limit's, or it ended before them */
	uint64_t cost_presumed;
	/* never answered: the server closed its side, every byte before its
	 * FIN seen and framed, with their responses not begun (the declared
	 * cost stands; the client kept nothing from being read) */
	uint64_t cost_unanswered;
	/* allowed requests whose response is not counted for their rules:
	 * behind others of other rules on the connection, or the framer lost */
	uint64_t health_unattributed;
	uint64_t reply_alloc_failed; /* no mbuf for the RST to the backend */
	uint64_t coord_asks;   /* lease requests sent to the coordinator */
	uint64_t parked;       /* requests that waited for an answer */
	uint64_t tier_waits;   /* ... of those, for their key's tier first */
	uint64_t park_dropped; /* later segments dropped while waiting */
	/* units admitted without a grant whose report to the coordinator
	 * was lost (its ring full): the authority never counted them */
	uint64_t taken_unreported;
	/* units a lease gave back whose message was lost (its ring full):
	 * the authority still counts them granted, never admitted */
	uint64_t back_unreported;
	uint64_t decisions_sampled; /* records queued for the stream */
	uint64_t decisions_dropped; /* sampled, its ring full: lost */
	uint64_t idle_sleeps;       /* naps taken while idle (idle_sleep_us) */
	uint64_t parse_error[SL_HTTP_E__COUNT];
	uint64_t malformed_reason[SL_BAD__COUNT];
} __attribute__((aligned(64)));

/* Per rule and worker; the rule's index in the running rule set. */
struct sl_rule_ctr {
	uint64_t allowed;
	uint64_t rejected;
	uint64_t shadow_rejected;
	uint64_t degraded; /* decided without the store's answer */
};

struct sl_tier_ctr {
	uint64_t allowed;
	uint64_t rejected;
	uint64_t shadow_rejected;
	uint64_t degraded;
};

struct sl_telemetry_src {
	unsigned int lcore;
	const struct sl_counters *ctr;
	const struct sl_flow_table *flows;
	/* the worker's limit state: local buckets (shadow rules, and every
	 * rule without a coordinator) and leases; buckets_* sum both */
	const struct sl_bucket_table *buckets;
	const struct sl_bucket_table *leases;
	const struct sl_rule_ctr *rules; /* SL_MAX_RULES entries */
	/* the backend's answers per rule slot: SL_MAX_RULES entries */
	const struct sl_rule_health *health;
	const struct sl_top *top;        /* most throttled identities */
	const struct sl_hist *latency;   /* decision path, sampled */
	const struct sl_tier_ctr *tiers; /* SL_MAX_TIERS + 1: [0] no API key */
	const uint64_t *beat; /* TSC of its last completed loop (0: none) */
};

/* The rule slot that stands for the blocklist in sl_top entries. */
#define SL_SLOT_BLOCKLIST 0xffff

/*
 * A /sluice command's handler and the context it was registered with
 * (never NULL): the handler fills d as a DPDK telemetry callback would.
 */
struct rte_tel_data;
typedef int (*sl_tel_fn)(void *ctx, const char *params, struct rte_tel_data *d);

/*
 * Registers (or, registered already, gives a new context to) a telemetry
 * command; every /sluice command goes through here, so that no handler
 * keeps its context in a variable of its own. 0 or -errno.
 */
int sl_telemetry_cmd(const char *name, sl_tel_fn fn, void *ctx,
		     const char *help);

/*
 * The command answers an error from now on, if ctx is still its context;
 * returns once no handler uses ctx any more, so that it may be freed.
 */
void sl_telemetry_withdraw(const char *name, const void *ctx);

/* Registers the /sluice commands over n workers; returns 0 or -errno. */
int sl_telemetry_register(const struct sl_telemetry_src *src, unsigned int n);

/*
 * The rule set whose names and version /sluice/rules reports, and the
 * counter slot of each of its rules. Once it returns, no telemetry reader
 * uses the previous rule set any more.
 */
/* A rule's name as a telemetry key: DPDK accepts [A-Za-z0-9_./] only,
 * so '-' is written '_' (the entry carries the real name in "name"). */
void sl_tel_key(char *dst, const char *name, size_t size);
void sl_telemetry_set_rules(const struct sl_ruleset *rs, const uint16_t *slots);

/*
 * The node's authority's table (its buckets and ledgers, the main lcore's):
 * /sluice/stats' buckets_* count it beside the workers' tables, so that
 * they count every entry of limit state the node holds. NULL: none.
 */
void sl_telemetry_set_authority(const struct sl_bucket_table *t);

/*
 * How long ago a worker last completed a loop, from its beat (the TSC it
 * stores at each loop's end; 0: not looping yet, read as 0): a busy one
 * microseconds, an idle one its nap, a stuck one the time it is stuck.
 * /sluice/workers and the main lcore's watchdog read it alike.
 */
uint64_t sl_telemetry_loop_age_us(const uint64_t *beat);

/* Sums every worker's counters into out (flow stats into fs). */
void sl_telemetry_sum(struct sl_counters *out, struct sl_flow_stats *fs);

/*
 * The names of a rule counter slot and of a tier in the running rules,
 * copied under the same lock the reloader takes (any thread). tier < 0
 * or unknown gives "".
 */
void sl_telemetry_names(uint16_t slot, int tier, char *rule, size_t rule_len,
			char *tname, size_t tier_len);

#endif /* SL_TELEMETRY_H */
