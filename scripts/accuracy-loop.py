#!/usr/bin/python3
"""Repeats one scenario of tests/e2e/test_accuracy.py on one pair of
appliances, a new key each round, to read a bound's spread rather than
one sample (a diagnostic, not a test: it prints what each round gave).

  outpaced N: the outpaced-node check N times
  pause N [HOGS]: k-pause (Redis stopped 3 s) and one connection from
      each appliance, N rounds, with HOGS busy loops on the CPUs meanwhile
  outage N [HOGS]: k-pause alone, N rounds
  conns N [HOGS]: a fresh key from 64 connections on each appliance

With SL_LEDGER=1, each k-pause round also records Redis's MONITOR and
prints the key's ledger: every call on it (time from the round's start,
the connection, reserve's want/need/force/span/ahead or a refund's
units) and the bucket's tokens after it, read from the script's HSET.

usage: scripts/accuracy-loop.py PATH/TO/sluice outpaced|pause|outage|conns N [HOGS]
"""

import os
import re
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "lib"))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
import delayproxy  # noqa: E402
import sltest  # noqa: E402
import test_accuracy as acc  # noqa: E402


def ledger(path, t0):
    """The busiest key's calls in a MONITOR capture, and its tokens after
    each (the reserve script's HSET of field t)."""
    calls, out, last = {}, [], None
    lines = []
    with open(path, errors="replace") as f:
        for line in f:
            m = re.match(r'([\d.]+) \[\d+ ([^\]]+)\] (.*)', line)
            if m:
                lines.append((float(m.group(1)) - t0, m.group(2),
                              re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(3))))
    for _, _, w in lines:
        if w and w[0].upper() in ("FCALL", "EVALSHA") and len(w) > 3:
            calls[w[3]] = calls.get(w[3], 0) + 1
    key = max(calls, key=calls.get) if calls else None
    for t, who, w in lines:
        if w and w[0].upper() in ("FCALL", "EVALSHA") and len(w) > 3 and w[3] == key:
            v = w[4:]
            what = ("reserve want %s need %s force %s span %s ahead %s" % tuple(v[4:9])
                    if len(v) >= 9 else "refund %s" % v[4])
            last = "%7.3f %-21s %s" % (t, who, what)
        elif w and w[0].upper() == "HSET" and len(w) > 3 and w[1] == key and last:
            out.append("%s -> %s" % (last, w[3][:7]))
            last = None
    return out


def rounds(kind, n, res, redis, a, b, port):
    for i in range(n):
        if kind == "outpaced":
            acc.outpaced(res, redis, a, b, key="k-out%d" % i)
        elif kind == "conns":
            acc.check_bound(res, (a, b), "/v1/shared", "k-many%d" % i, 600, 60, 20, conns=64)
        else:
            def pause():
                time.sleep(3.5)
                redis.send_signal(signal.SIGSTOP)
                time.sleep(3)
                redis.send_signal(signal.SIGCONT)

            was = [acc.store_sum((a, b), f) for f in
                   ("refunds_owed", "refunds_settled", "given_back_lost")]
            mon = None
            if os.environ.get("SL_LEDGER"):
                mon = tempfile.NamedTemporaryFile(prefix="monitor", suffix=".txt")
                mp = subprocess.Popen(["stdbuf", "-oL", "redis-cli", "-p", str(port),
                                       "monitor"], stdout=mon)
            t0 = time.time()
            acc.check_bound(res, (a, b), "/v1/shared", "k-pause%d" % i, 600, 60, 20,
                            during=pause)
            if mon is not None:
                time.sleep(0.5)
                mp.terminate()
                mp.wait()
                for line in ledger(mon.name, t0):
                    print("  ledger " + line)
                mon.close()
            time.sleep(0.5)
            now = [acc.store_sum((a, b), f) for f in
                   ("refunds_owed", "refunds_settled", "given_back_lost")]
            print("  given back while the store was out: %d, refunded after: %d, lost: %d" %
                  tuple(n - w for n, w in zip(now, was)))
            if kind == "pause":
                acc.check_bound(res, (a, b), "/v1/shared", "k-one%d" % i, 600, 60, 20,
                                conns=1)
        time.sleep(1)


def main():
    if len(sys.argv) < 4 or sys.argv[2] not in ("outpaced", "pause", "outage", "conns"):
        sys.exit(__doc__)
    binary, kind, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    # each in its own process group, killed whole: killing timeout alone
    # left its sh spinning for the rest of its 30 minutes (a clean-clone
    # run then went under two busy loops)
    hogs = [subprocess.Popen(["timeout", "1800", "sh", "-c", "while :; do :; done"],
                             stdout=subprocess.DEVNULL, start_new_session=True)
            for _ in range(int(sys.argv[4]) if len(sys.argv) > 4 else 0)]
    res = sltest.Results("accuracy-loop")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            port = sltest.free_port()
            redis = sltest.start_redis(port, tmp)
            proxy = delayproxy.DelayProxy(port, 6)
            conf = os.path.join(tmp, "sluice.yaml")
            with open(conf, "w") as f:
                f.write(acc.CONF % proxy.port)
            pid = os.getpid() % 1000
            try:
                with sltest.Topology(binary, conf, tmp, workers=acc.WORKERS,
                                     prefix="la%d" % pid) as a, \
                        sltest.Topology(binary, conf, tmp, workers=acc.WORKERS,
                                        prefix="lb%d" % pid) as b:
                    rounds(kind, n, res, redis, a, b, port)
            finally:
                proxy.close()
                redis.kill()
                redis.wait()
    finally:
        for h in hogs:
            os.killpg(h.pid, signal.SIGKILL)
            h.wait()
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
