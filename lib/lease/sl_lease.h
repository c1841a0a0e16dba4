/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SL_LEASE_H
#define SL_LEASE_H

/*
 * Leases, both halves. The worker's: blocks of units a worker may spend on a
 * (rule, identity) without asking anyone, reserved for it by the coordinator
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

#include "sl_limit.h"

/* A global rule's demand reported at least this often between asks: the
 * aggregator rebalances once a second from it. */
#define SL_DEMAND_MS 250
/* How long a granted lease lives; unspent units go back after it. */
#define SL_LEASE_LIFETIME_NS 1000000000ULL
/* A saturated key's lease: what its holder is seen to spend in this long,
 * or in the time the rate takes to fill the burst where that is less.
 * Its units are reserved in the store and come good at the rate, so the
 * size costs no accuracy while demand lasts; it sets the store calls
 * (one per lease) and what is reserved and unspent when the demand
 * stops (given back at expiry). */
#define SL_LEASE_SATURATED_MS 4000
/* How far ahead its last unit may be: the queue of the holders' leases
 * (together at most SL_LEASE_SATURATED_MS of their demand) with room for
 * their asks to cross; a refused ask is told when its lease would fit. */
#define SL_LEASE_AHEAD_MS 5000
/* A key refused (or reserved for) within this long is still at its
 * limit: a saturated holder asks once per lease, so its refusals come
 * that far apart. Its lease (rate seen, refusals) is kept as long. */
#define SL_LEASE_HOT_NS (2ULL * SL_LEASE_SATURATED_MS * 1000000ULL)

/* Whether a refusal at refused_at (0: none yet) still says, at now_ns,
 * that the key is at its limit. */
static inline int
sl_refused_lately(uint64_t refused_at, uint64_t now_ns)
{
	return refused_at != 0 && now_ns - refused_at < SL_LEASE_HOT_NS;
}

/*
 * The node's word, for every worker, that the store refused a key (or
 * reserved for it: at its limit) lately. A worker keeps its own lease's
 * refusals, but one whose flows never asked for the key meets an outage
 * with its slice's whole burst while the store had nothing left (an
 * outpaced node admitted 5 of 20 at once where 4 were due, the other
 * worker's burst). One writer (the coordinator), any number of readers;
 * a slot holds a key's tag and the refusal's time in ms in one word, so
 * a reader never sees half of one. Another key taking the slot only
 * loses the older word: that worker keeps its burst, as before.
 */
#define SL_REFUSALS_SLOTS 16384 /* 128 KiB; a power of two */

struct sl_refusals {
	uint64_t slot[SL_REFUSALS_SLOTS];
};

void sl_refusals_note(struct sl_refusals *r, uint64_t k1, uint64_t k2,
		      uint64_t now_ns);
/* Whether the store refused (k1, k2) within SL_LEASE_HOT_NS of now_ns. */
int sl_refusals_lately(const struct sl_refusals *r, uint64_t k1, uint64_t k2,
		       uint64_t now_ns);

/*
 * A share of a limit (a node's, or one worker's slice of it), charged
 * with every unit its holder admits however that was decided — a grant
 * from the store, a lease spent, a degraded answer — so that what is
 * decided without the store is only what the share has left. A token
 * bucket of count per period, burst deep, that goes into debt when a
 * grant is larger than what is left (down to SL_LEDGER_DEBT bursts):
 * over any window its holder admits at most max(what the store granted
 * it, the share). Credit is in unit x ns, one unit being period_ns.
 */
#define SL_LEDGER_DEBT 4

struct sl_ledger {
	__int128 credit; /* full: burst * period_ns; below 0: in debt */
	uint64_t last_ns;
	uint8_t used;
};

struct sl_share {
	uint64_t count, burst; /* at least 1 each */
	uint64_t period_ns;
};

/*
 * Opens a ledger not used yet: full, or empty. A holder the store grants
 * to opens it empty — its share was spent through the store, and a
 * bucket refilled at the share's rate while the grants spend it at the
 * same rate would otherwise keep its first burst for good, on top of
 * the grants; a holder deciding alone for a key it never had (the store
 * out) opens it full. A ledger in use is left as it is.
 */
void sl_ledger_open(struct sl_ledger *g, const struct sl_share *s, int full,
		    uint64_t now_ns);
/* A share of count/burst divided among div holders (each at least 1). */
void sl_share_of(struct sl_share *s, uint64_t count, uint64_t burst,
		 uint64_t period_ns, uint32_t div);
/* Whether units fit in what the share has left now. */
int sl_ledger_room(struct sl_ledger *g, const struct sl_share *s,
		   uint64_t units, uint64_t now_ns);
/*
 * What the store said the limit has left, divided among its holders: the
 * share's own level from now (at most full). A ledger opened empty at
 * the first grant, refilled at the share's rate and charged with whole
 * leases, had nothing for a key at a third of its limit a few seconds
 * after it was first seen: each reply late by a paused store then made
 * its request wait for that reply, or be refused, while the store had
 * nearly all of the limit left. Set from the store's count instead, the
 * fleet's holders have between them what the store had.
 */
void sl_ledger_set(struct sl_ledger *g, const struct sl_share *s,
		   uint64_t units, uint64_t now_ns);
/*
 * Its burst forgotten: what it has left now, at most nothing (a key whose
 * store bucket is empty: the slice keeps its rate, not its burst), and
 * nothing earned before until_ns (the store's bucket is promised to its
 * holders' reservations until then, see sl_store_ahead_ns).
 */
void sl_ledger_drain(struct sl_ledger *g, const struct sl_share *s,
		     uint64_t now_ns, uint64_t until_ns);

/*
 * How far ahead of an answer the store's bucket was promised: a token
 * bucket in debt is promised to the reservations it granted until it is
 * out of debt (reset_ns, the time until full, less a burst's refill); a
 * window refusing is until it frees (retry_ns). 0: it had units left.
 */
uint64_t sl_store_ahead_ns(uint8_t algo, uint64_t count, uint64_t burst,
			   uint32_t period_ms, uint64_t reset_ns,
			   uint64_t retry_ns);

/*
 * When a key's share may earn again in an outage, the store having said
 * at word_ns that it was promised ahead_ns ahead: as long as demand goes
 * on, the holders' reservations keep the promise about that far ahead
 * (each renewing its lease up to SL_LEASE_AHEAD_MS ahead), so it is taken
 * to stand ahead_ns from now — but no further than the store could have
 * promised at its last word. A node the others outpaced would otherwise
 * add its share to their reservations (measured 1.056-1.072 x over a 3 s
 * pause, 10 units owed by the outpaced node).
 */
static inline uint64_t
sl_store_promised_until(uint64_t word_ns, uint64_t ahead_ns, uint64_t now_ns)
{
	uint64_t reach = word_ns + SL_LEASE_AHEAD_MS * 1000000ULL;

	if (ahead_ns == 0 || word_ns == 0)
		return 0;
	return now_ns + ahead_ns < reach ? now_ns + ahead_ns : reach;
}
/*
 * The share's numbers changed (a reload, an override): the units it has
 * left (or owes) carry over to the new share, at most its new burst. An
 * edit hands out nothing, as the store's buckets do: a raised limit
 * earns at its rate from what was left, a lowered one binds at once. A
 * ledger not used yet stays so.
 */
void sl_ledger_renumber(struct sl_ledger *g, const struct sl_share *old,
			const struct sl_share *s, uint64_t now_ns);
/* Units admitted: charged, into debt if need be. */
void sl_ledger_charge(struct sl_ledger *g, const struct sl_share *s,
		      uint64_t units, uint64_t now_ns);
/* Units charged that were not admitted after all (given back). */
void sl_ledger_credit(struct sl_ledger *g, const struct sl_share *s,
		      uint64_t units, uint64_t now_ns);
/* Whole units left now (0 in debt), and how long until units fit. */
uint64_t sl_ledger_left(struct sl_ledger *g, const struct sl_share *s,
			uint64_t now_ns);
uint64_t sl_ledger_wait_ns(struct sl_ledger *g, const struct sl_share *s,
			   uint64_t units, uint64_t now_ns);

/*
 * Laid out by use: the first 64 bytes hold what every spend reads, the
 * next the ask and slice bookkeeping, the rest what only refusals,
 * answers and decisions alone read.
 */
struct sl_lease {
	uint64_t units;      /* spendable now */
	uint64_t expires_ns; /* unspent units go back after this */
	uint64_t last_ns;    /* the rate's window began then */
	/* smoothed gap between arrivals, ns per unit x SL_LEASE_GAP_ONE
	 * (0: none seen yet); sl_lease_rate() reads it as a rate */
	uint64_t gap;
	uint64_t refused_until; /* answered locally as refused until then */
	/* a reservation's units come good one per interval of the rate,
	 * as the store's bucket would have had them, the last at paced_ns:
	 * the i-th of the units held is good at paced_ns - (units - i) x
	 * the interval, where it is one of the last paced_n (units granted
	 * outright, and those of a reservation good by the next one's
	 * grant, sit before, good now) */
	uint64_t paced_ns;
	uint32_t win_units; /* units seen in the rate's window */
	/* of the units held, how many at the back are paced (the rest are
	 * good now): a reservation asked for ahead, while the last one's
	 * units were good already, would otherwise make them wait behind
	 * its own, and behind the other holders' blocks queued between */
	uint32_t paced_n;
	/* the numbers it was granted under, to give units back with */
	uint64_t count;
	uint64_t burst;
	uint32_t period_ms;
	uint8_t algo;
	uint8_t degraded;   /* its units came from a degraded answer */
	uint8_t on_failure; /* the rule's, for the authority's ledger */
	uint8_t subs;       /* the rule's sub_buckets, for the store */
	uint8_t drained;    /* its slice emptied of its burst (sl_degrade) */
	/* asks not answered yet: an ask that timed out here is still on its
	 * way, and a second may follow it; units admitted alone meanwhile
	 * are owed to whichever answer comes first, never reported beside
	 * a grant already made for them */
	uint8_t asks_out;
	uint64_t asked_ns; /* the last ask went then (0: none pending) */
	/* units spent and not yet charged to the slice: a spend only adds
	 * here; they are charged at the next answer or decision alone (the
	 * refill lost to the cap in between is the only difference) */
	uint32_t spent_pending;
	/* units admitted alone while an ask was out: its answer's units
	 * cover them first (what it does not cover is reported taken) */
	uint32_t owed;
	/* units that arrived (admitted, refused or waiting) since the last
	 * ask: a global rule's demand, reported with the ask, or on its own
	 * when the last report is SL_DEMAND_MS old (seen_ms, wrapping) */
	uint32_t seen;
	uint32_t seen_ms;
	uint8_t refused_n; /* refusals in a row, each within a lifetime */
	/* the last ask went then (ms, wrapping): asks_out older than the
	 * store's deadline and a lifetime are lost (a connection closed
	 * under a reply left to come), never owed to for ever */
	uint32_t last_ask_ms;
	uint64_t refused_at; /* the last refusal: demand above the limit */
	uint64_t retry_ns;   /* the authority's words with its refusal */
	uint64_t reset_ns;
	uint64_t remaining;
	/* this holder's slice of the limit, charged with every unit spent:
	 * what it decides alone (a request that cannot wait, an answer
	 * that did not come) is what the slice has left */
	struct sl_ledger share;
	struct sl_share slice; /* the slice's numbers, set with the lease's */
};

_Static_assert(__builtin_offsetof(struct sl_lease, paced_ns) < 64,
	       "what a spend reads is in the first line");

/* The gap's fixed point: a sixteenth of a nanosecond. */
#define SL_LEASE_GAP_ONE 16ULL
/* The rate is read over windows at least this long (a burst is one). */
#define SL_LEASE_WINDOW_NS 50000000ULL

/* The rate a lease's key is seen at: units per second x 256 (0: none). */
static inline uint64_t
sl_lease_rate(const struct sl_lease *l)
{
	return l->gap ? 256ULL * 1000000000ULL * SL_LEASE_GAP_ONE / l->gap : 0;
}

struct sl_lease_sizing {
	uint64_t count; /* the rule's units per period */
	uint64_t period_ns;
	uint32_t accuracy_ppm; /* overshoot budget, fraction of count */
	uint32_t holders;      /* leases that may be outstanding at once */
	uint64_t burst;        /* no lease larger: it could never be granted */
	uint64_t now_ns;
	/* units a waiting request brings behind it (the heads pipelined in
	 * its segment): asked for too, spent on the grant, so beyond the
	 * accuracy budget; never beyond the burst */
	uint64_t waiting;
};

enum sl_lease_take {
	SL_LEASE_SPENT = 0, /* units taken */
	SL_LEASE_EMPTY,     /* not enough units: ask the authority */
	SL_LEASE_REFUSED,   /* the authority said no, and it still holds */
};

/* A request for cost units arrived: feeds the rate that sizes the lease. */
void sl_lease_seen(struct sl_lease *l, uint32_t cost, uint64_t now_ns);

/* Whether the lease holds cost units within their lifetime (a
 * reservation's may not be good yet: sl_lease_until). */
static inline int
sl_lease_holds(const struct sl_lease *l, uint32_t cost, uint64_t now_ns)
{
	return l->units >= cost && now_ns < l->expires_ns;
}

/* The interval between a reservation's units: the store bucket's it came
 * from (a sub-bucket refills at count / subs). l->count > 0. */
static inline uint64_t
sl_lease_interval(const struct sl_lease *l)
{
	return (uint64_t)l->period_ms * 1000000ULL *
	       (l->subs > 1 ? l->subs : 1) / l->count;
}

/*
 * When cost units of the lease are good: 0 when they are now or it holds
 * fewer (a reservation's units come good at the rate, see paced_ns), and
 * never before refused_until unless it holds them.
 */
static inline uint64_t
sl_lease_until(const struct sl_lease *l, uint32_t cost, uint64_t now_ns)
{
	/* units held were granted: a refusal since (of an ask ahead) is
	 * the authority's word on units beyond them */
	uint64_t t =
		l->refused_until > now_ns && !sl_lease_holds(l, cost, now_ns)
			? l->refused_until
			: 0;

	if (l->paced_ns > now_ns && l->units >= cost && l->count > 0 &&
	    l->units - cost < l->paced_n) {
		uint64_t ahead = (l->units - cost) * sl_lease_interval(l);
		uint64_t good = l->paced_ns > ahead ? l->paced_ns - ahead : 0;

		if (good > now_ns && good > t)
			t = good;
	}
	return t;
}

/* Tries to spend cost units now; never blocks. */
enum sl_lease_take sl_lease_take(struct sl_lease *l, uint32_t cost,
				 uint64_t now_ns);

/*
 * How many units to ask for: enough for a lease's lifetime at the observed
 * rate, at least cost, at most what the accuracy budget allows per holder;
 * at least z->waiting (spent on the grant) within the burst. A result
 * equal to cost means exact: one request, one round trip.
 */
uint64_t sl_lease_want(const struct sl_lease *l,
		       const struct sl_lease_sizing *z, uint32_t cost);

/*
 * Saturated: refused (or reserved for) again within two saturated
 * leases' time of a refusal, and seen at more than half the holder's
 * share of the limit's rate — demand at or above the limit (a key
 * refused once, at a limit it is otherwise below or just raised, is not).
 * Such a key spends about every unit it is granted, so its lease may be
 * what the holder spends in SL_LEASE_SATURATED_MS (or the burst's fill
 * time), not the accuracy budget's (units are reserved when granted: a
 * larger lease strands units only when the demand stops, and those go
 * back); and it asks for the whole lease, rather than for whatever
 * trickled back (sl_lease_ask_ahead) — a key far above its limit costs
 * about one store call per lease, not per request.
 */
int sl_lease_saturated(const struct sl_lease *l,
		       const struct sl_lease_sizing *z);

/* Whether a request is in flight (one older than timeout_ns is lost). */
int sl_lease_pending(const struct sl_lease *l, uint64_t now_ns,
		     uint64_t timeout_ns);

/* Whether to ask for more before the lease runs out. */
int sl_lease_low(const struct sl_lease *l, uint64_t want);

/*
 * Whether to ask ahead: below half of the lease (sl_lease_low); a
 * saturated key's, whose next lease the store reserves behind the other
 * holders' (reserves), below a whole lease once all it holds is good;
 * never a saturated key's where nothing is reserved.
 */
int sl_lease_ask_ahead(const struct sl_lease *l, uint64_t want, int saturated,
		       int reserves, uint64_t now_ns);

/* Asks still to be answered (0 once the last is older than stale_ns). */
unsigned int sl_lease_asks_out(const struct sl_lease *l, uint64_t now_ns,
			       uint64_t stale_ns);
/* An ask went: counted out until answered (sl_lease_granted). */
void sl_lease_asked(struct sl_lease *l, uint64_t now_ns, uint64_t stale_ns);
/* The authority granted units (0: refused, with its retry/reset; units
 * with retry_ns > 0: a reservation, its last unit good in retry_ns and
 * the others one interval of the rate apart before it — requests are
 * refused until their units are good, and the key counts as refused for
 * its saturation). count and period_ms are the lease's numbers. */
void sl_lease_granted(struct sl_lease *l, uint64_t units, uint64_t expires_ns,
		      uint64_t retry_ns, uint64_t reset_ns, uint64_t remaining,
		      uint64_t now_ns);

/* Units to give back now (the lease expired), zeroing them. */
uint64_t sl_lease_expire(struct sl_lease *l, uint64_t now_ns);

/*
 * The authority's half: the arithmetic of a grant out of the shared
 * state of a limit, whoever holds that state (the node's coordinator; a
 * store's script does the same sums).
 */
struct sl_lease_grant {
	uint64_t granted;    /* 0: refused */
	uint64_t expires_ns; /* granted: the lease is good until then */
	uint64_t retry_ns;   /* refused: when the need would fit */
	uint64_t reset_ns;   /* until the state is full again */
	uint64_t remaining;  /* what the limit has left after this */
};

/*
 * Grants want units if the limit has them, else the most it has at or
 * above need (the request that waits; the sliding log: need), else none —
 * as the store's script does; what is granted is spent from s at once, so the
 * admissions never exceed the limit by more than the units held unspent.
 * A lease lasts lease_ns, and no longer than the current window of a
 * windowed limit (its units do not carry over).
 */
void sl_lease_grant(const struct sl_limit_params *p, struct sl_limit_state *s,
		    uint64_t want, uint64_t need, uint64_t now_ns,
		    uint64_t lease_ns, struct sl_lease_grant *g);

/* Unspent units come back to s (as far as they still would count). */
void sl_lease_give_back(const struct sl_limit_params *p,
			struct sl_limit_state *s, uint64_t units,
			uint64_t now_ns);

/* The slice charged with what was spent since it last was. */
static inline void
sl_lease_charge_pending(struct sl_lease *l, uint64_t now_ns)
{
	if (l->spent_pending == 0 || l->slice.period_ns == 0)
		return;
	/* full: a client that pipelines on a key below its limit is served
	 * from it; a key at its limit is refused by degrade.c before */
	sl_ledger_open(&l->share, &l->slice, 1, now_ns);
	sl_ledger_charge(&l->share, &l->slice, l->spent_pending, now_ns);
	l->spent_pending = 0;
}

/*
 * A region's slice of its global limits for the identities the aggregator
 * gave one (docs/design/leases.md, "Rebalancing slices"), in parts of
 * SL_SLICE_PARTS of the limit as written; an identity not in the table keeps
 * its rule's static slice. Filled by the control plane, then only read: a new
 * set of slices is a new table.
 */
#define SL_SLICE_PARTS 10000
#define SL_SLICE_SLOTS 4096 /* a power of two; at most half used */

struct sl_slice_entry {
	uint64_t k1, k2; /* the bucket: rule and identity */
	uint32_t parts1; /* parts + 1; 0: a free slot */
	uint32_t pad;
};

struct sl_slices {
	uint32_t n;
	struct sl_slice_entry e[SL_SLICE_SLOTS];
};

void sl_slices_clear(struct sl_slices *t);
/* Sets (k1, k2)'s parts; -1: parts out of range, or the table half full. */
int sl_slices_put(struct sl_slices *t, uint64_t k1, uint64_t k2,
		  uint32_t parts);
/* 1 and *parts when (k1, k2) has a slice; 0 when not (t may be NULL). */
int sl_slices_find(const struct sl_slices *t, uint64_t k1, uint64_t k2,
		   uint32_t *parts);
/* A slice's limit and burst out of the global ones: rounded down (the
 * regions together never exceed them), at least 1 each. */
void sl_slice_apply(uint64_t global_count, uint64_t global_burst,
		    uint32_t parts, uint64_t *count, uint64_t *burst);

#endif /* SL_LEASE_H */
