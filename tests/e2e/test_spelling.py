#!/usr/bin/python3
"""A limit cannot be sidestepped by spelling: nginx is the oracle.

A generated corpus of spellings of a few paths (escaped letters in either
hex case, plain and escaped dot segments, doubled slashes, absolute form,
escaped slashes, backslashes, queries) goes through sluice to a real nginx. For each
spelling that nginx served, the path it resolved ($uri in its access log)
must be sluice's normal form (sluice --explain on the same bytes); the
others must have been refused by sluice (400) or by nginx. Then the
limit: under a 1/min rule per path, of the whole corpus sent with one key
nginx serves one request per path, over IPv4 and over IPv6. Then an
endpoint limit against varied paths, single-address blocklists over both
families with an unblocked neighbour, and two credentials for two keys.

usage: test_spelling.py PATH/TO/sluice
"""

import json
import os
import random
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sltest  # noqa: E402

CONF = os.path.join(os.path.dirname(os.path.abspath(__file__)), "spelling.yaml")
PORT = 8081
PATHS = ["/v1/search", "/v1/users/42/orders", "/v1/files/a/b.txt", "/api/Items/7"]
UNRESERVED = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")

# Runs in the client namespace: one raw request per connection, exactly
# the bytes given, bounded in time; prints one status per line.
SENDER = r"""
import json, socket, sys
reqs = json.load(open(sys.argv[1]))
for r in reqs:
    fam = socket.AF_INET6 if ":" in r["dst"] else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.settimeout(5)
    code = "000"
    try:
        if r.get("src"):
            s.bind((r["src"], 0))
        s.connect((r["dst"], r["port"]))
        s.sendall(r["head"].encode("latin-1"))
        data = b""
        while b"\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        if data.startswith(b"HTTP/1."):
            code = data.split(b" ", 2)[1].decode()
    except OSError:
        pass
    finally:
        s.close()
    print(code, flush=True)
"""


def spellings(rng, path, n):
    """n distinct spellings of path that an RFC 3986 server resolves to it,
    plus some it may refuse (escaped slashes, a lone '%', a backslash)."""
    out = {path}
    segs = path.strip("/").split("/")

    def enc_char(c):
        if c in UNRESERVED and rng.random() < 0.3:
            h = "%%%02X" % ord(c)
            return h if rng.random() < 0.5 else h.lower()
        return c

    def dot(kind):
        return {"plain": ".", "enc": rng.choice(["%2e", "%2E"]),
                "mix": rng.choice([".%2e", "%2e.", "%2E%2e"])}[kind]

    tries = 0
    while len(out) < n and tries < n * 50:
        tries += 1
        parts = []
        for s in segs:
            if rng.random() < 0.2:
                parts.append(dot("plain" if rng.random() < 0.5 else "enc"))
            if rng.random() < 0.15:
                parts.append(rng.choice(["zz", "a%62c"]))
                parts.append(dot("mix") if rng.random() < 0.5 else "..")
            parts.append("".join(enc_char(c) for c in s))
        p = ""
        for x in parts:
            p += "/" * (2 if rng.random() < 0.15 else 1) + x
        if path.endswith("/"):
            p += "/"
        r = rng.random()
        if r < 0.08:
            p = p.replace("/", "%2F", 1) if p.count("/") > 1 else p
        elif r < 0.1:
            p += "/%"
        elif r < 0.2:
            p += "?q=%2e%2e/x&y=//"
        out.add(p)
    # a '\' for a '/': a separator to IIS, a byte to nginx (sluice: 400)
    if path.count("/") > 1:
        out.add("/" + path[1:].replace("/", "\\", 1))
    return sorted(out)


def heads(targets, host="api.test", key=None, extra=""):
    for t in targets:
        forms = [t, "http://api.test" + t, "http://API.Test:%d" % PORT + t]
        yield t, forms


def explain(binary, heads):
    """sluice's view of each head: one --explain run for them all, back to
    back (a process per head took 0.4 s each under ASan)."""
    r = subprocess.run([binary, "--", "--config", CONF, "--explain", "-"],
                       input="".join(heads).encode("latin-1"), capture_output=True,
                       timeout=60)
    views = [json.loads(line) for line in r.stdout.decode().splitlines()]
    if len(views) != len(heads):
        raise RuntimeError("--explain: %d views of %d heads" % (len(views), len(heads)))
    return views


def send(t, tmp, reqs, name):
    f = os.path.join(tmp, name + ".json")
    with open(f, "w") as fh:
        json.dump(reqs, fh)
    r = t.client("/usr/bin/python3", "-c", SENDER, f, timeout=300)
    return r.stdout.split()


def access_log(tmp):
    """seq -> (status, uri) for every request nginx saw."""
    seen = {}
    try:
        with open(os.path.join(tmp, "nginx-access.log")) as f:
            for line in f:
                seq, status, uri = line.rstrip("\n").split(" ", 2)
                seen[seq] = (int(status), uri)
    except FileNotFoundError:
        pass
    return seen


def wait_log(tmp, n, timeout=5):
    deadline = time.time() + timeout
    while time.time() < deadline and len(access_log(tmp)) < n:
        time.sleep(0.1)
    return access_log(tmp)


def head(target, seq, dst_host="api.test", key=None, extra=""):
    h = "GET %s HTTP/1.1\r\nHost: %s\r\nX-Seq: %s\r\nConnection: close\r\n" % (
        target, dst_host, seq)
    if key:
        h += "X-API-Key: %s\r\n" % key
    return h + extra + "\r\n"


def oracle(res, binary, t, tmp, corpus):
    """Every spelling, no key (no rule applies): nginx's $uri against
    sluice's normal form."""
    reqs = []
    for i, target in enumerate(corpus):
        hd = head(target, "o%d" % i, "api.test:%d" % PORT)
        reqs.append({"dst": "198.18.0.2", "port": PORT, "head": hd})
    views = explain(binary, [r["head"] for r in reqs])
    codes = send(t, tmp, reqs, "oracle")
    seen = wait_log(tmp, sum(1 for c in codes if c != "400"))
    agree = refused = nginx_refused = 0
    bad = []
    for i, (target, code, v) in enumerate(zip(corpus, codes, views)):
        got = seen.get("o%d" % i)
        if code == "400" and "refused" in v:
            refused += 1
            if got is not None:
                bad.append("%s: sluice answered 400 but nginx saw it" % target)
        elif got is None:
            bad.append("%s: status %s, nginx saw nothing, sluice %s" % (target, code, v))
        elif got[0] != 200:
            nginx_refused += 1  # nginx would not serve it: no bypass
        elif "refused" in v or got[1] != v["path"]:
            bad.append("%s: nginx resolved %s, sluice %s" % (target, got[1], v))
        else:
            agree += 1
    res.check(not bad and agree >= 300,
              "%d spellings: nginx's $uri equals sluice's normal form for %d, "
              "sluice refused %d (400), nginx refused %d%s" % (
                  len(corpus), agree, refused, nginx_refused,
                  "; " + "; ".join(bad[:5]) if bad else ""))
    return codes


def limited(res, t, tmp, corpus_by_path, key, dst, what):
    """The whole corpus with one key: nginx serves one per path."""
    before = access_log(tmp)
    reqs = []
    for p, targets in corpus_by_path.items():
        for j, target in enumerate(targets):
            reqs.append({"dst": dst, "port": PORT,
                         "head": head(target, "%s-%d" % (key, len(reqs)),
                                      "api.test:%d" % PORT, key)})
    codes = send(t, tmp, reqs, key)
    time.sleep(0.5)
    after = access_log(tmp)
    served = [v[1] for k, v in after.items() if k not in before and v[0] == 200]
    per = {p: served.count(p) for p in corpus_by_path}
    res.check(all(n == 1 for n in per.values()) and len(served) == len(per),
              "%s: %d spellings with key %s, nginx served %d: %s (429: %d, 400: %d)" % (
                  what, len(reqs), key, len(served), per,
                  codes.count("429"), codes.count("400")))


def main():
    res = sltest.Results("spelling")
    rng = random.Random(7)
    corpus_by_path = {p: spellings(rng, p, 90) for p in PATHS}
    corpus = [s for v in corpus_by_path.values() for s in v]
    corpus += ["http://api.test:%d%s" % (PORT, s) for s in corpus[::7]]
    with tempfile.TemporaryDirectory() as tmp, \
            sltest.Topology(sys.argv[1], CONF, tmp) as t, \
            sltest.Nginx(t, tmp, PORT, "$http_x_seq $status $uri"):
        run(res, sys.argv[1], t, tmp, corpus, corpus_by_path)
    return res.finish()


def run(res, binary, t, tmp, corpus, corpus_by_path):
    oracle(res, binary, t, tmp, corpus)
    limited(res, t, tmp, corpus_by_path, "k-four", "198.18.0.2", "IPv4")
    limited(res, t, tmp, corpus_by_path, "k-six", "2001:2::2", "IPv6")

    # an endpoint limit binds a client that varies the path
    reqs = [{"dst": "198.18.0.2", "port": PORT,
             "head": head("/v1/ep/%d" % i, "ep%d" % i, key="k-ep%d" % i)} for i in range(10)]
    codes = send(t, tmp, reqs, "ep")
    res.eq(codes, ["200"] * 3 + ["429"] * 7,
           "endpoint 3/min over /v1/ep/{id}: ten ids, ten keys, three through")

    # single-address blocks, each family, and a neighbour that is not one
    for a in ("198.18.0.10/24", "198.18.0.11/24"):
        t.client("ip", "addr", "add", a, "dev", "eth0")
    for a in ("2001:2::10/64", "2001:2::11/64"):
        t.client("ip", "addr", "add", a, "dev", "eth0", "nodad")
    reqs = [{"dst": dst, "src": src, "port": PORT, "head": head("/free", "b%d" % i)}
            for i, (src, dst) in enumerate([("198.18.0.10", "198.18.0.2"),
                                            ("198.18.0.11", "198.18.0.2"),
                                            ("2001:2::10", "2001:2::2"),
                                            ("2001:2::11", "2001:2::2")])]
    res.eq(send(t, tmp, reqs, "block"), ["403", "200", "403", "200"],
           "blocklist: 198.18.0.10/32 and 2001:2::10/128 refused, their neighbours served")

    # one identity per request
    cases = [("X-API-Key: k-a\r\nAuthorization: Bearer k-b\r\n", "400"),
             ("X-API-Key: k-random\r\nAuthorization: Bearer k-revoked\r\n", "403"),
             ("X-API-Key: k-revoked\r\nAuthorization: Bearer k-random\r\n", "403"),
             ("X-API-Key: k-same\r\nAuthorization: Bearer k-same\r\n", "200"),
             ("Authorization: Bearer\tk-x\r\n", "400"),
             ("X-API-Key: k-revoked, k-x\r\n", "400"),
             ("Authorization: Bearer k-revoked,k-x\r\n", "400"),
             ("Authorization: Bearer k-revoked k-x\r\n", "400"),
             ("Authorization: Bearer k-x\r\nAuthorization: Basic eDp5\r\n", "400"),
             ("Authorization: Basic eDp5\r\nAuthorization: Bearer k-x\r\n", "400"),
             ("", "400")]
    reqs = [{"dst": "198.18.0.2", "port": PORT,
             "head": head("/free" if i < len(cases) - 1 else "http://other.test/free",
                          "c%d" % i, extra=x)}
            for i, (x, _) in enumerate(cases)]
    res.eq(send(t, tmp, reqs, "creds"), [c for _, c in cases],
           "two keys: 400; a revoked key in either header: 403; the same key twice: "
           "served; Bearer<TAB>: 400; two keys in one field, as a server joins two: 400; "
           "two tokens in one Bearer field: 400; a Bearer beside a Basic, either first: 400; "
           "absolute-form authority that is not Host: 400")
    # the key in the query, however its parameter is spelt: one key
    spelt = ["/v1/search?api_key=k-q", "/v1/search?api_key=k%2Dq", "/v1/search?api.key=k-q",
             "/v1/search?x=1&api%5Fkey=k-q", "/v1/search?api+key=k%2dq"]
    reqs = [{"dst": "198.18.0.2", "port": PORT, "head": head(x, "q%d" % i)}
            for i, x in enumerate(spelt)]
    reqs += [{"dst": "198.18.0.2", "port": PORT, "head": head(x, "qx%d" % i, extra=e)}
             for i, (x, e) in enumerate([("/free?api_key=k-a", "X-API-Key: k-b\r\n"),
                                         ("/free?api_key=k-a&api_key=k-b", ""),
                                         ("/free?api_key=k-revoked", ""),
                                         ("/free?api_key=k-x", "X-API-Key: k-revoked\r\n")])]
    res.eq(send(t, tmp, reqs, "param"), ["200"] + ["429"] * 4 + ["400", "400", "403", "403"],
           "the key in the query spelt five ways under 1/min: one served; beside another "
           "key, or twice: 400; revoked there, or beside a revoked key: 403")
    st = t.sluice.stats()
    res.check(st["invalid"] > 0 and st["blocked"] >= 4,
              "counted: invalid %d, blocked %d" % (st["invalid"], st["blocked"]))


if __name__ == "__main__":
    sys.exit(main())
