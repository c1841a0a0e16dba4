#!/usr/bin/python3
"""The alert rules against a recorded scrape: what
sluice-exporter reads from a running appliance, not series written by
hand, is what Prometheus's rule engine evaluates, so an alert whose
expression names a metric or a label the exporter does not give (or no
longer gives) cannot pass.

An appliance whose Redis is not there (a port nobody listens on): its
circuit is open and every decision degraded. curl sends requests through
it, the exporter is read twice, and the two scrapes become promtool
input series (a counter goes on at the rate seen between the scrapes, a
gauge stays as read, each series labelled with its instance as a scrape
would be). promtool test rules then wants SluiceStoreCircuitOpen and
SluiceDegradedDecisions firing for that instance, and the alerts whose
conditions the appliance does not meet (rule version skew, TX drops,
full tables, owed units dropped) quiet.

Between the scrapes, more rules see their backend: one 0.3 s slow
(its times, and no other rule's, move), one whose every answer is a 503 while it refuses nothing (SluiceLimitTooHigh, for that
rule alone), one that refuses nine in ten while its backend answers 200
at once (SluiceRefusalsWhileBackendHealthy, for that rule alone).

usage: test_alerts_live.py PATH/TO/sluice
"""

import json
import os
import subprocess
import sys
import tempfile
import time

import yaml
from prometheus_client.parser import text_string_to_metric_families

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sltest  # noqa: E402

S4 = "198.18.0.2"
EXPORTER = os.path.join(sltest.ROOT, "tools", "sluice-exporter")
RULES = os.path.join(sltest.ROOT, "conf", "prometheus", "sluice-alerts.yml")
CONF = """version: 1
dataplane: {idle_sleep_us: 100, service_ports: [80], flows_per_worker: 1024, head_buffers_per_worker: 64,
            mbufs: 4095, coordinator_timeout_ms: 50}
identity: {api_key_header: X-API-Key}
tiers: [free]
rules:
  - {name: live, scope: key, match: {path_prefix: /v1/}, limit: 600/min, burst: 20}
  - {name: failing, scope: key, match: {path_prefix: /failing/}, limit: 600/min, burst: 20}
  - {name: tight, scope: key, match: {path_prefix: /tight/}, limit: 2/min}
  - {name: slow, scope: key, match: {path_prefix: /slow/}, limit: 600/min, burst: 20}
store:
  redis: {endpoints: ["127.0.0.1:%d"], timeout_ms: 5, probe_interval_ms: 200}
  expected_appliances: 1
"""
FIRE = ["SluiceStoreCircuitOpen", "SluiceDegradedDecisions"]
# alert: the rule it names
FIRE_RULE = {"SluiceLimitTooHigh": "failing", "SluiceRefusalsWhileBackendHealthy": "tight"}
QUIET = ["SluiceRulesVersionSkew", "SluiceTxDrops", "SluiceFlowTableFull",
         "SluiceBucketTableFull", "SluiceOwedUnitsDropped", "SluiceDown",
         "SluiceNoTraffic", "SluiceReloadFailed", "SluiceWorkerStalled"]
MINUTES = 30


def scrape(prefix):
    r = subprocess.run([EXPORTER, "-f", prefix, "--once"], capture_output=True, text=True,
                       timeout=30)
    out = {}
    for fam in text_string_to_metric_families(r.stdout):
        for s in fam.samples:
            if s.name.endswith("_created"):
                continue
            out[(s.name, tuple(sorted(s.labels.items())))] = (fam.type, s.value)
    return out


def series_of(first, second, instance):
    """promtool input series from two scrapes: counters (and histograms)
    go on at the per-interval increase seen between them, gauges stay."""
    lines = []
    for key, (kind, v1) in sorted(second.items()):
        name, labels = key
        v0 = first.get(key, (kind, v1))[1]
        sel = ",".join(['instance="%s"' % instance] +
                       ['%s="%s"' % (k, v.replace('"', '\\"')) for k, v in labels])
        # (a histogram's buckets, sum and count are counters too)
        step = max(0.0, v1 - v0) if kind in ("counter", "histogram") else 0.0
        values = "%g+%gx%d" % (v1, step, MINUTES) if step else "%gx%d" % (v1, MINUTES)
        lines.append("      - series: '%s{%s}'\n        values: '%s'" % (name, sel, values))
    return "\n".join(lines)


def test_file(series, instance):
    """The expectations, labels and summaries taken from the rules file
    itself (its summary rendered for the instance)."""
    with open(RULES) as f:
        rules = {r["alert"]: r for g in yaml.safe_load(f)["groups"] for r in g["rules"]}
    tests = []
    for name in FIRE + list(FIRE_RULE) + QUIET:
        exp = []
        if name in FIRE or name in FIRE_RULE:
            labels = dict(rules[name]["labels"], instance=instance)
            summary = rules[name]["annotations"]["summary"].replace(
                "{{ $labels.instance }}", instance)
            if name in FIRE_RULE:
                labels["rule"] = FIRE_RULE[name]
                summary = summary.replace("{{ $labels.rule }}", FIRE_RULE[name])
            exp = [{"exp_labels": labels, "exp_annotations": {"summary": summary}}]
        tests.append("        - eval_time: 20m\n          alertname: %s\n          exp_alerts: %s"
                     % (name, json.dumps(exp)))
    return ("rule_files:\n  - %s\nevaluation_interval: 1m\ntests:\n  - interval: 1m\n"
            "    input_series:\n%s\n    alert_rule_test:\n%s\n" % (
                RULES, series, "\n".join(tests)))


def main():
    binary = sys.argv[1]
    res = sltest.Results("alerts_live")
    with tempfile.TemporaryDirectory() as tmp:
        conf = os.path.join(tmp, "sluice.yaml")
        with open(conf, "w") as f:
            f.write(CONF % sltest.free_port())
        with sltest.Topology(binary, conf, tmp) as t:
            codes = [t.curl("-H", "X-API-Key: k-%d" % (i % 3), "http://%s/v1/a" % S4)[0]
                     for i in range(10)]
            first = scrape(t.sluice.prefix)
            codes += [t.curl("-H", "X-API-Key: k-%d" % (i % 3), "http://%s/v1/b" % S4)[0]
                      for i in range(10)]
            failing = [t.curl("-H", "X-API-Key: k-f", "http://%s/failing/x?status=503" % S4)[0]
                       for i in range(6)]
            tight = [t.curl("-H", "X-API-Key: k-t", "http://%s/tight/x" % S4)[0]
                     for i in range(20)]
            slow = [t.curl("-H", "X-API-Key: k-s", "http://%s/slow/x?delay=0.3" % S4)[0]
                    for i in range(3)]
            res.check(failing == [503] * 6, "the failing route's backend answered 503 every "
                      "time, sluice refused none: %s" % failing)
            res.check(tight.count(429) >= 15 and tight.count(200) >= 1,
                      "the tight route: %d served, %d refused" % (tight.count(200),
                                                                   tight.count(429)))
            time.sleep(0.5)
            second = scrape(t.sluice.prefix)
            st = sltest.telemetry(t.sluice.prefix, "/sluice/store")
            res.check(codes.count(200) > 0 and st["state"] != "closed",
                      "Redis not there: the circuit %s, requests answered from the node's share "
                      "(%d of 20 served)" % (st["state"], codes.count(200)))
            res.check(len(second) > 20, "the exporter read the appliance (%d samples)" %
                      len(second))
            be = sltest.telemetry(t.sluice.prefix, "/sluice/backend")
            sb = be["slow"]
            res.check(slow == [200] * 3 and sb["le_us_200000"] == 0 and
                      sb["le_us_500000"] == 3 and 300000 * 3 <= sb["sum_us"] < 500000 * 3 and
                      200000 <= sb["p50_us"] <= 500000 and
                      be["live"]["p99_us"] < 200000,
                      "a backend 0.3 s slow on one route: that rule's times moved into "
                      "(0.2 s, 0.5 s], the others' did not (%s)" % {
                          k: sb[k] for k in ("le_us_200000", "le_us_500000", "sum_us",
                                             "p50_us")})
            res.check(be["failing"]["5xx"] == 6 and be["failing"]["timed"] == 6 and
                      be["tight"]["2xx"] == tight.count(200) and be["tight"]["5xx"] == 0 and
                      be["live"]["2xx"] == codes.count(200),
                      "/sluice/backend counted each rule's answers: %s" % {
                          k: {c: v[c] for c in ("2xx", "5xx", "unanswered", "timed", "p99_us")}
                          for k, v in be.items() if isinstance(v, dict)})
            res.eq(t.sluice.stop(), 0, "stops cleanly")
        path = os.path.join(tmp, "live_test.yml")
        with open(path, "w") as f:
            f.write(test_file(series_of(first, second, "live"), "live"))
        r = subprocess.run(["promtool", "test", "rules", path], capture_output=True, text=True,
                           timeout=300)
        res.check(r.returncode == 0, "promtool on the recorded scrape: the circuit and degraded "
                  "alerts fire for the instance, the backend's for its rule, %s stay quiet%s" % (
                      ", ".join(QUIET),
                      "" if r.returncode == 0 else "\n" + r.stdout + r.stderr))
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
