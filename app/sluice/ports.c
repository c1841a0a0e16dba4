/* SPDX-License-Identifier: BSD-3-Clause */
#include <string.h>

#include <rte_ethdev.h>

#include "sluice.h"

#define RX_DESC 1024
#define TX_DESC 1024

/*
 * A Toeplitz key of one repeated 16-bit pattern hashes (a, b) and (b, a)
 * alike, so both directions of a connection reach the same queue index on
 * the two ports, and so the same worker (Woo and Park, "Scalable TCP
 * Session Monitoring with Symmetric Receive-side Scaling").
 */
static uint8_t sym_key[64];

static uint16_t
queue_limit(uint16_t port)
{
	struct rte_eth_dev_info info;

	if (rte_eth_dev_info_get(port, &info) != 0)
		return 0;
	return RTE_MIN(info.max_rx_queues, info.max_tx_queues);
}

/*
 * net_af_packet opens each queue's socket for every interface of the host
 * and binds it to its own only after setting its ring up, so the ring can
 * hold frames of other interfaces (the host's loopback, say) by the time
 * the port starts. Forwarded, they would leave on the wire as if they had
 * crossed it: nothing read before the workers run is passed on.
 */
static void
flush_foreign(uint16_t port, const struct rte_eth_dev_info *info, uint16_t nq)
{
	struct rte_mbuf *m[32];
	unsigned n = 0;
	uint16_t q, got, i;

	if (strcmp(info->driver_name, "net_af_packet") != 0)
		return;
	for (q = 0; q < nq; q++)
		while ((got = rte_eth_rx_burst(port, q, m, RTE_DIM(m))) > 0) {
			for (i = 0; i < got; i++)
				rte_pktmbuf_free(m[i]);
			n += got;
		}
	if (n > 0)
		SL_LOG(INFO, "port %u: %u frame(s) read before start dropped",
		       port, n);
}

static int
port_init(const struct sl_app *app, uint16_t port, uint16_t nq)
{
	struct rte_eth_conf conf;
	struct rte_eth_dev_info info;
	uint16_t nrx = RX_DESC, ntx = TX_DESC, q;
	int rc, sock = rte_eth_dev_socket_id(port);

	if ((rc = rte_eth_dev_info_get(port, &info)) != 0)
		return rc;
	memset(&conf, 0, sizeof(conf));
	if (nq > 1 && info.flow_type_rss_offloads != 0) {
		conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
		conf.rx_adv_conf.rss_conf.rss_key = sym_key;
		conf.rx_adv_conf.rss_conf.rss_key_len =
			info.hash_key_size ? info.hash_key_size : 40;
		conf.rx_adv_conf.rss_conf.rss_hf =
			(RTE_ETH_RSS_IP | RTE_ETH_RSS_TCP) &
			info.flow_type_rss_offloads;
		SL_LOG(INFO, "port %u: symmetric RSS over %u queues", port, nq);
	} else if (nq > 1) {
		/* e.g. net_af_packet: the kernel's fanout hash is symmetric. */
		SL_LOG(INFO, "port %u: %u queues spread by the driver", port,
		       nq);
	}
	/* a NIC that verifies TCP checksums spares the worker a pass over
	 * every request's bytes (cksum_ok reads the verdict from the mbuf) */
	if (info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_TCP_CKSUM) {
		conf.rxmode.offloads |= RTE_ETH_RX_OFFLOAD_TCP_CKSUM;
		SL_LOG(INFO, "port %u: TCP checksums verified by the NIC",
		       port);
	}
	if ((rc = rte_eth_dev_configure(port, nq, nq, &conf)) != 0)
		return rc;
	if ((rc = rte_eth_dev_adjust_nb_rx_tx_desc(port, &nrx, &ntx)) != 0)
		return rc;
	for (q = 0; q < nq; q++) {
		rc = rte_eth_rx_queue_setup(port, q, nrx,
					    sock < 0 ? 0 : (unsigned)sock, NULL,
					    app->pool);
		if (rc == 0)
			rc = rte_eth_tx_queue_setup(
				port, q, ntx, sock < 0 ? 0 : (unsigned)sock,
				NULL);
		if (rc != 0)
			return rc;
	}
	if ((rc = rte_eth_dev_start(port)) != 0)
		return rc;
	flush_foreign(port, &info, nq);
	/* A bridge must see frames for every MAC on the wire. */
	if (rte_eth_promiscuous_enable(port) != 0)
		SL_LOG(WARNING, "port %u: promiscuous mode not available",
		       port);
	return 0;
}

int
sl_ports_init(struct sl_app *app, uint16_t want_queues)
{
	uint16_t nq = want_queues;
	int i, rc;

	for (i = 0; i < (int)sizeof(sym_key); i += 2) {
		sym_key[i] = 0x6d;
		sym_key[i + 1] = 0x5a;
	}
	for (i = 0; i < 2; i++) {
		uint16_t lim;

		if (!rte_eth_dev_is_valid_port(app->port[i])) {
			SL_LOG(ERR, "port %u does not exist (%u ports found)",
			       app->port[i], rte_eth_dev_count_avail());
			return -ENODEV;
		}
		lim = queue_limit(app->port[i]);
		if (lim < nq) {
			/* One queue means one reader: the extra lcores idle. */
			SL_LOG(WARNING,
			       "port %u has %u queue(s): running %u worker(s)",
			       app->port[i], lim, lim);
			nq = lim;
		}
	}
	if (nq == 0)
		return -EINVAL;
	app->n_queues = nq;
	for (i = 0; i < 2; i++) {
		rc = port_init(app, app->port[i], nq);
		if (rc != 0) {
			SL_LOG(ERR, "port %u: setup failed: %s", app->port[i],
			       rte_strerror(-rc));
			return rc;
		}
	}
	return 0;
}

void
sl_ports_close(const struct sl_app *app)
{
	int i;

	for (i = 0; i < 2; i++) {
		rte_eth_dev_stop(app->port[i]);
		rte_eth_dev_close(app->port[i]);
	}
}
