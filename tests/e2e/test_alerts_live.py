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
store:
  redis: {endpoints: ["127.0.0.1:%d"], timeout_ms: 5, probe_interval_ms: 200}
  expected_appliances: 1
"""
FIRE = ["SluiceStoreCircuitOpen", "SluiceDegradedDecisions"]
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
    """promtool input series from two scrapes: counters go on at the
    per-interval increase seen between them, gauges stay."""
    lines = []
    for key, (kind, v1) in sorted(second.items()):
        name, labels = key
        v0 = first.get(key, (kind, v1))[1]
        sel = ",".join(['instance="%s"' % instance] +
                       ['%s="%s"' % (k, v.replace('"', '\\"')) for k, v in labels])
        step = max(0.0, v1 - v0) if kind == "counter" else 0.0
        values = "%g+%gx%d" % (v1, step, MINUTES) if step else "%gx%d" % (v1, MINUTES)
        lines.append("      - series: '%s{%s}'\n        values: '%s'" % (name, sel, values))
    return "\n".join(lines)


def test_file(series, instance):
    """The expectations, labels and summaries taken from the rules file
    itself (its summary rendered for the instance)."""
    with open(RULES) as f:
        rules = {r["alert"]: r for g in yaml.safe_load(f)["groups"] for r in g["rules"]}
    tests = []
    for name in FIRE + QUIET:
        exp = []
        if name in FIRE:
            summary = rules[name]["annotations"]["summary"].replace(
                "{{ $labels.instance }}", instance)
            exp = [{"exp_labels": dict(rules[name]["labels"], instance=instance),
                    "exp_annotations": {"summary": summary}}]
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
            time.sleep(0.5)
            second = scrape(t.sluice.prefix)
            st = sltest.telemetry(t.sluice.prefix, "/sluice/store")
            res.check(codes.count(200) > 0 and st["state"] != "closed",
                      "Redis not there: the circuit %s, requests answered from the node's share "
                      "(%d of 20 served)" % (st["state"], codes.count(200)))
            res.check(len(second) > 20, "the exporter read the appliance (%d samples)" %
                      len(second))
            res.eq(t.sluice.stop(), 0, "stops cleanly")
        path = os.path.join(tmp, "live_test.yml")
        with open(path, "w") as f:
            f.write(test_file(series_of(first, second, "live"), "live"))
        r = subprocess.run(["promtool", "test", "rules", path], capture_output=True, text=True,
                           timeout=300)
        res.check(r.returncode == 0, "promtool on the recorded scrape: the circuit and degraded "
                  "alerts fire for the instance, %s stay quiet%s" % (
                      ", ".join(QUIET),
                      "" if r.returncode == 0 else "\n" + r.stdout + r.stderr))
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
