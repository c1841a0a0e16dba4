#!/usr/bin/python3
"""Repeats one scenario of tests/e2e/test_accuracy.py on one pair of
appliances, a new key each round, to read a bound's spread rather than
one sample (a diagnostic, not a test: it prints what each round gave).

  outpaced N: the outpaced-node check N times
  pause N [HOGS]: k-pause (Redis stopped 3 s) and one connection from
      each appliance, N rounds, with HOGS busy loops on the CPUs meanwhile
  outage N [HOGS]: k-pause alone, N rounds
  conns N [HOGS]: a fresh key from 64 connections on each appliance

usage: scripts/accuracy-loop.py PATH/TO/sluice outpaced|pause|outage|conns N [HOGS]
"""

import os
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


def rounds(kind, n, res, redis, a, b):
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
            acc.check_bound(res, (a, b), "/v1/shared", "k-pause%d" % i, 600, 60, 20,
                            during=pause)
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
    hogs = [subprocess.Popen(["timeout", "1800", "sh", "-c", "while :; do :; done"],
                             stdout=subprocess.DEVNULL)
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
                    rounds(kind, n, res, redis, a, b)
            finally:
                proxy.close()
                redis.kill()
                redis.wait()
    finally:
        for h in hogs:
            h.kill()
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
