/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A response given its budget (response.headers_on_allow) in process:
 * too long for the client's MSS to grow, it leaves as two frames, each
 * summed anew, and both must keep the verdict on the segment they were
 * cut from. Where the port gave one (RTE_MBUF_F_RX_L4_CKSUM_GOOD or
 * _BAD) that verdict stands, as for a client's segment; where it gave
 * none, the segment's own sum decides. The frames' bytes alone cannot
 * show the port's verdict, so only an in-process test can set it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>

#include "dp.h"
#include "policy.h"
#include "sluice.h"
#include "dpframes.h"

#define DOWN 0
#define UP   1

static const char CONFIG[] = "version: 1\n"
			     "dataplane:\n"
			     "  service_ports: [80]\n"
			     "  flows_per_worker: 1024\n"
			     "  head_buffers_per_worker: 64\n"
			     "  mbufs: 4095\n"
			     "identity:\n"
			     "  api_key_header: X-API-Key\n"
			     "rules:\n"
			     "  - {name: per-key, scope: key, limit: 100/min}\n"
			     "response: {retry_jitter: 0, keep_alive: true}\n";

static struct sl_app app;
static struct rte_mempool *pool;
static uint16_t next_cport = 41000;

/* A connection opened (no MSS option: the client takes 536 bytes a
 * segment) and one request allowed on it. */
static struct conn
allowed_request(struct sl_worker *w)
{
	static const char head[] =
		"GET /x HTTP/1.1\r\nHost: api\r\nX-API-Key: k1\r\n\r\n";
	struct conn c = {.cport = next_cport++, .cseq = 1000, .sseq = 5000};

	dp_handshake(w, pool, &c);
	dp_burst(w,
		 dp_frame(pool, 1, &c, RTE_TCP_PSH_FLAG | RTE_TCP_ACK_FLAG,
			  head),
		 DOWN);
	c.cseq += (uint32_t)strlen(head);
	dp_drain(&app);
	return c;
}

/*
 * The response (700 bytes, past the client's 536) through the worker,
 * its TCP checksum right or one payload byte flipped after it was
 * summed, the port's verdict ol (0: none); the frames the client gets,
 * each one's checksum checked: how many are right, of *n.
 */
static unsigned int
response(struct sl_worker *w, uint64_t ol, int corrupt, unsigned int *n)
{
	static const char head[] =
		"HTTP/1.1 200 OK\r\nContent-Length: 660\r\n\r\n";
	char body[sizeof(head) + 660];
	struct conn c = allowed_request(w);
	struct rte_mbuf *m, *out[8];
	unsigned int i, ok = 0;

	memcpy(body, head, sizeof(head) - 1);
	memset(body + sizeof(head) - 1, 'b', 660);
	body[sizeof(body) - 1] = 0;
	m = dp_frame(pool, 0, &c, RTE_TCP_PSH_FLAG | RTE_TCP_ACK_FLAG, body);
	assert_non_null(m);
	if (corrupt)
		rte_pktmbuf_mtod(m, uint8_t *)[m->data_len - 1] ^= 0x20;
	m->ol_flags |= ol;
	dp_burst(w, m, UP);
	*n = rte_eth_rx_burst(app.port[DOWN], 0, out, RTE_DIM(out));
	for (i = 0; i < *n; i++) {
		struct sl_pkt p;

		assert_int_equal(
			sl_pkt_parse(rte_pktmbuf_mtod(out[i], uint8_t *),
				     out[i]->data_len, &p),
			SL_PKT_TCP);
		ok += (unsigned int)sl_tcp_cksum_ok(
			rte_pktmbuf_mtod(out[i], uint8_t *), &p);
	}
	rte_pktmbuf_free_bulk(out, *n);
	dp_drain(&app);
	return ok;
}

static void
cut_keeps_verdict(void **state)
{
	struct sl_worker *w = rte_zmalloc(NULL, sizeof(*w), 64);
	uint64_t cut;
	unsigned int n;

	(void)state;
	assert_non_null(w);
	assert_int_equal(sl_worker_init(w, &app, rte_lcore_id(), 0, 0), 0);
	/* no verdict: the segment's own sum */
	cut = w->ctr.budget_headers;
	assert_int_equal(response(w, 0, 0, &n), 2);
	assert_int_equal(n, 2);
	assert_int_equal(w->ctr.budget_headers, cut + 1);
	assert_int_equal(response(w, 0, 1, &n), 0);
	assert_int_equal(n, 2);
	/* the port's: a sum that looks right, the port said bad */
	assert_int_equal(response(w, RTE_MBUF_F_RX_L4_CKSUM_BAD, 0, &n), 0);
	assert_int_equal(n, 2);
	/* and the other way round: the port vouched for its bytes */
	assert_int_equal(response(w, RTE_MBUF_F_RX_L4_CKSUM_GOOD, 1, &n), 2);
	assert_int_equal(n, 2);
	/* NONE (virtio: data verified, field not filled in): summed */
	assert_int_equal(response(w, RTE_MBUF_F_RX_L4_CKSUM_NONE, 1, &n), 0);
	assert_int_equal(w->ctr.budget_headers, cut + 5);
	sl_worker_free(w);
	rte_free(w);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(cut_keeps_verdict),
	};
	int rc;

	(void)argc;
	if (dp_eal(argv[0], "test_budget") != 0)
		return 1;
	if (dp_app(&app, &pool, "test_budget", CONFIG, sizeof(CONFIG) - 1) ==
	    NULL)
		return 1;
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	dp_app_close(&app);
	return rc;
}
