/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The report: a table for people, one JSON line for scripts.
 */
#include "bench.h"

void
sl_bench_report(const struct bopts *o, const struct corpus *c,
		const struct sl_app *app, double *v, const struct sl_hist *lat,
		const struct flood_result *fr, double asks, uint32_t diff)
{
	uint64_t p50 = sl_hist_quantile(lat, 0.5),
		 p99 = sl_hist_quantile(lat, 0.99),
		 p999 = sl_hist_quantile(lat, 0.999);
	int i;

	if (!o->json) {
		printf("sluice-bench: %u requests/round, %u flows, %u keys "
		       "(zipf %.2f), "
		       "head %.0f bytes avg, %u rounds, TSC %.2f GHz\n",
		       c->n, o->flows, o->keys, o->zipf,
		       (double)c->head_bytes / c->n, o->rounds,
		       (double)app->tsc_hz / 1e9);
		printf("%-38s %12s %12s %10s\n", "stage", "cycles/req",
		       "Mreq/s", "x forward");
		for (i = 0; i < M__N; i++)
			printf("%-38s %12.1f %12.2f %10.2f\n",
			       sl_bench_passes[i].label, v[i],
			       app->tsc_hz / v[i] / 1e6, v[i] / v[M_FWD]);
		printf("decision / scan floor: %.2f leased, %.2f local "
		       "(keep-alive)\n",
		       v[M_LEASED] / v[M_SCAN], v[M_KEEPALIVE] / v[M_SCAN]);
		printf("keep-alive decision / the parser alone: %.2f (%.2f, "
		       "the port verifying checksums)\n",
		       v[M_KEEPALIVE] / v[M_PARSE_ALONE],
		       v[M_KEEPALIVE_OFFLOAD] / v[M_PARSE_ALONE]);
		printf("what every decision does before deciding (classify, "
		       "checksum, flow, parse): %.2f x the scan floor, %.2f x "
		       "the parser alone (%.2f, the port verifying "
		       "checksums)\n",
		       v[M_PARSE_FLOW] / v[M_SCAN],
		       v[M_PARSE_FLOW] / v[M_PARSE_ALONE],
		       v[M_PARSE_FLOW_OFFLOAD] / v[M_PARSE_ALONE]);
		printf("differential: %u decisions the same in bursts and "
		       "one frame at a time\n",
		       diff);
		printf("reject / allow: %.2f (closing), %.2f (kept); against "
		       "the admission's request and its response: %.2f\n",
		       v[M_REJECT] / v[M_ALLOW], v[M_REJECT_KEEP] / v[M_ALLOW],
		       v[M_REJECT] / (v[M_ALLOW] + v[M_RESPOND_BUDGET]));
		printf("response / forwarded response: %.2f given its budget, "
		       "%.2f settling its cost\n",
		       v[M_RESPOND_BUDGET] / v[M_RESPOND],
		       v[M_RESPOND_COST] / v[M_RESPOND]);
		printf("leased pass: %.1f asks to the coordinator per 1000 "
		       "requests\n",
		       asks);
		printf("pass-through rate / forwarding rate: %.2f\n",
		       v[M_FWD] / v[M_PASS]);
		printf("latency, RX to TX, 1 frame in 16 (bucket upper "
		       "bounds): "
		       "p50 %lu ns, p99 %lu ns, p99.9 %lu ns\n",
		       p50, p99, p999);
		printf("memory: %.0f bytes per flow, %.0f per bucket, head "
		       "buffers %lu kB; flood of %u "
		       "addresses: RSS %lu kB before, %lu kB after "
		       "(%lu flows, %lu buckets evicted)\n",
		       fr->bytes_per_flow, fr->bytes_per_bucket,
		       fr->head_pool_bytes / 1024, o->flood, fr->rss_kb_before,
		       fr->rss_kb_after, fr->flows_evicted,
		       fr->buckets_evicted);
	}
	printf("{\"packets\": %u, \"flows\": %u, \"keys\": %u, \"zipf\": %.2f, "
	       "\"head_bytes_avg\": %.1f, \"rounds\": %u, \"tsc_hz\": %lu, "
	       "\"cycles_per_request_forward\": %.1f, "
	       "\"cycles_per_request_passthrough\": %.1f, "
	       "\"cycles_per_request_flow\": %.1f, "
	       "\"cycles_per_request_parse_flow\": %.1f, "
	       "\"cycles_per_request_parse_flow_offload\": %.1f, "
	       "\"cycles_per_request_keepalive\": %.1f, "
	       "\"cycles_per_request_keepalive_acked\": %.1f, "
	       "\"cycles_per_request_keepalive_plain\": %.1f, "
	       "\"cycles_per_request_keepalive_offload\": %.1f, "
	       "\"normaliser_in_appliance\": %.3f, "
	       "\"cycles_per_request_allow\": %.1f, "
	       "\"cycles_per_request_reject\": %.1f, "
	       "\"cycles_per_request_reject_kept\": %.1f, "
	       "\"cycles_per_request_sampled\": %.1f, "
	       "\"cycles_per_request_leased\": %.1f, "
	       "\"leased_asks_per_1000_requests\": %.1f, "
	       "\"scan_floor_cycles\": %.1f, "
	       "\"parse_isolated_cycles\": %.1f, "
	       "\"decision_over_scan_floor\": %.2f, "
	       "\"parse_flow_over_scan_floor\": %.2f, "
	       "\"parse_flow_over_parse\": %.2f, "
	       "\"parse_flow_offload_over_parse\": %.2f, "
	       "\"keepalive_over_parse\": %.2f, "
	       "\"keepalive_offload_over_parse\": %.2f, "
	       "\"reject_over_allow\": %.2f, "
	       "\"reject_kept_over_allow\": %.2f, "
	       "\"cycles_per_request_respond\": %.1f, "
	       "\"cycles_per_request_respond_budget\": %.1f, "
	       "\"reject_over_allow_exchange\": %.2f, "
	       "\"decisions_per_sec_per_core\": %.0f, "
	       "\"decisions_per_sec_per_core_local\": %.0f, "
	       "\"latency_ns_p50\": %lu, \"latency_ns_p99\": %lu, "
	       "\"latency_ns_p999\": %lu, \"bytes_per_flow\": %.0f, "
	       "\"bytes_per_bucket\": %.0f, \"head_pool_bytes\": %lu, "
	       "\"flood_addresses\": %u, "
	       "\"rss_kb_before_flood\": %lu, \"rss_kb_after_flood\": %lu, "
	       "\"differential_decisions\": %u}\n",
	       c->n, o->flows, o->keys, o->zipf, (double)c->head_bytes / c->n,
	       o->rounds, app->tsc_hz, v[M_FWD], v[M_PASS], v[M_FLOW],
	       v[M_PARSE_FLOW], v[M_PARSE_FLOW_OFFLOAD], v[M_KEEPALIVE],
	       v[M_KEEPALIVE_ACKED], v[M_KEEPALIVE_PLAIN],
	       v[M_KEEPALIVE_OFFLOAD],
	       v[M_KEEPALIVE_ACKED] / v[M_KEEPALIVE_PLAIN], v[M_ALLOW],
	       v[M_REJECT], v[M_REJECT_KEEP], v[M_SAMPLE], v[M_LEASED], asks,
	       v[M_SCAN], v[M_PARSE_ALONE], v[M_LEASED] / v[M_SCAN],
	       v[M_PARSE_FLOW] / v[M_SCAN], v[M_PARSE_FLOW] / v[M_PARSE_ALONE],
	       v[M_PARSE_FLOW_OFFLOAD] / v[M_PARSE_ALONE],
	       v[M_KEEPALIVE] / v[M_PARSE_ALONE],
	       v[M_KEEPALIVE_OFFLOAD] / v[M_PARSE_ALONE],
	       v[M_REJECT] / v[M_ALLOW], v[M_REJECT_KEEP] / v[M_ALLOW],
	       v[M_RESPOND], v[M_RESPOND_BUDGET],
	       v[M_REJECT] / (v[M_ALLOW] + v[M_RESPOND_BUDGET]),
	       app->tsc_hz / v[M_LEASED], app->tsc_hz / v[M_KEEPALIVE], p50,
	       p99, p999, fr->bytes_per_flow, fr->bytes_per_bucket,
	       fr->head_pool_bytes, o->flood, fr->rss_kb_before,
	       fr->rss_kb_after, diff);
}
