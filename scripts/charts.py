#!/usr/bin/python3
"""BENCHMARKS.md's charts, drawn from measured runs (JSON lines, one per
run, as scripts/bench-peers.sh and tests/e2e/test_accuracy.py write them
with SLUICE_RESULTS=FILE):

- peers.svg: requests/s and p99 on the allow and reject paths, sluice on
  each PMD beside HAProxy and nginx (kind "peers");
- accuracy.svg: each accuracy run's admissions over its allowance
  (burst + rate x t), with the test's bounds around 1 (kind "accuracy").

Every run in the files is drawn (several runs of one case: each a point,
the bar their mean), so a chart shows the spread the tables quote.

usage: scripts/charts.py OUT_DIR RESULTS.jsonl...
"""

import hashlib
import json
import os
import sys

import matplotlib

matplotlib.use("svg")
import matplotlib.pyplot as plt  # noqa: E402

# the same drawing for the same data: no timestamps or random ids in the
# SVG, so a regenerated chart differs only where a figure did
plt.rcParams["svg.hashsalt"] = "sluice"
plt.rcParams["svg.fonttype"] = "none"


def load(paths):
    runs = []
    for p in paths:
        with open(p) as f:
            runs += [json.loads(line) for line in f if line.strip()]
    return runs


def save(fig, path, runs):
    """The SVG, with a digest of the runs it was drawn from in a comment
    (tests/func/test_charts.py checks a checked-in chart against its
    data by it, whatever the fonts of the machine that drew it)."""
    fig.savefig(path, metadata={"Date": None})
    plt.close(fig)
    digest = hashlib.sha256("".join(
        sorted(json.dumps(r, sort_keys=True) + "\n" for r in runs)).encode()).hexdigest()
    with open(path) as f:
        text = f.read()
    head, sep, rest = text.partition("\n")
    with open(path, "w") as f:
        f.write(head + sep + "<!-- sluice-chart-data: %s -->\n" % digest + rest)
    return path


def grouped(runs, key, cases):
    """{case: [values of key over its runs]} in the order cases first appear."""
    out = {}
    for r in runs:
        out.setdefault(cases(r), []).append(r[key])
    return out


def bars(ax, data, ylabel, title):
    names = list(data)
    means = [sum(v) / len(v) for v in data.values()]
    colors = ["#3b6ea8" if n.startswith("sluice") else "#9a9a9a" for n in names]
    ax.bar(range(len(names)), means, color=colors)
    for i, vals in enumerate(data.values()):
        ax.plot([i] * len(vals), vals, "k.", markersize=4)
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)


def peers(runs, out):
    runs = [r for r in runs if r["kind"] == "peers"]
    if not runs:
        return None
    fig, axes = plt.subplots(2, 2, figsize=(10, 7))
    for col, path in enumerate(("allow", "reject")):
        sel = [r for r in runs if r["path"] == path]
        bars(axes[0][col], grouped(sel, "rps", lambda r: r["limiter"]), "requests/s",
             "%s path: throughput" % path)
        bars(axes[1][col], grouped(sel, "p99_ms", lambda r: r["limiter"]), "p99, ms",
             "%s path: p99 latency" % path)
    fig.suptitle("scripts/bench-peers.sh: wrk -c16 through each limiter (runs: %d)" %
                 (len(runs) // max(1, len({(r["limiter"], r["path"]) for r in runs}))))
    fig.tight_layout()
    return save(fig, os.path.join(out, "peers.svg"), runs)


def accuracy(runs, out):
    runs = [r for r in runs if r["kind"] == "accuracy"]
    if not runs:
        return None
    fig, ax = plt.subplots(figsize=(8, 4.5))
    data = grouped(runs, "ratio", lambda r: "%s (%d conns)" % (r["run"], r["conns"]))
    names = list(data)
    for i, vals in enumerate(data.values()):
        ax.plot([i] * len(vals), vals, "o", color="#3b6ea8")
    lows = grouped(runs, "low", lambda r: "%s (%d conns)" % (r["run"], r["conns"]))
    alw = grouped(runs, "allowed", lambda r: "%s (%d conns)" % (r["run"], r["conns"]))
    for i, n in enumerate(names):
        lo = min(lw / a for lw, a in zip(lows[n], alw[n]))
        ax.plot([i - 0.3, i + 0.3], [lo, lo], color="#b04040", linewidth=1)
        ax.plot([i - 0.3, i + 0.3], [1.05, 1.05], color="#b04040", linewidth=1)
    ax.axhline(1.0, color="#999999", linestyle=":", linewidth=1)
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names, rotation=20, ha="right", fontsize=8)
    ax.set_ylabel("admitted / (burst + rate x t)")
    ax.set_title("tests/e2e/test_accuracy.py: 2 appliances x 2 workers, one redis-server "
                 "behind a 0-6 ms delay proxy\n(red: the test's bounds; runs: %d)" %
                 (len(runs) // max(1, len(names))), fontsize=9)
    fig.tight_layout()
    return save(fig, os.path.join(out, "accuracy.svg"), runs)


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    runs = load(sys.argv[2:])
    made = [p for p in (peers(runs, out), accuracy(runs, out)) if p]
    for p in made:
        print(p)
    return 0 if made else 1


if __name__ == "__main__":
    sys.exit(main())
