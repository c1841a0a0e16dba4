#!/usr/bin/python3
"""The backend never acts on a byte sluice has not decided: nginx judges.

A generated corpus of request shapes (HTTP/1.1, HTTP/0.9, bare LF,
obs-fold, whitespace before the colon, HEAD for a GET rule, the key
header spelt with underscores, the client behind five X-Forwarded-For
fields or an IPv4-mapped address) is sent through sluice to a real nginx
at every two-way cut, a byte at a time and in one segment: from a
blocklisted address (by the packet, and by the forwarded field) and
with a key limited to 1/min. Each request carries its own id in the
query, which nginx logs. The judge: nginx's log shows no request served
(a status below 400) from the blocklisted client, and at most one of
the limited key's. The
honest twin: the same shapes from an unlimited client are served
where nginx serves them.

usage: test_undecided.py PATH/TO/sluice
"""

import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sltest  # noqa: E402

CONF = os.path.join(os.path.dirname(os.path.abspath(__file__)), "undecided.yaml")
PORT = 8082
BLOCKED = "198.18.0.10"

# Runs in the client namespace: each request on its own connection, its
# parts written as separate segments (TCP_NODELAY, a pause between);
# sixteen connections at a time, each bounded in time.
SENDER = r"""
import json, socket, sys, time
from concurrent.futures import ThreadPoolExecutor
reqs = json.load(open(sys.argv[1]))
def one(r):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.settimeout(3)
    try:
        if r.get("src"):
            s.bind((r["src"], 0))
        s.connect(("198.18.0.2", %d))
        for i, p in enumerate(r["parts"]):
            if i:
                time.sleep(0.01)
            s.sendall(p.encode("latin-1"))
        s.recv(4096)
    except OSError:
        pass
    finally:
        s.close()
with ThreadPoolExecutor(16) as ex:
    list(ex.map(one, reqs))
""" % PORT


def shapes(rid, who):
    """The corpus for one id: (name, bytes). who: 'key' (the limited
    key), 'peer' (no key) or 'xff5' / 'mapped' (no key, the client behind
    a forwarded field)."""
    q = "/v1/search?id=%s" % rid
    key = "X-API-Key: k-lim\r\n" if who == "key" else ""
    fwd = ""
    if who == "xff5":
        fwd = "".join("X-Forwarded-For: 198.18.7.%d\r\n" % i for i in range(1, 5))
        fwd += "X-Forwarded-For: 203.0.113.7\r\n"
    elif who == "mapped":
        fwd = "X-Forwarded-For: ::ffff:203.0.113.7\r\n"
    out = [
        ("http11", "GET %s HTTP/1.1\r\nHost: a\r\n%s%s\r\n" % (q, key, fwd)),
        ("http09", "GET %s\r\n" % q),
        ("http09_lf", "GET %s\n" % q),
        ("bare_lf", "GET %s HTTP/1.1\nHost: a\n%s%s\n" % (
            q, key.replace("\r", ""), fwd.replace("\r", ""))),
        ("obs_fold", "GET %s HTTP/1.1\r\nHost: a\r\n%sX-A: b\r\n c\r\n%s\r\n" % (q, key, fwd)),
        ("ws_colon", "GET %s HTTP/1.1\r\nHost : a\r\n%s%s\r\n" % (q, key, fwd)),
        ("head", "HEAD %s HTTP/1.1\r\nHost: a\r\n%s%s\r\n" % (q, key, fwd)),
    ]
    if who == "key":
        out.append(("underscore", "GET %s HTTP/1.1\r\nHost: a\r\nX_API_Key: k-lim\r\n\r\n"
                    % q))
    return out


def cuts(head):
    """One segment, every two-way cut, a byte at a time."""
    yield "whole", [head]
    for c in range(1, len(head)):
        yield "cut%d" % c, [head[:c], head[c:]]
    yield "bytes", list(head)


def corpus(who, src, tag):
    reqs, names = [], {}
    n = 0
    for shape, _ in shapes("x", who):
        base = dict(shapes("x", who))[shape]
        for cut, _ in cuts(base):
            rid = "%s%d" % (tag, n)
            head = dict(shapes(rid, who))[shape]
            parts = dict(cuts(head))[cut]
            reqs.append({"src": src, "parts": parts})
            names[rid] = "%s/%s/%s" % (who, shape, cut)
            n += 1
    return reqs, names


def send(t, tmp, reqs, name):
    f = os.path.join(tmp, name + ".json")
    with open(f, "w") as fh:
        json.dump(reqs, fh)
    t.client("/usr/bin/python3", "-c", SENDER, f, timeout=600)


def served(ng):
    """id -> (status, protocol) of every request nginx served (logged with
    a status below 400: a head cut off by sluice's RST is logged 400)."""
    out = {}
    for f in ng.log():
        if len(f) >= 3 and f[1] < "400":
            out[f[0]] = (f[1], f[2])
    return out


def main():
    binary = sys.argv[1]
    res = sltest.Results("undecided")
    with tempfile.TemporaryDirectory() as tmp:
        with sltest.Topology(binary, CONF, tmp) as t, \
                sltest.Nginx(t, tmp, PORT, "$arg_id $status $server_protocol") as ng:
            t.client("ip", "addr", "add", BLOCKED + "/24", "dev", "eth0")
            groups = [("key", None, "k"), ("peer", BLOCKED, "b"),
                      ("xff5", None, "x"), ("mapped", None, "m"), ("peer", None, "h")]
            names = {}
            for who, src, tag in groups:
                reqs, nm = corpus(who, src, tag)
                names.update(nm)
                t0 = time.time()
                send(t, tmp, reqs, tag)
                sltest.record("undecided", group=tag, requests=len(reqs),
                              seconds=round(time.time() - t0, 1))
            time.sleep(1)
            seen = served(ng)
            st = t.sluice.stats()
            res.eq(t.sluice.stop(), 0, "sluice exits 0 on SIGINT")
    def got(tag):
        return sorted("%s %s %s" % ((names[i],) + seen[i]) for i in seen
                      if i.startswith(tag) and i in names)
    res.check(len(got("k")) <= 1,
              "the limited key (1/min): nginx served %d of its requests, at most 1: %s"
              % (len(got("k")), got("k")[:8]))
    for tag, what in (("b", "the blocklisted peer"), ("x", "behind five XFF fields"),
                      ("m", "behind an IPv4-mapped XFF")):
        res.check(not got(tag), "%s: nginx served none (%d): %s" % (what, len(got(tag)),
                                                                 got(tag)[:8]))
    honest = got("h")
    res.check(not [n for n in honest if "/http09" in n],
              "HTTP/0.9 from anyone: never served (%d)" % len(
                  [n for n in honest if "/http09" in n]))
    for shape in ("http11", "head"):
        n = len([x for x in honest if "/%s/" % shape in x])
        want = len(list(cuts(dict(shapes("x", "peer"))[shape])))
        res.eq(n, want, "the honest twin: %s at every cut, served" % shape)
    pe = st.get("parse_errors", {})
    res.check(pe.get("http09", 0) > 0 and pe.get("bare_lf", 0) > 0 and
              pe.get("obs_fold", 0) > 0,
              "refused as http09, bare_lf, obs_fold: %s" % json.dumps(pe, sort_keys=True))
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
