#!/usr/bin/python3
"""BENCHMARKS.md's charts: scripts/charts.py draws them from
the measured runs checked in under tests/results/ (JSON lines written by
scripts/bench-peers.sh and tests/e2e/test_accuracy.py with
SLUICE_RESULTS=FILE).

- the charts are drawn again from those runs, into a temporary folder;
  each carries a digest of the runs it was drawn from, and the charts
  checked in beside them must carry the same: a chart that no
  longer matches its data (or data changed without its chart) fails
  (the digest, not the bytes: text layout may differ with fonts);
- each is well-formed SVG naming every case of its data (every limiter
  and path, every accuracy run);
- runs of another kind only, or none, draw nothing and say so.

usage: test_charts.py
"""

import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sltest  # noqa: E402

BENCH = CHARTS = os.path.join(sltest.ROOT, "tests", "results")


def digest(svg):
    for line in svg.splitlines()[:3]:
        if line.startswith("<!-- sluice-chart-data: "):
            return line.split()[2]
    return ""


def draw(out, *inputs):
    return subprocess.run(["/usr/bin/python3", os.path.join(sltest.ROOT, "scripts", "charts.py"),
                           out] + list(inputs), capture_output=True, text=True, timeout=300)


def main():
    res = sltest.Results("charts")
    inputs = sorted(os.path.join(BENCH, f) for f in os.listdir(BENCH) if f.endswith(".jsonl"))
    runs = [json.loads(line) for p in inputs for line in open(p) if line.strip()]
    with tempfile.TemporaryDirectory() as tmp:
        r = draw(tmp, *inputs)
        res.check(r.returncode == 0, "charts.py draws from tests/results/ %s" % r.stderr[-300:])
        for name, kind, labels in (
                ("peers.svg", "peers", {x["limiter"] for x in runs if x["kind"] == "peers"}),
                ("accuracy.svg", "accuracy",
                 {x["run"] for x in runs if x["kind"] == "accuracy"})):
            new = os.path.join(tmp, name)
            if not res.check(os.path.exists(new), "%s drawn" % name):
                continue
            text = open(new).read()
            try:
                ET.fromstring(text)
                ok = True
            except ET.ParseError:
                ok = False
            res.check(ok, "%s is well-formed SVG" % name)
            missing = sorted(x for x in labels if x not in text)
            res.check(labels and not missing, "%s names every %s case (%d; missing %s)" % (
                name, kind, len(labels), missing))
            res.check(digest(open(os.path.join(CHARTS, name)).read()) == digest(text) != "",
                      "tests/results/%s is the chart of the runs there (regenerate: "
                      "scripts/charts.py tests/results tests/results/*.jsonl)" % name)
        empty = os.path.join(tmp, "none.jsonl")
        open(empty, "w").write(json.dumps({"kind": "other"}) + "\n")
        r = draw(os.path.join(tmp, "none"), empty)
        res.check(r.returncode == 1 and not os.listdir(os.path.join(tmp, "none")),
                  "runs of no charted kind: nothing drawn, exit 1")
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
