#!/usr/bin/python3
"""Reloads against telemetry readers: the policy a reload frees must not
be read by a telemetry handler (RCU covers the workers only; the others
copy what they need under the reload lock). One thread reloads in a
loop, alternating two rule sets (a sampling rate that changes each
time), while two others query /sluice/decisions, /sluice/rules and
/sluice/stats without pause. Run under ASan in CI's second pass, a
read of a freed policy is a crash; here every answer must also be one
of the two states, never a mix.

usage: test_reload_race.py PATH/TO/sluice
"""

import os
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sltest  # noqa: E402

BASE = """version: 1
dataplane:
  service_ports: [80]
  flows_per_worker: 1024
  head_buffers_per_worker: 64
  mbufs: 4095
identity:
  api_key_header: X-API-Key
rules:
%s
decisions: {sample: %s, file: %s}
"""
RULES = ["  - {name: a, scope: key, limit: 10/s}",
         "  - {name: a, scope: key, limit: 10/s}\n  - {name: b, scope: ip, limit: 5/s}"]
ROUNDS = 60


def tel(prefix, cmd):
    """A telemetry command; a connect the socket's backlog turned away
    (EAGAIN: three clients at once) is tried again."""
    for _ in range(200):
        try:
            return sltest.telemetry(prefix, cmd)
        except BlockingIOError:
            time.sleep(0.01)
    raise OSError("telemetry socket never took the connection")


def main():
    binary = sys.argv[1]
    res = sltest.Results("reload_race")
    with tempfile.TemporaryDirectory() as tmp:
        conf = os.path.join(tmp, "sluice.yaml")
        out = os.path.join(tmp, "decisions.jsonl")

        def write(i):
            with open(conf + ".new", "w") as f:
                f.write(BASE % (RULES[i % 2], "0.5" if i % 2 else "0.25", out))
            os.replace(conf + ".new", conf)

        write(0)
        with sltest.Sluice(binary, conf, ["net_null0", "net_null1"]) as s:
            s.wait_ready()
            stop = threading.Event()
            seen = {"ppm": set(), "rules": set(), "errors": 0, "reads": 0}

            def reader():
                while not stop.is_set():
                    try:
                        d = tel(s.prefix, "/sluice/decisions")
                        r = tel(s.prefix, "/sluice/rules")
                        tel(s.prefix, "/sluice/stats")
                        seen["ppm"].add(d["sample_ppm"])
                        seen["rules"].add(len([k for k in r if k != "version"]))
                        seen["reads"] += 1
                    except (OSError, ValueError, KeyError, TypeError):
                        seen["errors"] += 1

            threads = [threading.Thread(target=reader) for _ in range(2)]
            for th in threads:
                th.start()
            ok = covered = 0
            try:
                for i in range(1, ROUNDS + 1):
                    before = seen["reads"]
                    write(i)
                    r = tel(s.prefix, "/sluice/reload")
                    ok += "version" in r
                    # a read between each reload and the next: the two
                    # loops' speeds on a loaded machine do not decide it
                    deadline = time.time() + 10
                    while seen["reads"] == before and time.time() < deadline:
                        time.sleep(0.005)
                    covered += seen["reads"] > before
            finally:
                stop.set()
                for th in threads:
                    th.join(timeout=30)
            time.sleep(0.2)
            res.eq(ok, ROUNDS, "every reload applied")
            res.check(s.proc.poll() is None, "sluice still running after %d reloads under %d "
                      "telemetry reads" % (ROUNDS, seen["reads"]))
            res.eq(covered, ROUNDS, "the readers ran throughout: reads after each of the "
                   "reloads (%d reads)" % seen["reads"])
            res.eq(seen["errors"], 0, "no telemetry answer failed")
            res.check(seen["ppm"] <= {250000, 500000},
                      "sample_ppm only ever one of the two states: %s" % sorted(seen["ppm"]))
            res.check(seen["rules"] <= {1, 2},
                      "/sluice/rules only ever one of the two rule sets: %s" %
                      sorted(seen["rules"]))
            res.eq(s.stop(), 0, "sluice exits 0")
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
