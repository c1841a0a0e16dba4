/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SLUICE_COORD_H
#define SLUICE_COORD_H

/*
 * The coordinator: the node's authority for every leased limit, run on
 * the main lcore. Each worker talks to it through its own pair of
 * single-producer/single-consumer rings; nothing is shared otherwise.
 * With no store configured it is the authority itself (exact across the
 * node's workers); a store, later, stands behind it with the same
 * messages.
 */

#include <stdint.h>

#include "sl_lanes.h"
#include "sl_lease.h"
#include "sl_limit.h"
#include "sl_probe.h"
#include "sl_state.h"
#include "sl_view.h"
#include "usage.h"

struct sl_coord_stats {
	uint64_t asks, granted_units, refusals, given_back, answers_dropped;
	uint64_t given_back_lost; /* never refunded: the owed table full */
	uint64_t reservations;    /* grants good from later on */
	uint64_t degraded; /* asks the node decided in the store's place */
	/* ... of them, after one late reply (the breaker closed) */
	uint64_t degraded_late;
	uint64_t late_waited;     /* late, the share spent: left to the reply */
	uint64_t taken_units;     /* admitted by workers alone, then charged */
	uint64_t taken_uncharged; /* ... the store out: not charged to it */
};

struct sl_store;

struct sl_coord {
	struct sl_store *store; /* NULL: the node is its own authority */
	char keys_hash[64];     /* Redis hash of key -> tier */
	struct sl_lanes lanes;  /* the workers' rings, what they read */
	uint32_t n;
	struct sl_bucket_table *state;
	uint64_t lease_ns; /* a lease lasts at most this long */
	/* the node's share of a limit: / expected appliances (fail_open),
	 * / every holder (local_strict) */
	uint32_t div_open, div_strict;
	struct sl_coord_stats st;
	/* the store's refusals, written here, read by the workers */
	struct sl_refusals refused;
	/* global rules' demand, reported every second (usage.c) */
	struct sl_usage usage;
	char node_name[96]; /* this node in the reports: host:pid */
	/* what /sluice/store reads of the workers */
	const struct sl_worker_view *views;
	unsigned int n_views;
	struct sl_probe probe; /* /sluice/why's look at one key */
	/* dataplane.state_dir: state lives in this file (sl_state.h): the
	 * buckets, and what the node owes the store (handed to it) */
	struct sl_state_file file;
	struct sl_owed *owed_kept;
	/* buckets carried from a file of another capacity; UINT32_MAX:
	 * none was there */
	uint32_t carried;
	uint32_t carried_from; /* that file's capacity */
};

struct sl_app;

struct sl_coord *sl_coord_create(uint32_t workers, uint32_t capacity);
/*
 * The node's buckets kept in dir/node.state (sl_state.h): found as the
 * last process left them where the file holds a table of this capacity,
 * carried over (buckets and what is owed) where it holds one of another,
 * else made afresh there. now: the clock, its epoch set already
 * (sl_coord_state_resumed). 0 or -errno; on failure the buckets stay in
 * memory.
 */
int sl_coord_keep_state(struct sl_coord *c, const char *dir, uint32_t capacity,
			uint64_t now);
/* Where the clock of dir/node.state's buckets would be at wall time wall
 * had it run on: 0, or -1 when there are none to read. */
int sl_coord_state_resumed(const char *dir, uint32_t capacity, uint64_t wall,
			   uint64_t *now);
/* Frees it, its store and its rings (the workers stopped; /sluice/store
 * answers an error from then on). */
void sl_coord_free(struct sl_coord *c);
/* Registers /sluice/store over the coordinator and the workers. */
int sl_coord_telemetry(struct sl_coord *c, const struct sl_worker_view *ws,
		       unsigned int n);

/* A Redis store behind the coordinator (c->store); -1: no memory. */
struct sl_store_conf;
int sl_coord_attach_store(struct sl_coord *c, const struct sl_store_conf *conf);

/* Serves what the workers asked; returns how many messages. */
uint32_t sl_coord_poll(struct sl_coord *c, uint64_t now_ns);

#endif /* SLUICE_COORD_H */
