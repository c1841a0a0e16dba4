/* SPDX-License-Identifier: BSD-3-Clause */
#include <string.h>
#include <time.h>

#include <rte_cycles.h>
#include <rte_mbuf_dyn.h>

#include "coord.h"
#include "sluice.h"

int sl_logtype;

/* The TSC of a frame's arrival, carried in the mbuf to its transmission. */
static int
rx_stamp_field(void)
{
	static const struct rte_mbuf_dynfield f = {
		.name = "sluice_rx_tsc",
		.size = sizeof(uint64_t),
		.align = __alignof__(uint64_t),
	};

	return rte_mbuf_dynfield_register(&f);
}

void
sl_app_setup(struct sl_app *app, struct sl_config *cfg)
{
	uint32_t i;

	memset(app, 0, sizeof(*app));
	app->cfg = cfg;
	app->port[0] = cfg->dataplane.downstream_port;
	app->port[1] = cfg->dataplane.upstream_port;
	app->tsc_hz = rte_get_tsc_hz();
	app->drain_tsc = app->tsc_hz / 1000000 * SL_DRAIN_US;
	app->ns_mult = (1000000000ULL << 20) / app->tsc_hz;
	/* the node's own coordinator: how long a request may wait for it */
	app->store_timeout_ns =
		cfg->dataplane.coordinator_timeout_ms * 1000000ULL;
	app->expected = cfg->store.expected_appliances;
	app->reserves = cfg->store.present;
	app->holders = app->expected;
	app->idle_tsc = app->tsc_hz / 1000 * cfg->dataplane.flow_idle_ms;
	app->idle_sleep_us = cfg->dataplane.idle_sleep_us;
	for (i = 0; i < cfg->dataplane.n_service_ports; i++) {
		uint16_t p = cfg->dataplane.service_ports[i];

		app->service[p >> 3] |= (uint8_t)(1u << (p & 7));
	}
	sl_config_http_cfg(cfg, &app->http);
	sl_config_ident_cfg(cfg, &app->ident);
	sl_app_set_epoch(app, 0);
	app->rx_tsc_off = rx_stamp_field();
}

void
sl_app_set_epoch(struct sl_app *app, int64_t epoch_ns)
{
	app->epoch_ns = epoch_ns;
	app->wall0_s = (int64_t)time(NULL) -
		       (int64_t)(sl_tsc_ns(app, rte_rdtsc()) / 1000000000ULL);
}

void
sl_app_set_coord(struct sl_app *app, struct sl_coord *c)
{
	app->coord = c;
	app->lanes = c != NULL ? &c->lanes : NULL;
}
