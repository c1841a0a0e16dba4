#!/usr/bin/python3
"""The limit cannot be sidestepped by TCP: a real Linux backend (nginx) is
the oracle, its access log the judge.

A hand-written TCP client in the client namespace (evasion_client.py)
tries every way to make sluice decide on bytes the backend's stack reads
differently: forged RST and SYN, a first copy the backend drops (six
ways) resent as another head, the urgent pointer, a third VLAN tag, an
IPv6 fragment header before options, SYN data (to a backend with TCP
Fast Open, whose kernel must take none of it), pipelining behind an
upgrade nginx refuses, a connection the backend ends and begins anew
on its 4-tuple while sluice holds it (an RST behind sluice's sequence,
then a SYN far behind it), plain and after a real 101, and one sluice
forgets inside a request body the backend still reads (an RST at
sluice's sequence, ahead of the backend's), then picks up mid-stream
at a head of its own making. Each case has its own key under a 1/min
rule and also sends a blocklisted key: nginx may serve a case's key on
/v1/search at most once, and the blocklisted key never. And curl --http2
against a backend that takes the upgrade to h2c (h2c_server.py): after
its 101 every request would be an HTTP/2 stream sluice cannot read, so
the upgrade is refused and the backend serves none; nor any request in
a CONNECT tunnel, which the same backend opens as a proxy would; nor a
request in a Content-Length body, which the same backend reads as one
under /static/ (CL.0).

Then the legitimate twins with the kernel's own TCP: answers in order
when an allowed and a blocked request share a segment, an honest slow
client under the head timeout, a keep-alive client across a flood of
spoofed flows (still limited, table never over its size), a long head
after a flood of spoofed incomplete heads, a server that does upgrade
(bytes pass after its 101), an abortive close.

usage: test_evasion.py PATH/TO/sluice
"""

import concurrent.futures
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import sltest  # noqa: E402

CONF = os.path.join(HERE, "evasion.yaml")
CLIENT = os.path.join(HERE, "evasion_client.py")
H2C = os.path.join(HERE, "h2c_server.py")
H2C_PORT = 8083
# A server that switches protocols: 101, then echoes what comes.
UPGRADER = r"""
import socket, threading
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("198.18.0.2", 8082)); s.listen(8)
print("up", flush=True)
def serve(c):
    c.settimeout(10)
    d = b""
    try:
        while b"\r\n\r\n" not in d:
            d += c.recv(4096)
        c.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                  b"Connection: Upgrade\r\n\r\n")
        while True:
            x = c.recv(4096)
            if not x:
                break
            c.sendall(x)
    except OSError:
        pass
    c.close()
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
"""

# Through a backend that honours CONNECT: the tunnel's requests, each
# read back; prints the statuses seen (the CONNECT's first).
TUNNELLER = r"""
import json, socket, sys
port = int(sys.argv[1])
s = socket.create_connection(("198.18.0.2", port), timeout=5)
key = b"X-API-Key: k-connect\r\n"
s.sendall(b"CONNECT 198.18.0.2:%d HTTP/1.1\r\nHost: 198.18.0.2:%d\r\n" % (port, port)
          + key + b"\r\n")
got, buf = [], b""
def status():
    global buf
    while b"\r\n\r\n" not in buf:
        x = s.recv(4096)
        if not x:
            return None
        buf += x
    head, buf = buf.split(b"\r\n\r\n", 1)
    n = [int(l.split(b":")[1]) for l in head.split(b"\r\n")
         if l.lower().startswith(b"content-length:")]
    while n and len(buf) < n[0]:
        buf += s.recv(4096)
    buf = buf[n[0]:] if n else buf
    return int(head.split(b" ")[1])
try:
    got.append(status())
    for i in range(3):
        if got[0] != 200:
            break
        s.sendall(b"GET /v1/search HTTP/1.1\r\nHost: a\r\n" + key + b"\r\n")
        got.append(status())
except OSError:
    pass
print(json.dumps(got))
"""

ATTACKS = ["rst", "syn", "drop-noack", "drop-mac", "drop-md5", "drop-ackbeyond",
           "drop-paws", "drop-lsrr", "urg", "vlan3", "frag6", "syndata", "upgrade",
           "reopen", "reopen-tunnel", "pickup-body"]


def mac(ns):
    out = subprocess.run(["ip", "-n", ns, "-j", "link", "show", "eth0"],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)[0]["address"]


def rss_kb(s):
    with open("/proc/%d/status" % s.proc.pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def fast_open(t):
    """The most lenient backend takes a SYN's data as the stream's first
    bytes (TCP Fast Open, no cookie asked): so does the server namespace's
    kernel, for nginx's listeners (fastopen=64). Returns t."""
    # TFO_SERVER_ENABLE | TFO_SERVER_COOKIE_NOT_REQD
    subprocess.run(["ip", "netns", "exec", t.sns, "sysctl", "-qw",
                    "net.ipv4.tcp_fastopen=514"], check=True)
    return t


def fast_open_taken(t):
    """SYN payloads the server namespace's kernel took as stream data."""
    out = subprocess.run(["ip", "netns", "exec", t.sns, "nstat", "-az",
                          "TcpExtTCPFastOpenPassive"], capture_output=True, text=True).stdout
    m = re.search(r"TcpExtTCPFastOpenPassive\s+(\d+)", out)
    return int(m.group(1)) if m else -1


def run_client(t, case, cmac, smac, timeout=120):
    r = t.client("/usr/bin/python3", CLIENT, case, cmac, smac, timeout=timeout)
    try:
        return json.loads(r.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        print("  client %s failed: %s" % (case, r.stderr[-2000:]))
        return {}


def attacks(res, t, ng, cmac, smac):
    r = run_client(t, ",".join(ATTACKS), cmac, smac)
    time.sleep(0.5)
    log = ng.log()
    for case in ATTACKS:
        key = "k-" + case
        served = sum(1 for k, st, uri in log if k == key and uri == "/v1/search" and st == "200")
        res.check(served <= 1, "%s: nginx served the limited path %d time(s), limit 1" %
                  (case, served))
    bad = [x for x in log if x[0] == "k-bad"]
    res.eq(bad, [], "the blocklisted key never reached nginx, whatever the trick")
    res.eq(fast_open_taken(t), 0, "the backend's kernel, Fast Open on, never took a SYN's "
           "payload into a stream (TcpExtTCPFastOpenPassive)")
    res.eq(r.get("tunnel"), [403] * 2, "a connection the backend began anew on a tunnel's "
           "4-tuple is read: its blocklisted upgrade refused, not tunnelled")


def h2c(res, t, log):
    """curl --http2 on http:// asks for h2c on its first request and
    sends every later URL as a stream of the upgraded connection."""
    url = "http://198.18.0.2:%d/v1/search" % H2C_PORT
    out = t.client("curl", "-s", "--max-time", "10", "--http2", "-H", "X-API-Key: k-h2c",
                   "-w", "%{http_code}\n", *sum((["-o", "/dev/null", url] for _ in range(4)), []))
    codes = out.stdout.split()
    code, _, body = t.curl("--http2", "-H", "X-API-Key: k-h2c", url)
    plain = [t.curl("-H", "X-API-Key: k-h1", url)[0] for _ in range(2)]
    time.sleep(0.3)
    with open(log) as f:
        served = [ln.split() for ln in f]
    res.eq((codes, code, json.loads(body or "{}").get("reason")),
           (["400"] * 4, 400, "upgrade_protocol"),
           "curl --http2 to a backend that takes h2c: each upgrade refused (400 "
           "upgrade_protocol), not tunnelled")
    res.eq([ln[0] for ln in served if ln[0] == "k-h2c"], [],
           "the h2c backend served none of the upgrading client's requests (%s)" % served)
    res.eq(plain, [200, 429], "the same backend over HTTP/1.1: served, then limited")
    # the same backend honours CONNECT as a proxy in front of itself
    out = t.client("/usr/bin/python3", "-c", TUNNELLER, str(H2C_PORT))
    got = json.loads(out.stdout or "null")
    time.sleep(0.3)
    with open(log) as f:
        tunnelled = [ln.split() for ln in f if ln.startswith("k-connect ")]
    res.eq((got, tunnelled), ([400], []),
           "CONNECT to a backend that tunnels: refused (400), none of the tunnel's "
           "requests served")


# Bodies a backend ignoring Content-Length reads otherwise: "request", a
# request in the body, whole in the head's segment or its request line's
# end in a later one; "glued", a body of a method's first letters before
# a head that ends the method, the head in the same segment or the next;
# "headbody", a HEAD and an upgrade behind it in one segment, to a
# backend that answers HEAD with a body holding a 101, then three
# requests of a 1/min key a second apart; "headlate", the upgrade sent
# once the HEAD's head came, to such a backend that sends the body only
# then, then the same three requests.
# Prints the statuses seen and the 400's reason.
SMUGGLER = r"""
import json, re, socket, sys, time
port, kind, split = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
s = socket.create_connection(("198.18.0.2", port), timeout=5)
got = b""
if kind == "request":
    body = b"GET /v1/admin HTTP/1.1\r\nHost: a\r\nX-API-Key: k-bad\r\n\r\n"
    msg = (b"POST /static/a HTTP/1.1\r\nHost: a\r\nX-API-Key: k-cl0\r\n"
           b"Content-Length: %d\r\n\r\n" % len(body)) + body
    cut = msg.index(b"/v1/admin") + 4
elif kind == "headbody":
    msg = (b"HEAD /headget/a HTTP/1.1\r\nHost: a\r\nX-API-Key: k-hb\r\n\r\n"
           b"GET /headget/ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\n"
           b"Upgrade: websocket\r\nX-API-Key: k-hb\r\n\r\n")
    cut = len(msg)
    # the upgrade, dropped while the HEAD's answer is due, is sent
    # again by the kernel; then the key's requests
    msg += b"".join(b"GET /v1/search HTTP/1.1\r\nHost: a\r\nX-API-Key: k-hb\r\n\r\n"
                    for _ in range(3))
elif kind == "headlate":
    msg = b"HEAD /headlate/a HTTP/1.1\r\nHost: a\r\nX-API-Key: k-hl\r\n\r\n"
    cut = len(msg)
    msg += (b"GET /headlate/ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\n"
            b"Upgrade: websocket\r\nX-API-Key: k-hl\r\n\r\n")
    msg += b"".join(b"GET /v1/search HTTP/1.1\r\nHost: a\r\nX-API-Key: k-hl\r\n\r\n"
                    for _ in range(3))
else:
    msg = (b"POST /static/a HTTP/1.1\r\nHost: a\r\nX-API-Key: k-glue\r\n"
           b"Content-Length: 2\r\n\r\nPO"
           b"ST /v1/orders HTTP/1.1\r\nHost: a\r\nX-API-Key: k-glue\r\n\r\n")
    cut = msg.index(b"\r\n\r\nPO") + 6
cut = cut if split else len(msg)
s.sendall(msg[:cut])
time.sleep(0.3)
if kind == "headlate":
    # the HEAD's head read, the upgrade sent; the key's requests after
    while b"\r\n\r\n" not in got:
        x = s.recv(4096)
        if not x:
            break
        got += x
    up = msg.index(b"GET /v1/search")
    s.sendall(msg[cut:up])
    cut = up
if kind in ("headbody", "headlate"):
    time.sleep(1.5)
    rest = msg[cut:]
    for i in range(3):
        try:
            s.sendall(rest[len(rest) // 3 * i:len(rest) // 3 * (i + 1)])
        except OSError:
            break
        time.sleep(1)
else:
    s.sendall(msg[cut:])
buf = got
try:
    while True:
        x = s.recv(4096)
        if not x:
            break
        buf += x
except OSError:
    pass
codes = [int(c) for c in re.findall(rb"HTTP/1\.1 (\d{3}) ", buf)]
reason = json.loads(buf[buf.rfind(b"{"):] or b"{}").get("reason") if b"{" in buf else None
print(json.dumps([codes, reason]))
"""


def smuggle(t, kind, split):
    return json.loads(t.client("/usr/bin/python3", "-c", SMUGGLER, str(H2C_PORT), kind,
                               split).stdout or "null")


def cl0(res, t, log):
    """A body a backend that ignores Content-Length reads as the next
    request: refused, whether its line ends in the head's segment or in
    a later one (the head already forwarded)."""
    got = [smuggle(t, "request", split) for split in ("0", "1")]
    time.sleep(0.3)
    with open(log) as f:
        served = [ln.split() for ln in f if ln.split()[2:3] == ["cl0"]]
    # split: the backend answered the head (forwarded whole) before the
    # body's line ended
    res.eq(got, [[[400], "body_request"], [[200, 400], "body_request"]],
           "a request in a Content-Length body: 400 body_request, in the head's segment "
           "or a later one")
    res.eq([x for x in served if x[0] == "k-bad"], [],
           "the backend that ignores Content-Length served no request from a body (%s)" %
           served)


def cl0_glued(res, t, log):
    """A body of a method's first letters, then a head that ends the
    method: a backend that ignores Content-Length reads one POST where
    sluice reads "ST"; the head is refused, so a POST-only limit cannot
    be passed that way, however often."""
    got = [smuggle(t, "glued", split) for split in ("0", "1", "0")]
    time.sleep(0.3)
    with open(log) as f:
        served = [ln.split() for ln in f if ln.split()[:1] == ["k-glue"]]
    res.eq(got, [[[200, 400], "body_request"]] * 3,
           "a body glued to the next head's method: 400 body_request, in one segment "
           "or two, after the backend's answer to the head before it")
    res.eq([x for x in served if x[1] == "/v1/orders"], [],
           "the backend served no POST /v1/orders spelled across a body (%s)" % served)


# Requests one per connection, each method as given, to the backend
# that serves whatever method it reads (as one that upper-cases them
# serves "post" as POST); prints the statuses.
CASED = r"""
import json, socket, sys
port, out = int(sys.argv[1]), []
for m in sys.argv[2:]:
    s = socket.create_connection(("198.18.0.2", port), timeout=5)
    s.sendall(m.encode() + b" /v1/orders HTTP/1.1\r\nHost: a\r\nX-API-Key: k-case\r\n"
              b"Content-Length: 0\r\n\r\n")
    got = s.recv(4096)
    out.append(int(got.split(b" ")[1]) if got.startswith(b"HTTP/1.") else 0)
    s.close()
print(json.dumps(out))
"""


def method_case(res, t, log):
    """A POST-only 1/min rule against the method in other cases: a
    backend that upper-cases methods (Werkzeug) serves each as POST."""
    out = t.client("/usr/bin/python3", "-c", CASED, str(H2C_PORT), "post", "Post", "pOsT")
    time.sleep(0.3)
    with open(log) as f:
        served = [ln.split() for ln in f if ln.split()[:1] == ["k-case"]]
    res.eq((json.loads(out.stdout or "null"), len(served)), ([200, 429, 429], 1),
           "POST spelt post, Post, pOsT under a 1/min POST rule: one served (%s)" % served)


# Requests one per connection, each given as "METHOD TARGET [FIELD]",
# to the backend that serves a POST as the method an override names;
# prints the statuses.
OVERRIDDEN = r"""
import json, socket, sys
port, key, out = int(sys.argv[1]), sys.argv[2], []
for spec in sys.argv[3:]:
    m, target, *field = spec.split(" ", 2)
    s = socket.create_connection(("198.18.0.2", port), timeout=5)
    s.sendall(("%s %s HTTP/1.1\r\nHost: a\r\nX-API-Key: %s\r\n%s"
               "Content-Length: 0\r\n\r\n" % (m, target, key, field[0] + "\r\n" if field else ""))
              .encode())
    got = s.recv(4096)
    out.append(int(got.split(b" ")[1]) if got.startswith(b"HTTP/1.") else 0)
    s.close()
print(json.dumps(out))
"""


# Two requests of key in one write: to /v1/admin/users, then to
# /v1/public naming /v1/admin/users in X-Original-URL; prints the
# statuses read in 5 s.
PIPELINED_OVERRIDE = r"""
import json, socket, sys, time
port, key = int(sys.argv[1]), sys.argv[2]
s = socket.create_connection(("198.18.0.2", port), timeout=5)
s.sendall(("GET /v1/admin/users HTTP/1.1\r\nHost: a\r\nX-API-Key: %s\r\n\r\n"
           "GET /v1/public HTTP/1.1\r\nHost: a\r\nX-API-Key: %s\r\n"
           "X-Original-URL: /v1/admin/users\r\n\r\n" % (key, key)).encode())
data, end = b"", time.time() + 5
s.settimeout(0.2)
while time.time() < end and data.count(b"HTTP/1.1 ") < 2:
    try:
        d = s.recv(4096)
    except socket.timeout:
        continue
    if not d:
        break
    data += d
print(json.dumps([int(x.split(b" ")[0]) for x in data.split(b"HTTP/1.1 ")[1:]]))
"""


def overridden(t, log, key, *specs):
    """Each spec ("METHOD TARGET [FIELDS]") sent on its own connection
    with key: the statuses, and the requests the backend logged for key
    (key, the path it routed, h1, the method it served)."""
    out = t.client("/usr/bin/python3", "-c", OVERRIDDEN, str(H2C_PORT), key, *specs)
    time.sleep(0.3)
    with open(log) as f:
        served = [ln.split() for ln in f if ln.split()[:1] == [key]]
    return json.loads(out.stdout or "null"), served


def method_override(res, t, log):
    """A DELETE-only 1/min rule against DELETEs sent as POSTs with a
    method override: the backend (as Symfony does) serves each as a
    DELETE, so only the first of them is served."""
    got, served = overridden(t, log, "k-override",
                             "DELETE /v1/items",
                             "POST /v1/items X-HTTP-Method-Override: delete",
                             "POST /v1/items X_HTTP_METHOD_OVERRIDE: DELETE",
                             "POST /v1/items?_method=DELETE",
                             "POST /v1/items?.method=delete")
    res.eq((got, [ln[3] for ln in served]), ([200, 429, 429, 429, 429], ["DELETE"]),
           "a DELETE, then four POSTs a backend serves as DELETEs, under a 1/min DELETE "
           "rule: one DELETE served (%s)" % served)


def path_override(res, t, log):
    """A 1/min rule on /v1/admin against requests to another path that
    name /v1/admin in X-Original-URL or X-Rewrite-URL: the backend (as
    Zend Framework 1 does) routes each to /v1/admin, so only the first
    is served; two fields naming two targets are refused."""
    got, served = overridden(t, log, "k-path",
                             "GET /v1/admin/users",
                             "GET /v1/public X-Original-URL: /v1/admin/users",
                             "GET /v1/public X_Rewrite_URL: http://a/v1/%61dmin/users?x=1",
                             "GET /v1/public X-Original-URL: /v1/public/../admin/users",
                             "GET /v1/public X-Original-URL: /v1/public\r\n"
                             "X-Rewrite-URL: /v1/admin")
    res.eq((got, [ln[1] for ln in served]), ([200, 429, 429, 429, 400], ["/v1/admin/users"]),
           "a request to /v1/admin, then three a backend routes there by a path "
           "override, under a 1/min rule, and one naming two paths: one served (%s)" % served)
    # other spellings the backend decodes to the same path: an encoded
    # slash, encoded dot segments in either case, an encoded letter in
    # an absolute form; refused by the limit or as ambiguous, never served
    got, served = overridden(t, log, "k-path-enc",
                             "GET /v1/admin/users",
                             "GET /v1/public X-Original-URL: /v1%2Fadmin/users",
                             "GET /v1/public X-Original-URL: /v1%2fadmin%2Fusers",
                             "GET /v1/public X-Rewrite-URL: /v1/public/%2e%2e/admin/users",
                             "GET /v1/public X-Original-URL: /v1/public/%2E%2E/%61dmin/users",
                             "GET /v1/public X-Original-URL: http://a:80/v1/adm%69n")
    res.check(got is not None and got[0] == 200 and all(g in (400, 429) for g in got[1:])
              and [ln[1] for ln in served] == ["/v1/admin/users"],
              "a request to /v1/admin, then five overrides naming it in other "
              "encodings: each refused (%s), one served (%s)" % (got, served))
    # the override on a request pipelined behind an allowed one: the
    # first served, the second refused (the client's stack sends it
    # again once sluice cut it off the first)
    out = t.client("/usr/bin/python3", "-c", PIPELINED_OVERRIDE, str(H2C_PORT), "k-path-pipe")
    time.sleep(0.3)
    with open(log) as f:
        served = [ln.split() for ln in f if ln.split()[:1] == ["k-path-pipe"]]
    res.eq((json.loads(out.stdout or "null"), [ln[1] for ln in served]),
           ([200, 429], ["/v1/admin/users"]),
           "a request to /v1/admin and one behind it in the same write that names "
           "/v1/admin in X-Original-URL: the first served, the second refused (%s)" % served)


def head_late(res, got, log):
    """An upgrade sent once a HEAD's head came, whose body (a 101) the
    backend sends only then: that body would read as the upgrade's
    answer. The upgrade is refused; none of three requests of a 1/min
    key behind it reaches the backend unread."""
    with open(log) as f:
        served = [ln.split() for ln in f if ln.split()[:1] == ["k-hl"]]
    res.eq(got, [[200, 400], "upgrade_framing"],
           "an upgrade behind a HEAD whose answer declared a body: 400 upgrade_framing")
    res.eq([x[1] for x in served], ["/headlate/a"],
           "the backend that sends a HEAD's body late served the HEAD alone (%s)" % served)


def head_body(res, got, log):
    """An upgrade pipelined behind a HEAD, to a backend that answers HEAD
    with a body holding a 101 (a handler that serves HEAD as GET): the
    101 must not switch the connection to bytes sluice passes unread.
    The upgrade waits for the HEAD's answer, which declares that body:
    sent again, it is refused, and none of three requests of a 1/min key
    behind it reaches the backend."""
    with open(log) as f:
        served = [ln.split() for ln in f if ln.split()[:1] == ["k-hb"]]
    res.eq(got, [[200, 101, 400], "upgrade_framing"],
           "an upgrade pipelined behind a HEAD answered with a 101 in its body: "
           "held, then 400 upgrade_framing")
    res.eq([x[1] for x in served], ["/headget/a"],
           "the backend that answers HEAD as GET served the HEAD alone (%s)" % served)


def head_answers(res, t, log):
    """head_body and head_late, their clients at once: each pauses 4.5 s
    on its own connection, key and paths."""
    with concurrent.futures.ThreadPoolExecutor(2) as ex:
        hb = ex.submit(smuggle, t, "headbody", "1")
        hl = ex.submit(smuggle, t, "headlate", "1")
        got_hb, got_hl = hb.result(), hl.result()
    time.sleep(0.3)
    head_body(res, got_hb, log)
    head_late(res, got_hl, log)


def twins(res, t, cmac, smac, s):
    r = run_client(t, "legit-pipelined", cmac, smac)
    res.eq(r.get("statuses"), [200, 403],
           "allowed + blocked in one segment: nginx's answer first, then sluice's")
    r = run_client(t, "legit-slow", cmac, smac)
    res.eq(r.get("statuses"), [200], "an honest head in three parts, a second apart: served")
    before, rss0 = s.stats(), rss_kb(s)
    r = run_client(t, "legit-evict:100000", cmac, smac, timeout=300)
    st, rss1 = s.stats(), rss_kb(s)
    # per flow it would be 23 MB (233 B each); the tables are allocated
    # and touched up front, so what is left is the process's own noise
    res.check(rss1 - rss0 < 1024, "sluice's resident memory flat across the flood "
              "(%d -> %d kB)" % (rss0, rss1))
    res.eq(r.get("statuses"), [200, 429],
           "keep-alive client across %s spoofed flows: its split head still read "
           "(the second /v1/search is refused), its connection translated since its "
           "first response's budget, never evicted" % r.get("sent"))
    res.check(st["flows_active"] <= 4096,
              "flow table within its size (%d of 4096)" % st["flows_active"])
    res.check(st["flows_evicted"] > before["flows_evicted"],
              "the flood evicted (%d)" % (st["flows_evicted"] - before["flows_evicted"]))
    r = run_client(t, "legit-heads:20000", cmac, smac, timeout=300)
    res.eq(r.get("statuses"), [200], "a 3000-byte head in three segments after %s spoofed "
           "incomplete heads: served" % r.get("sent"))
    r = run_client(t, "legit-upgrade", cmac, smac)
    res.eq((r.get("statuses"), r.get("echoed")), ([101], True),
           "a server that switches: after its 101 the bytes pass")
    before = s.stats()["flows_closed"]
    r = run_client(t, "legit-rst", cmac, smac)
    res.eq(r.get("statuses"), [200], "abortive close: served first")
    time.sleep(0.3)
    res.check(s.stats()["flows_closed"] > before, "the exact RST closed the flow")


def main():
    res = sltest.Results("evasion")
    with tempfile.TemporaryDirectory() as tmp, \
            sltest.Topology(sys.argv[1], CONF, tmp) as t, \
            sltest.Nginx(fast_open(t), tmp, 8081, "$http_x_api_key $status $uri",
                         listen=" fastopen=64") as ng:
        cmac, smac = mac(t.cns), mac(t.sns)
        # the attacker's addresses: the server reaches them, the client's
        # kernel does not hold them (so never resets what it did not open)
        for fam, a in (("-4", "198.18.0.50"), ("-6", "2001:2::50")):
            subprocess.run(["ip", "-n", t.sns, fam, "neigh", "replace", a, "lladdr", cmac,
                            "dev", "eth0", "nud", "permanent"], check=True)
        up = subprocess.Popen(["ip", "netns", "exec", t.sns, "/usr/bin/python3", "-c", UPGRADER],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        h2log = os.path.join(tmp, "h2c.log")
        h2s = subprocess.Popen(["ip", "netns", "exec", t.sns, "/usr/bin/python3", H2C,
                                "198.18.0.2", str(H2C_PORT), h2log],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            up.stdout.readline()
            h2s.stdout.readline()
            attacks(res, t, ng, cmac, smac)
            h2c(res, t, h2log)
            cl0(res, t, h2log)
            cl0_glued(res, t, h2log)
            head_answers(res, t, h2log)
            method_case(res, t, h2log)
            method_override(res, t, h2log)
            path_override(res, t, h2log)
            twins(res, t, cmac, smac, t.sluice)
            st = t.sluice.stats()
            print("  normalizer_drops: %s" % st["normalizer_drops"])
            for k in ("no_ack", "ack_unsent", "paws", "urgent", "tcp_signature", "ip_options",
                      "resent_differs", "upgrade_pending"):
                res.check(st["normalizer_drops"].get(k, 0) > 0, "normalizer_drops.%s counted" % k)
            res.check(st["rst_ignored"] > 0 and st["syn_ignored"] > 0 and st["syn_data"] > 0,
                      "rst_ignored, syn_ignored, syn_data counted")
            # the first copies the backend dropped were compared by the
            # bytes their mbufs kept, not by digest
            res.check(st["decided_held"] > 0 and st["decided_share_full"] == 0,
                      "decided segments held by their mbufs (%d), the share never full" %
                      st["decided_held"])
            res.check(st["reopened"] >= 5, "connections begun anew by the backend counted "
                      "(reopened %d of 5)" % st["reopened"])
            res.check(st["midstream_reset"] >= 2, "connections picked up mid-body reset, not "
                      "read (midstream_reset %d of 2)" % st["midstream_reset"])
        finally:
            for p in (up, h2s):
                p.kill()
                p.wait()
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
