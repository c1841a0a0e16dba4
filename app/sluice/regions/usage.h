/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SLUICE_USAGE_H
#define SLUICE_USAGE_H

/*
 * What this node's clients demanded of each global rule, reported to the
 * region's Redis every second for sluice-aggregator, which
 * moves the rule's slices to where the demand is. Demand is the units
 * that arrived at a worker's lease (admitted, refused or waiting), sent
 * with its next ask (the store's grants would not do: a key over its
 * limit is granted its limit whatever it is offered). Bounded: SL_USAGE_RULES
 * global rules, and per rule the SL_USAGE_TOP busiest identities kept by
 * space-saving (an identity new to a full table takes the least one's
 * place and count, so a heavy hitter is never lost, only over-counted by
 * at most that count) beside the rule's exact total.
 */

#include <stddef.h>
#include <stdint.h>

#define SL_USAGE_RULES 16
#define SL_USAGE_TOP   32

/* rid: the rule's id (its name's hash, the same in every region); an
 * identity is its bucket's two words, k1 carrying the store key's hash
 * tag (a rule's identities spread over a Cluster's slots) */
struct sl_usage_rule {
	uint64_t rid, total;
	uint32_t n;
	struct {
		uint64_t k1, k2, units;
		/* the identity's global limit, count per period (an
		 * override's where it has one): what the aggregator weighs
		 * its demand against; 0 where no ask has said it yet */
		uint64_t count;
		uint32_t period_ms;
	} top[SL_USAGE_TOP];
};

/* An identity's global limit, as its asks carry it. */
struct sl_usage_lim {
	uint64_t count;
	uint32_t period_ms;
};

struct sl_usage {
	struct sl_usage_rule r[SL_USAGE_RULES];
	uint32_t n;
	uint64_t since_ns; /* the interval being counted began */
	uint64_t reports;  /* rules' reports sent */
	uint64_t unsent;  /* not sent: the store out, or rules over the table */
	uint64_t refused; /* reports (or their rule's entry) Redis refused */
};

/* units demanded of (k1, k2), a bucket of global rule rid whose global
 * limit is lim (count 0: not said) */
void sl_usage_note(struct sl_usage *u, uint64_t rid, uint64_t k1, uint64_t k2,
		   uint64_t units, struct sl_usage_lim lim);
/*
 * Rule r's report as the aggregator reads it: JSON {"t": wall_ms, "i":
 * span_ms, "total": units, "top": {"IDENTITY": units}, "lim":
 * {"IDENTITY": [count, period_ms]}} (an identity as 32 hex digits, its
 * bucket's k1 and k2, as sl:slice:{RULE} names it; "lim" only for those
 * whose limit is known). Returns
 * its length, or -1 when it does not fit size.
 */
int sl_usage_json(const struct sl_usage_rule *r, uint64_t wall_ms,
		  uint64_t span_ms, char *buf, size_t size);
/* Everything counted dropped: a new interval from now_ns. */
void sl_usage_reset(struct sl_usage *u, uint64_t now_ns);

#endif /* SLUICE_USAGE_H */
