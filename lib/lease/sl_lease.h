/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SL_LEASE_H
#define SL_LEASE_H

/*
 * Worker-side leases: blocks of units a worker may spend on a (rule,
 * identity) without asking anyone, reserved for it by the coordinator
 * (the node's authority). Units are charged to the authority when they
 * are granted, so admissions never exceed the limit by more than what
 * sits unspent in leases (holders x lease size), which the sizing keeps
 * under the rule's accuracy budget; unspent units go back when a lease
 * expires. A refusal is remembered until its retry time, so a client over
 * its limit is answered locally instead of asking again per request.
 *
 * Pure C, time in nanoseconds passed in.
 */

#include <stdint.h>

/* How long a granted lease lives; unspent units go back after it. */
#define SL_LEASE_LIFETIME_NS 1000000000ULL

struct sl_lease {
	uint64_t units;         /* spendable now */
	uint64_t expires_ns;    /* unspent units go back after this */
	uint64_t last_ns;       /* last spend, for the rate estimate */
	uint64_t rate;          /* smoothed units per second, x 256 */
	uint64_t refused_until; /* answered locally as refused until then */
	uint64_t retry_ns;      /* the authority's words with its refusal */
	uint64_t reset_ns;
	uint64_t remaining;
	/* the numbers it was granted under, to give units back with */
	uint64_t count;
	uint64_t burst;
	uint32_t period_ms;
	uint8_t algo;
	uint64_t asked_ns; /* a request is on its way since then (0: none) */
};

struct sl_lease_sizing {
	uint64_t count; /* the rule's units per period */
	uint64_t period_ns;
	uint32_t accuracy_ppm; /* overshoot budget, fraction of count */
	uint32_t holders;      /* leases that may be outstanding at once */
};

enum sl_lease_take {
	SL_LEASE_SPENT = 0, /* units taken */
	SL_LEASE_EMPTY,     /* not enough units: ask the authority */
	SL_LEASE_REFUSED,   /* the authority said no, and it still holds */
};

/* A request for cost units arrived: feeds the rate that sizes the lease. */
void sl_lease_seen(struct sl_lease *l, uint32_t cost, uint64_t now_ns);

/* Tries to spend cost units now; never blocks. */
enum sl_lease_take sl_lease_take(struct sl_lease *l, uint32_t cost,
				 uint64_t now_ns);

/*
 * How many units to ask for: enough for a lease's lifetime at the observed
 * rate, at least cost, at most what the accuracy budget allows per holder.
 * A result equal to cost means exact: one request, one round trip.
 */
uint64_t sl_lease_want(const struct sl_lease *l,
		       const struct sl_lease_sizing *z, uint32_t cost);

/* Whether a request is in flight (one older than timeout_ns is lost). */
int sl_lease_pending(const struct sl_lease *l, uint64_t now_ns,
		     uint64_t timeout_ns);

/* Whether to ask for more before the lease runs out. */
int sl_lease_low(const struct sl_lease *l, uint64_t want);

/* The authority granted units (0: refused, with its retry/reset). */
void sl_lease_granted(struct sl_lease *l, uint64_t units, uint64_t expires_ns,
		      uint64_t retry_ns, uint64_t reset_ns, uint64_t remaining,
		      uint64_t now_ns);

/* Units to give back now (the lease expired), zeroing them. */
uint64_t sl_lease_expire(struct sl_lease *l, uint64_t now_ns);

#endif /* SL_LEASE_H */
