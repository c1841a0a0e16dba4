#!/usr/bin/python3
"""sluice-bench on a small corpus: it runs with --no-huge, every pass
decides what it was built to decide (the benchmark exits non-zero
otherwise: all allowed, all rejected, every decision sampled, the leased
pass never degraded), the burst path decides every request as one frame
at a time would (the differential check), and its last line carries
every figure the README and BENCHMARKS.md name. No figure is compared with a threshold: these
machines are too noisy for that, and the ratios live in BENCHMARKS.md.

usage: test_bench.py PATH/TO/sluice-bench
"""

import json
import os
import subprocess

# The bench builds an app, policy, workers and a corpus per pass and
# exits without taking them down: a measuring tool, not the appliance,
# so its leaks are not checked (the appliance's are: every e2e and func
# test of sluice runs with detect_leaks=1 under ASan). Not yet fixed.
ENV = dict(os.environ, ASAN_OPTIONS=":".join(
    [o for o in os.environ.get("ASAN_OPTIONS", "").split(":") if o and
     not o.startswith("detect_leaks")] + ["detect_leaks=0"]))
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sltest  # noqa: E402

KEYS = ["decisions_per_sec_per_core", "decisions_per_sec_per_core_local",
        "cycles_per_request_allow", "cycles_per_request_reject",
        "cycles_per_request_reject_kept",
        "cycles_per_request_forward", "cycles_per_request_passthrough",
        "cycles_per_request_keepalive", "cycles_per_request_keepalive_acked",
        "cycles_per_request_keepalive_plain", "normaliser_in_appliance",
        "cycles_per_request_keepalive_offload", "keepalive_offload_over_parse",
        "cycles_per_request_sampled",
        "parse_isolated_cycles", "keepalive_over_parse", "reject_over_allow",
        "reject_kept_over_allow",
        "cycles_per_request_leased", "leased_asks_per_1000_requests",
        "scan_floor_cycles", "cycles_per_request_parse_flow",
        "cycles_per_request_parse_flow_offload", "parse_flow_over_scan_floor",
        "parse_flow_over_parse", "parse_flow_offload_over_parse",
        "decision_over_scan_floor", "keys", "flows",
        "head_bytes_avg", "latency_ns_p50", "latency_ns_p99", "latency_ns_p999",
        "bytes_per_flow", "bytes_per_bucket", "head_pool_bytes", "rss_kb_before_flood",
        "rss_kb_after_flood", "differential_decisions"]


def main():
    binary = sys.argv[1]
    res = sltest.Results("bench")
    prefix = "bench%d" % os.getpid()
    p = subprocess.run(env=ENV, args=[binary, "--no-huge", "-m", "512", "--no-pci", "-l", "0",
                        "--file-prefix", prefix, "--log-level", "lib.eal:warning",
                        "--", "--json", "--packets", "512", "--flows", "512",
                        "--keys", "1000", "--rounds", "3", "--flood", "20000"],
                       capture_output=True, text=True, timeout=300)
    res.eq(p.returncode, 0, "sluice-bench ran every pass as planned" +
           ("" if p.returncode == 0 else ": " + p.stderr[-500:]))
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    res.check(len(lines) > 0, "a JSON object on its last line")
    if lines:
        d = json.loads(lines[-1])
        missing = [k for k in KEYS if k not in d]
        res.check(not missing, "every figure is there (missing: %s)" % missing)
        res.check(all(d[k] > 0 for k in KEYS if k in d and k.startswith("cycles")),
                  "every pass took some cycles")
        res.eq((d.get("keys"), d.get("flows")), (1000, 512), "the corpus asked for")
        res.eq(d.get("differential_decisions"), 512,
               "every request decided the same in bursts and one frame at a time")
        # 20 000 new addresses would add over 5 MB if the tables grew;
        # a sanitizer's own bookkeeping adds a few kB, which is not that
        grow = d.get("rss_kb_after_flood", 0) - d.get("rss_kb_before_flood", 0)
        res.check(grow < 1024, "no growth under a flood of 20000 new addresses "
                  "(%s -> %s kB)" % (d.get("rss_kb_before_flood"),
                                     d.get("rss_kb_after_flood")))
    # --only (what scripts/bench-profile.sh records): one pass, one figure
    for name in ("leased", "reject", "reject-keep", "parse-flow"):
        # once more where the first run fails, that run's words printed:
        # the leased pass once decided 1533 of 1536 in a clean run beside
        # the e2e suite, and not again in 14 runs here, loaded or stopped
        for attempt in (1, 2):
            p = subprocess.run(env=ENV, args=[binary, "--no-huge", "-m", "512", "--no-pci",
                                "-l", "0", "--file-prefix", prefix + name, "--log-level",
                                "lib.eal:warning", "--", "--packets", "512", "--flows",
                                "512", "--keys", "1000", "--rounds", "2", "--only", name],
                               capture_output=True, text=True, timeout=300)
            lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
            d = json.loads(lines[-1]) if lines else {}
            ok = (p.returncode == 0 and d.get("only") == name and
                  d.get("cycles_per_request", 0) > 0)
            if ok or attempt == 2:
                break
            print("  --only %s, first run: %s" % (name, p.stderr[-600:]))
        res.check(ok, "--only %s ran that pass as planned%s" %
                  (name, "" if ok else ": " + p.stderr[-600:]))
    # the blocklist two ways (hash probes, rte_fib): one answer for every
    # one of 65536 addresses against 10 000 CIDRs, both kinds of list
    p = subprocess.run(env=ENV, args=[binary, "--no-huge", "-m", "512", "--no-pci", "-l", "0",
                        "--file-prefix", prefix + "bl", "--log-level", "lib.eal:warning",
                        "--", "--blocklist", "--json"],
                       capture_output=True, text=True, timeout=300)
    rows = [json.loads(ln) for ln in p.stdout.splitlines() if ln.startswith("{")]
    res.check(p.returncode == 0 and len(rows) == 2 and
              all(r["disagree"] == 0 and r["blocked"] > 0 for r in rows),
              "--blocklist: rte_fib and the hash probes agree on every address "
              "(%s)" % (rows or p.stderr[-300:]))
    p = subprocess.run(env=ENV, args=[binary, "--", "--norm", "--json", "--rounds", "3"],
                       capture_output=True, text=True, timeout=300)
    rows = [json.loads(ln) for ln in p.stdout.splitlines() if ln.startswith("{")]
    res.check(p.returncode == 0 and rows and rows[0].get("clean_norm_over_parse", 0) > 0,
              "--norm: the normaliser's cost on clean and dirty heads (%s)" % rows)
    # --stream fails (exit 1) if the normaliser refused any clean segment
    p = subprocess.run(env=ENV, args=[binary, "--", "--stream", "--json", "--rounds", "3"],
                       capture_output=True, text=True, timeout=300)
    rows = [json.loads(ln) for ln in p.stdout.splitlines() if ln.startswith("{")]
    res.check(p.returncode == 0 and rows and rows[0].get("normalised_over_plain", 0) > 0,
              "--stream: the stream normaliser's cost, no clean segment refused (%s)" %
              (rows or p.stderr[-300:]))
    # the functions alone: every figure there, and positive
    p = subprocess.run(env=ENV, args=[binary, "--", "--micro", "--json"],
                       capture_output=True, text=True, timeout=300)
    rows = [json.loads(ln) for ln in p.stdout.splitlines() if ln.startswith("{")]
    res.check(p.returncode == 0 and rows and
              all(rows[0].get(k, 0) > 0 for k in ("micro_parse_cycles", "micro_fill_cycles",
                                                   "micro_cksum550_cycles",
                                                   "micro_reply429_cycles",
                                                   "micro_rst_cycles",
                                                   "micro_flow_hash_cycles",
                                                   "micro_ident_cycles",
                                                   "micro_norm_cycles",
                                                   "micro_match_cycles",
                                                   "micro_limit_cycles")),
              "--micro: parser, fill, the refusal's frames, checksum, flow hash and the "
              "decision's stages after the parse timed "
              "(%s)" %
              (rows or p.stderr[-300:]))
    # the index against rte_hash: every key inserted is found by both;
    # full, rte_hash refuses what the index takes by evicting
    p = subprocess.run(env=ENV, args=[binary, "--no-huge", "-m", "512", "--no-pci", "-l", "0",
                        "--file-prefix", prefix + "hc", "--log-level", "lib.eal:warning",
                        "--", "--hashcmp", "--json", "--small"],
                       capture_output=True, text=True, timeout=300)
    rows = [json.loads(ln) for ln in p.stdout.splitlines() if ln.startswith("{")]
    r = rows[0] if rows else {}
    res.check(p.returncode == 0 and r.get("rte_hash_lookup_misses_on_hits") == 0 and
              r.get("rte_hash_refused_at_fill") == 0 and
              r.get("rte_hash_refused_full", 0) > 0 and
              r.get("ours_evicted_per_miss") == 1.0,
              "--hashcmp: both find every key; when full rte_hash refuses, the "
              "index evicts one per new key (%s)" % (r or p.stderr[-300:]))
    p = subprocess.run(env=ENV, args=[binary, "--no-huge", "-m", "512", "--no-pci", "-l", "0",
                        "--file-prefix", prefix + "bad", "--", "--only", "nosuch"],
                       capture_output=True, text=True, timeout=120)
    res.check(p.returncode != 0 and "usage" in p.stderr + p.stdout,
              "--only with an unknown pass is refused with the usage")
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
