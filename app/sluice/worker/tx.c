/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * TX buffering, per direction: a frame waits for a full burst or the
 * drain interval. A leaf: it sends and counts, and calls nothing back.
 */
#include <rte_cycles.h>
#include <rte_ethdev.h>

#include "dp.h"

/* Latency inside the appliance: from arrival to the TX burst. */
static void
time_tx(struct sl_worker *w, const struct sl_txbuf *b)
{
	uint64_t now;
	uint16_t i;

	if (w->app->rx_tsc_off < 0)
		return;
	now = rte_rdtsc();
	for (i = 0; i < b->n; i++) {
		uint64_t t0;

		if ((++w->lat_tick & 15) != 0)
			continue;
		t0 = *sl_rx_stamp(w->app, b->m[i]);
		if (t0 != 0 && now > t0)
			sl_hist_add(&w->latency,
				    ((now - t0) * w->app->ns_mult) >> 20);
	}
}

void
sl_tx_flush(struct sl_worker *w, int dir)
{
	struct sl_txbuf *b = &w->tx[dir];
	uint16_t sent;

	if (b->n == 0)
		return;
	time_tx(w, b);
	sent = rte_eth_tx_burst(w->app->port[dir], w->queue, b->m, b->n);
	w->ctr.tx += sent;
	if (unlikely(sent < b->n)) {
		w->ctr.tx_dropped += b->n - sent;
		rte_pktmbuf_free_bulk(&b->m[sent], b->n - sent);
	}
	b->n = 0;
}
