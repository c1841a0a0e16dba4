#!/usr/bin/python3
"""The appliance as systemd's Type=notify service sees it, without
systemd: NOTIFY_SOCKET names a datagram socket this test reads, and
WATCHDOG_USEC asks for pings.

- READY=1 comes once, after the ports forward (a request is served by
  then);
- WATCHDOG=1 comes while every worker completes its loops, and
  /sluice/workers says how long ago each did (loop_age_us);
- a worker stopped for 2 s (/sluice/stall, in debug builds: the
  sanitizer build CI runs this under) stops the pings for as long, the
  stall is logged, its loop_age_us shows it, and the pings come back
  after it.

usage: test_watchdog.py PATH/TO/sluice
"""

import os
import socket
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sltest  # noqa: E402

S4 = "198.18.0.2"
CONF = """version: 1
dataplane: {idle_sleep_us: 100, service_ports: [80], flows_per_worker: 1024,
            head_buffers_per_worker: 64, mbufs: 4095}
identity: {api_key_header: X-API-Key}
rules:
  - {name: per-key, scope: key, limit: 100/s}
  - {name: per-address, scope: ip, limit: 100/s}
"""


def messages(sock, secs):
    """(time, message) for every datagram within secs."""
    out, end = [], time.time() + secs
    while time.time() < end:
        sock.settimeout(max(0.01, end - time.time()))
        try:
            out.append((time.time(), sock.recv(4096).decode()))
        except socket.timeout:
            break
    return out


def gaps(msgs, t0):
    pings = [t0] + [t for t, m in msgs if "WATCHDOG=1" in m]
    return [b - a for a, b in zip(pings, pings[1:])], len(pings) - 1


def main():
    binary = sys.argv[1]
    res = sltest.Results("watchdog")
    with tempfile.TemporaryDirectory() as tmp:
        conf = os.path.join(tmp, "sluice.yaml")
        with open(conf, "w") as f:
            f.write(CONF)
        path = os.path.join(tmp, "notify")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sock.bind(path)
        os.environ["NOTIFY_SOCKET"] = path
        os.environ["WATCHDOG_USEC"] = "1000000"
        try:
            with sltest.Topology(binary, conf, tmp) as t:
                first = messages(sock, 2.0)
                ready = [m for _, m in first if "READY=1" in m]
                res.eq(len(ready), 1, "READY=1 once (%s)" % [m for _, m in first][:3])
                res.eq(t.curl("http://%s/v1/a" % S4)[0], 200, "it forwards once ready")
                t0 = time.time()
                msgs = messages(sock, 2.0)
                g, n = gaps(msgs, t0)
                res.check(n >= 4 and max(g) < 0.6,
                          "WATCHDOG=1 every quarter interval while the workers loop "
                          "(%d pings in 2 s, longest gap %.2f s)" % (n, max(g or [0])))
                w = sltest.telemetry(t.sluice.prefix, "/sluice/workers")
                ages = [v["loop_age_us"] for v in w.values()]
                res.check(ages and max(ages) < 500000,
                          "/sluice/workers: each worker's last loop lately (%s us)" % ages)
                try:
                    st = sltest.telemetry(t.sluice.prefix, "/sluice/stall,0,2000")
                except (OSError, ValueError, KeyError):
                    st = None
                if st is None:
                    print("  /sluice/stall is a debug build's: the stall is not tried here")
                else:
                    t1 = time.time()
                    msgs = messages(sock, 0.8)
                    w = sltest.telemetry(t.sluice.prefix, "/sluice/workers")
                    stuck = max(v["loop_age_us"] for v in w.values())
                    msgs += messages(sock, 2.2)
                    g, n = gaps(msgs, t1)
                    # pings stop once its last loop is half the interval
                    # old (0.5 s in) and come back when it loops again
                    # (2 s): a gap of four pings at least, where 0.25 s
                    # is the usual
                    res.check(max(g or [0]) >= 1.0,
                              "a worker stopped 2 s: no ping for %.2f s of it" % max(g or [0]))
                    res.check(stuck >= 500000,
                              "its loop_age_us shows the stall (%d us, 0.8 s in)" % stuck)
                    res.check(n >= 2 and time.time() - msgs[-1][0] < 1.0,
                              "the pings come back after it (%d)" % n)
                    res.eq(t.curl("http://%s/v1/b" % S4)[0], 200, "and it forwards again")
                rc = t.sluice.stop()
                res.eq(rc, 0, "stops cleanly")
                if st is not None:
                    res.check("has completed no loop" in t.sluice.out,
                              "the stall was logged")
        finally:
            del os.environ["NOTIFY_SOCKET"]
            del os.environ["WATCHDOG_USEC"]
            sock.close()
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
