/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * TCP/IPv4 frames for the in-process data path tests (test_dp, test_race):
 * a client 198.18.0.1 talking to 198.18.0.2:80, sequence numbers kept in
 * struct conn by the caller.
 */
#ifndef SLUICE_TESTS_DPFRAMES_H
#define SLUICE_TESTS_DPFRAMES_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_ip.h>
#include <rte_mbuf.h>

#include "policy.h"
#include "sl_worker.h"
#include "sluice.h"

struct conn {
	uint16_t cport;
	uint32_t cseq, sseq; /* next sequence of each side */
};

/* A frame from the client (from_client) or the server, or NULL when the
 * pool is empty. */
static inline struct rte_mbuf *
dp_frame(struct rte_mempool *pool, int from_client, const struct conn *c,
	 uint8_t flags, const char *data)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
	size_t dl = data != NULL ? strlen(data) : 0;
	uint8_t *f;
	struct rte_ipv4_hdr *ip;
	struct rte_tcp_hdr *tcp;
	uint8_t cmac[6] = {2, 0, 0, 0, 0, 1}, smac[6] = {2, 0, 0, 0, 0, 2};

	if (m == NULL || rte_pktmbuf_append(m, (uint16_t)(54 + dl)) == NULL) {
		rte_pktmbuf_free(m);
		return NULL;
	}
	f = rte_pktmbuf_mtod(m, uint8_t *);
	memset(f, 0, 54);
	memcpy(f, from_client ? smac : cmac, 6);
	memcpy(f + 6, from_client ? cmac : smac, 6);
	f[12] = 0x08;
	ip = (struct rte_ipv4_hdr *)(f + 14);
	ip->version_ihl = 0x45;
	ip->total_length = rte_cpu_to_be_16((uint16_t)(40 + dl));
	ip->time_to_live = 64;
	ip->next_proto_id = IPPROTO_TCP;
	ip->src_addr = rte_cpu_to_be_32(from_client ? 0xc6120001 : 0xc6120002);
	ip->dst_addr = rte_cpu_to_be_32(from_client ? 0xc6120002 : 0xc6120001);
	tcp = (struct rte_tcp_hdr *)(ip + 1);
	tcp->src_port = rte_cpu_to_be_16(from_client ? c->cport : 80);
	tcp->dst_port = rte_cpu_to_be_16(from_client ? 80 : c->cport);
	tcp->sent_seq = rte_cpu_to_be_32(from_client ? c->cseq : c->sseq);
	tcp->recv_ack = rte_cpu_to_be_32(
		flags & RTE_TCP_ACK_FLAG ? (from_client ? c->sseq : c->cseq)
					 : 0);
	tcp->data_off = 5 << 4;
	tcp->tcp_flags = flags;
	tcp->rx_win = rte_cpu_to_be_16(65535);
	if (dl)
		memcpy(tcp + 1, data, dl);
	ip->hdr_checksum = rte_ipv4_cksum(ip);
	tcp->cksum = rte_ipv4_udptcp_cksum(ip, tcp);
	return m;
}

/* One frame through the worker, as if just received from port index
 * from, and what it sent flushed. m NULL (the pool ran out) fails the
 * test: the frame the test meant was never seen. */
static inline void
dp_burst(struct sl_worker *w, struct rte_mbuf *m, int from)
{
	if (m == NULL) {
		fprintf(stderr, "dp_burst: no mbuf for the frame\n");
		abort();
	}
	w->now = rte_rdtsc();
	sl_worker_burst(w, &m, 1, from);
	sl_worker_flush(w);
}

/* Every frame the worker sent either way, freed. */
static inline void
dp_drain(const struct sl_app *app)
{
	struct rte_mbuf *m[32];
	unsigned int n, d;

	for (d = 0; d < 2; d++)
		while ((n = rte_eth_rx_burst(app->port[d], 0, m, 32)) > 0)
			rte_pktmbuf_free_bulk(m, n);
}

/* c's three-way handshake through the worker both ways (port index 0
 * faces the clients), its sequence numbers moved on. */
static inline void
dp_handshake(struct sl_worker *w, struct rte_mempool *pool, struct conn *c)
{
	dp_burst(w, dp_frame(pool, 1, c, RTE_TCP_SYN_FLAG, NULL), 0);
	c->cseq++;
	dp_burst(
		w,
		dp_frame(pool, 0, c, RTE_TCP_SYN_FLAG | RTE_TCP_ACK_FLAG, NULL),
		1);
	c->sseq++;
	dp_burst(w, dp_frame(pool, 1, c, RTE_TCP_ACK_FLAG, NULL), 0);
}

/*
 * EAL as the in-process tests start it: no hugepages and no PCI, the two
 * ring ports, a file prefix of its own (name and the pid; static, as the
 * arguments must outlive the call). 0, or -1 said on stderr.
 */
static inline int
dp_eal(char *argv0, const char *name)
{
	static char prefix[64];
	char *eal[] = {
		argv0,       "--no-huge",     "-m",        "512",
		"--no-pci",  "--file-prefix", prefix,      "-l",
		"0",         "--log-level",   "*:error",   "--vdev",
		"net_ring0", "--vdev",        "net_ring1", "--no-telemetry"};

	snprintf(prefix, sizeof(prefix), "%s_%d", name, (int)getpid());
	if (rte_eal_init((int)RTE_DIM(eal), eal) < 0) {
		fprintf(stderr, "%s: EAL did not start\n", name);
		return -1;
	}
	return 0;
}

/*
 * After rte_eal_init: the app of the rules in text (its policy built,
 * one lease holder), a pool named name, and the two ring ports. Returns
 * the parsed config, NULL (said on stderr) if any of it failed.
 */
static inline struct sl_config *
dp_app(struct sl_app *app, struct rte_mempool **pool, const char *name,
       const char *text, size_t len)
{
	char err[1024];
	struct sl_config *cfg =
		sl_config_parse(name, text, len, err, sizeof(err));

	if (cfg == NULL) {
		fprintf(stderr, "%s", err);
		return NULL;
	}
	sl_app_setup(app, cfg);
	app->holders = app->expected = 1;
	*pool = rte_pktmbuf_pool_create(
		name, 4095, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	app->pool = *pool;
	app->policy = sl_policy_build(cfg);
	if (*pool == NULL || app->policy == NULL ||
	    sl_ports_init(app, 1) != 0) {
		fprintf(stderr, "%s: setup failed\n", name);
		return NULL;
	}
	return cfg;
}

/* What dp_app() set up, and EAL, undone once the tests have run. */
static inline void
dp_app_close(struct sl_app *app)
{
	sl_ports_close(app);
	sl_policy_free(app->policy);
	rte_eal_cleanup();
}

#endif /* SLUICE_TESTS_DPFRAMES_H */
