#!/usr/bin/python3
"""End to end: a client and a server namespace joined through sluice on
net_af_packet, a real backend (scripts/backend.py) and real curl. Every
request must reach the backend unchanged and the counters must match.
Runs once with one worker and once with two workers sharing the flows.

usage: test_e2e.py PATH/TO/sluice
"""

import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sltest  # noqa: E402

ROOT = sltest.ROOT
NETNS = os.path.join(ROOT, "scripts", "netns.sh")
BACKEND = os.path.join(ROOT, "scripts", "backend.py")
CONF = os.path.join(os.path.dirname(os.path.abspath(__file__)), "e2e.yaml")
S4, S6 = "198.18.0.2", "2001:2::2"


def sh(*args, **kw):
    return subprocess.run(list(args), check=True, capture_output=True, text=True, **kw)


def curl(ns, *args):
    """curl in the client namespace, bounded in time; returns stdout."""
    r = subprocess.run(["ip", "netns", "exec", ns, "curl", "-sS", "--max-time", "10",
                        "-o", "/dev/null", "-w", "%{http_code}\\n"] + list(args),
                       capture_output=True, text=True, timeout=30)
    return r.stdout.split()


def run_round(res, binary, prefix, workers, tmp):
    cns = prefix + "-c"
    log = os.path.join(tmp, "backend-%d.jsonl" % workers)
    sent = []  # (method, path, {header: value}) the client sent
    sh(NETNS, "up", prefix)
    backend = sluice = None
    try:
        backend = subprocess.Popen(["ip", "netns", "exec", prefix + "-s", "/usr/bin/python3",
                                    BACKEND, "--port", "80", "--port", "8080", "--port", "9000",
                                    "--log", log], stdout=subprocess.PIPE, text=True)
        backend.stdout.readline()  # listening
        if workers == 1:
            vdevs = ["net_af_packet0,iface=%s-c1" % prefix, "net_af_packet1,iface=%s-s1" % prefix]
            lcores = "0,1"
        else:
            vdevs = ["net_af_packet0,iface=%s-c1,qpairs=2" % prefix,
                     "net_af_packet1,iface=%s-s1,qpairs=2" % prefix]
            lcores = "--lcores 0@0,1@1,2@1"
        sluice = sltest.Sluice(binary, CONF, vdevs, lcores=lcores)
        sluice.wait_ready()
        ping = subprocess.run(["ip", "netns", "exec", cns, "ping", "-c", "2", "-W", "2", S4],
                              capture_output=True, timeout=20)
        res.eq(ping.returncode, 0, "[%dw] ICMP crosses the bridge" % workers)

        codes = []
        # 20 single requests, 10 distinct keys, on new connections
        for i in range(20):
            h = {"X-API-Key": "key-%d" % (i % 10)}
            sent.append(("GET", "/v1/items/%d" % i, h))
            codes += curl(cns, "-H", "X-API-Key: key-%d" % (i % 10), "http://%s/v1/items/%d" % (S4, i))
        # keep-alive: five requests on one connection
        urls = ["http://%s/v1/ka/%d" % (S4, i) for i in range(5)]
        for i in range(5):
            sent.append(("GET", "/v1/ka/%d" % i, {"X-User-Id": "u-7"}))
        # curl pairs each -o with one URL; the helper gives the first
        codes += curl(cns, "-H", "X-User-Id: u-7", *(["-o", "/dev/null"] * 4), *urls)
        # a Content-Length body and a chunked body
        body = os.path.join(tmp, "body.bin")
        with open(body, "wb") as f:
            f.write(os.urandom(6000))
        sent.append(("POST", "/v1/upload", {"Authorization": "Bearer tok-1"}))
        codes += curl(cns, "-H", "Authorization: Bearer tok-1", "--data-binary", "@" + body,
                      "http://%s/v1/upload" % S4)
        sent.append(("POST", "/v1/chunked", {"Transfer-Encoding": "chunked"}))
        codes += curl(cns, "-H", "Transfer-Encoding: chunked", "--data-binary", "@" + body,
                      "http://%s/v1/chunked" % S4)
        # IPv6, the second service port, and a port that is not inspected
        sent.append(("GET", "/v1/six", {}))
        codes += curl(cns, "-g", "http://[%s]/v1/six" % S6)
        sent.append(("GET", "/v1/alt", {}))
        codes += curl(cns, "http://%s:8080/v1/alt" % S4)
        codes += curl(cns, "http://%s:9000/not-inspected" % S4)
        inspected = len(sent)

        res.eq(codes, ["200"] * (inspected + 1), "[%dw] every request answered 200" % workers)
        time.sleep(0.5)
        with open(log) as f:
            got = [json.loads(line) for line in f]
        got_inspected = [g for g in got if g["port"] != 9000]
        res.eq(len(got_inspected), inspected, "[%dw] the backend got every request" % workers)
        same = len(got_inspected) == inspected
        for (m, path, hdrs), g in zip(sent, got_inspected):
            gh = {k.lower(): v for k, v in g["headers"]}
            if g["method"] != m or g["path"] != path or \
                    any(gh.get(k.lower()) != v for k, v in hdrs.items()):
                same = False
                print("  mismatch: sent %s %s %s, backend saw %s" % (m, path, hdrs, g))
        res.check(same, "[%dw] method, path and headers arrive unchanged" % workers)
        sha = __import__("hashlib").sha256(open(body, "rb").read()).hexdigest()
        res.check(all(g["body_sha256"] == sha for g in got if g["path"] in ("/v1/upload", "/v1/chunked")),
                  "[%dw] request bodies arrive unchanged" % workers)

        st = sluice.stats()
        res.eq(st["requests"], inspected, "[%dw] sluice counted every request once" % workers)
        res.eq(st["allowed"], inspected, "[%dw] allowed" % workers)
        res.eq(st["invalid"] + st["malformed"], 0, "[%dw] no parse errors, no malformed frames" % workers)
        res.eq(st["ident_key"], 21, "[%dw] identities by API key" % workers)
        res.eq(st["ident_user"], 5, "[%dw] identities by user" % workers)
        res.check(st["passthrough"] > 0, "[%dw] non-inspected traffic passed through" % workers)
        wk = sltest.telemetry(sluice.prefix, "/sluice/workers")
        res.eq(len(wk), workers, "[%dw] /sluice/workers lists each worker" % workers)
        res.eq(sum(w["requests"] for w in wk.values()), inspected,
               "[%dw] per-worker requests add up" % workers)
        if workers > 1:
            res.check(sum(1 for w in wk.values() if w["requests"] > 0) == workers,
                      "[2w] flows were spread over both workers")
        res.eq(sluice.stop(), 0, "[%dw] clean shutdown" % workers)
    finally:
        if sluice is not None and sluice.proc.poll() is None:
            sluice.proc.kill()
        if backend is not None:
            backend.kill()
            backend.wait()
        subprocess.run([NETNS, "down", prefix], capture_output=True)


def main():
    binary = sys.argv[1]
    res = sltest.Results("e2e")
    prefix = "e%d" % (os.getpid() % 100000)
    with tempfile.TemporaryDirectory() as tmp:
        for workers in (1, 2):
            run_round(res, binary, prefix, workers, tmp)
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
