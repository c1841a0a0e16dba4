/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef SL_VIEW_H
#define SL_VIEW_H

/*
 * What the control path may read of a worker: its counters and the
 * histogram of its parked requests, as the worker writes them (read
 * racily, word by word, as the telemetry does), where the worker takes
 * its decision ring from, and the mailbox it answers probes in. Filled by main;
 * no control-path file sees struct sl_worker.
 */

#include <rte_ring.h>

#include "sl_probe.h"
#include "sl_telemetry.h"

struct sl_worker_view {
	unsigned int lcore;
	const struct sl_counters *ctr;
	const struct sl_hist *park_latency;
	/* the worker's decision ring (sampled decisions; NULL: off) */
	struct rte_ring **dec_ring;
	const uint64_t *beat;   /* TSC of its last completed loop (0: none) */
	struct sl_probe *probe; /* its mailbox for /sluice/why */
};

#endif /* SL_VIEW_H */
