/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SL_APP_H
#define SL_APP_H

/*
 * The contract: what the data path and the control path both see. The
 * appliance's read-only settings (struct sl_app), the compiled policy
 * (sl_policy.h), the lanes between workers and the node's authority
 * (sl_lanes.h), the decision record (sl_decision.h) and what the control
 * path may read of a worker (sl_view.h). Types and inline helpers only,
 * and the blocklist FIB the policy compiles and the workers read.
 */

#include <signal.h>
#include <stdint.h>

#include <rte_common.h>
#include <rte_log.h>
#include <rte_mbuf.h>
#include <rte_mbuf_dyn.h>
#include <rte_rcu_qsbr.h>

#include "sl_http.h"
#include "sl_ident.h"
#include "sl_rules.h"

struct sl_coord;
struct sl_lanes;
struct sl_policy;
struct sl_rulesync;
struct sl_slices;
struct sl_slicesync;
struct sl_decisions;
struct sl_reloader;

#define SL_BURST         32
#define SL_DRAIN_US      100 /* a partly filled TX buffer waits at most this */
#define SL_IDLE_POLLS    256 /* empty loops before an idle_sleep_us nap */
#define SL_EXPIRE_BUDGET 32  /* flow entries examined for idleness per loop */
#define SL_RST_STASH     16  /* mbufs kept for RSTs to the backend */

extern int sl_logtype;
#define SL_LOG(level, fmt, ...)                                                \
	rte_log(RTE_LOG_##level, sl_logtype, "sluice: " fmt "\n", ##__VA_ARGS__)

/* Read-only after start-up: shared by every worker. */
struct sl_app {
	struct sl_config *cfg;
	struct rte_mempool *pool;
	uint16_t port[2]; /* [0] downstream, [1] upstream */
	uint16_t n_queues;
	uint64_t tsc_hz;
	uint64_t drain_tsc;
	uint64_t idle_tsc;
	uint32_t idle_sleep_us; /* 0: workers never sleep */
	uint64_t ns_mult; /* ns = (cycles * ns_mult) >> 20, for short spans */
	struct sl_http_cfg http;
	struct sl_ident_cfg ident;
	/*
	 * The running rules. Workers load it once per burst and report a
	 * quiescent state after each loop; a reload swaps it and frees the
	 * old one after the grace period (RCU), so workers never lock.
	 */
	struct sl_policy *policy;
	struct rte_rcu_qsbr *qs;
	struct sl_reloader *reloader; /* the control path's (policy/) */
	/* the node's authority: the control path's (opaque here), and the
	 * workers' lanes to it; NULL both: local buckets */
	struct sl_coord *coord;
	const struct sl_lanes *lanes;
	struct sl_rulesync *rulesync; /* published rule sets; NULL: none */
	/* the aggregator's slices of global rules here (regions/); read
	 * by workers, swapped and freed after a grace period as the policy;
	 * NULL: the static slices */
	struct sl_slices *slices;
	struct sl_slicesync *slicesync; /* NULL: no store, or no regions */
	struct sl_decisions *decisions; /* the sampled stream; NULL: off */
	uint64_t store_timeout_ns;
	uint32_t holders;  /* leases per limit at once: workers x appliances */
	uint32_t expected; /* store.expected_appliances */
	/* the authority grants reservations (a store behind it): units of a
	 * key at its limit that come good at its rate, queued in the store */
	uint8_t reserves;
	const char *config_path;
	int64_t wall0_s; /* Unix time at clock 0, for override expiry */
	/* added to every TSC-derived instant: a restart with the buckets
	 * kept goes on from their clock (sl_state.h) */
	int64_t epoch_ns;
	int rx_tsc_off; /* mbuf dynfield with the arrival TSC; <0: none */
	/* set (by a signal) when every loop is to end; NULL: never */
	const volatile sig_atomic_t *quit;
	uint8_t service[65536 / 8]; /* bitmap of inspected destination ports */
};

/* Shared by sluice and sluice-bench (setup.c). */
void sl_app_setup(struct sl_app *app, struct sl_config *cfg);
/* The clock's offset (epoch_ns), and the wall time at its 0 with it. */
void sl_app_set_epoch(struct sl_app *app, int64_t epoch_ns);

/* TSC to nanoseconds, exact, once per burst. */
static inline uint64_t
sl_tsc_ns(const struct sl_app *app, uint64_t tsc)
{
	return tsc / app->tsc_hz * 1000000000ULL +
	       tsc % app->tsc_hz * 1000000000ULL / app->tsc_hz +
	       (uint64_t)app->epoch_ns;
}

static inline int
sl_is_service_port(const struct sl_app *app, uint16_t port)
{
	return (app->service[port >> 3] >> (port & 7)) & 1;
}

/* The arrival TSC stamped on m at RX (0 when stamping is off). */
static inline uint64_t *
sl_rx_stamp(const struct sl_app *app, struct rte_mbuf *m)
{
	return RTE_MBUF_DYNFIELD(m, app->rx_tsc_off, uint64_t *);
}

#endif /* SL_APP_H */
