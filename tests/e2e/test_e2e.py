#!/usr/bin/python3
"""End to end: a client and a server namespace joined through sluice on
net_af_packet, a real backend (scripts/backend.py) and real curl. Every
request must reach the backend unchanged and the counters must match.
Runs once with one worker and once with two workers sharing the flows.

usage: test_e2e.py PATH/TO/sluice
"""

import hashlib
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sltest  # noqa: E402

CONF = os.path.join(os.path.dirname(os.path.abspath(__file__)), "e2e.yaml")
S4, S6 = "198.18.0.2", "2001:2::2"


def run_round(res, binary, prefix, workers, tmp):
    sent = []  # (method, path, {header: value}) the client sent
    with sltest.Topology(binary, CONF, tmp, workers=workers, prefix=prefix) as t:
        w = "[%dw]" % workers
        ping = t.client("ping", "-c", "2", "-W", "2", S4)
        res.eq(ping.returncode, 0, w + " ICMP crosses the bridge")

        codes = []
        # 20 single requests, 10 distinct keys, on new connections
        for i in range(20):
            h = {"X-API-Key": "key-%d" % (i % 10)}
            sent.append(("GET", "/v1/items/%d" % i, h))
            codes.append(t.curl("-H", "X-API-Key: key-%d" % (i % 10),
                                "http://%s/v1/items/%d" % (S4, i))[0])
        # keep-alive: five requests on one connection
        urls = ["http://%s/v1/ka/%d" % (S4, i) for i in range(5)]
        for i in range(5):
            sent.append(("GET", "/v1/ka/%d" % i, {"X-User-Id": "u-7"}))
        r = t.client("curl", "-sS", "--max-time", "10", "-H", "X-User-Id: u-7",
                     *(["-o", "/dev/null"] * 5), "-w", "%{http_code}\\n", *urls)
        codes += [int(x) for x in r.stdout.split()]
        # a Content-Length body and a chunked body
        body = os.path.join(tmp, "body.bin")
        with open(body, "wb") as f:
            f.write(os.urandom(6000))
        sent.append(("POST", "/v1/upload", {"Authorization": "Bearer tok-1"}))
        codes.append(t.curl("-H", "Authorization: Bearer tok-1", "--data-binary",
                            "@" + body, "http://%s/v1/upload" % S4)[0])
        sent.append(("POST", "/v1/chunked", {"Transfer-Encoding": "chunked"}))
        codes.append(t.curl("-H", "Transfer-Encoding: chunked", "--data-binary", "@" + body,
                            "http://%s/v1/chunked" % S4)[0])
        # IPv6, the second service port, and a port that is not inspected
        sent.append(("GET", "/v1/six", {}))
        codes.append(t.curl("-g", "http://[%s]/v1/six" % S6)[0])
        sent.append(("GET", "/v1/alt", {}))
        codes.append(t.curl("http://%s:8080/v1/alt" % S4)[0])
        codes.append(t.curl("http://%s:9000/not-inspected" % S4)[0])
        inspected = len(sent)

        res.eq(codes, [200] * (inspected + 1), w + " every request answered 200")
        time.sleep(0.5)
        got = t.backend_log()
        got_inspected = [g for g in got if g["port"] != 9000]
        res.eq(len(got_inspected), inspected, w + " the backend got every request")
        same = len(got_inspected) == inspected
        for (m, path, hdrs), g in zip(sent, got_inspected):
            gh = {k.lower(): v for k, v in g["headers"]}
            if g["method"] != m or g["path"] != path or \
                    any(gh.get(k.lower()) != v for k, v in hdrs.items()):
                same = False
                print("  mismatch: sent %s %s %s, backend saw %s" % (m, path, hdrs, g))
        res.check(same, w + " method, path and headers arrive unchanged")
        sha = hashlib.sha256(open(body, "rb").read()).hexdigest()
        res.check(all(g["body_sha256"] == sha for g in got
                      if g["path"] in ("/v1/upload", "/v1/chunked")),
                  w + " request bodies arrive unchanged")

        st = t.sluice.stats()
        res.eq(st["requests"], inspected, w + " sluice counted every request once")
        res.eq(st["allowed"], inspected, w + " allowed")
        res.eq(st["invalid"] + st["malformed"], 0, w + " no parse errors, no malformed frames")
        res.eq(st["ident_key"], 21, w + " identities by API key")
        res.eq(st["ident_user"], 5, w + " identities by user")
        res.check(st["passthrough"] > 0, w + " non-inspected traffic passed through")
        wk = sltest.telemetry(t.sluice.prefix, "/sluice/workers")
        res.eq(len(wk), workers, w + " /sluice/workers lists each worker")
        res.eq(sum(x["requests"] for x in wk.values()), inspected,
               w + " per-worker requests add up")
        if workers > 1:
            res.check(sum(1 for x in wk.values() if x["requests"] > 0) == workers,
                      w + " flows were spread over both workers")
        res.eq(t.sluice.stop(), 0, w + " clean shutdown")


def main():
    binary = sys.argv[1]
    res = sltest.Results("e2e")
    prefix = "e%d" % (os.getpid() % 100000)
    with tempfile.TemporaryDirectory() as tmp:
        for workers in (1, 2):
            run_round(res, binary, prefix + str(workers), workers, tmp)
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
