#!/usr/bin/python3
"""An allowed response given its budget (response.headers_on_allow, issue
14): the real sluice binary between two raw wires the test plays both
ends of (tests/func/wire.py), every frame checked.

- the response's segment goes to the client as two: its status line with
  the RateLimit fields after it, then the rest, numbered on by the
  fields' length; checksums right, over IPv4 and over IPv6 in a VLAN
  with timestamps;
- the server sends the segment again (its ACK lost): the client gets the
  same two frames, byte for byte; sent again in two pieces cut before
  the point, the client's stream is the same bytes at the same numbers;
- the client's ACK of it all reaches the server in the server's numbers;
  the next request's response is given the next budget (one less), at
  numbers shifted by both;
- a status line cut across two server segments: the fields go after it,
  in the second.

usage: test_budget_wire.py PATH/TO/sluice
"""

import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, HERE)
import sltest  # noqa: E402
import pktcheck  # noqa: E402
import wire  # noqa: E402

from scapy.all import TCP, Ether  # noqa: E402

from wire import Conn, req  # noqa: E402

LINE = b"HTTP/1.1 200 OK\r\n"
RESP = LINE + b"Content-Length: 300\r\n\r\n" + b"x" * 300


def fields(remaining):
    return (b'RateLimit-Policy: "ten";q=10;w=60\r\nRateLimit: "ten";r=%d;t=' % remaining)


def stream(frames):
    """{client seq: byte} of the frames' payloads; checks each frame."""
    out = {}
    for f in frames:
        t = Ether(f)[TCP]
        for i, b in enumerate(bytes(t.payload)):
            out[(t.seq + i) & 0xffffffff] = b
    return out


def given(w, res, f, resp, remaining, what, shift=0):
    """The server's response (at its own numbers: shift behind the
    client's) goes out as the status line plus fields, then the rest.
    Returns the fields' length and the two frames."""
    oc, os_ = w.step("s", f.s(resp, seq=f.sseq - shift), want=2)
    if not res.eq((len(oc), len(os_)), (2, 0), what + ": two frames to the client"):
        return 0, []
    a, b = Ether(oc[0])[TCP], Ether(oc[1])[TCP]
    pa, pb = bytes(a.payload), bytes(b.payload)
    res.check(pa.startswith(LINE + fields(remaining)) and pa.endswith(b"\r\n"),
              what + ": the status line, then the budget: %r" % pa[:120])
    res.check(re.match(rb'^HTTP/1.1 200 OK\r\nRateLimit-Policy: "ten";q=10;w=60\r\n'
                       rb'RateLimit: "ten";r=\d+;t=\d+\r\n$', pa) is not None,
              what + ": exactly those two fields")
    n = len(pa) - len(LINE)
    res.eq(pb, resp[len(LINE):], what + ": then the rest of the segment")
    res.eq((a.seq, b.seq), (f.sseq, f.sseq + len(LINE) + n), what + ": numbered in sequence")
    res.eq((a.ack, b.ack), (f.cseq, f.cseq), what + ": acks in the client's numbers")
    res.check(pktcheck.cksums_ok(oc[0]) and pktcheck.cksums_ok(oc[1]), what + ": checksums")
    res.eq(str(a.flags), "PA", what + ": the first part keeps PSH ACK")
    return n, oc


def budget(w, res, f, label):
    w.handshake(f, res)
    w.fwd(res, "c", f.data(req("/v1/a", "X-API-Key: k-%s" % label)), label + ": allowed")
    n, first = given(w, res, f, RESP, 9, label + ": its response")
    if not first:
        return
    # sent again whole: the same two frames
    oc, os_ = w.step("s", f.s(RESP), want=2)
    res.eq([x.hex() for x in oc], [x.hex() for x in first],
           label + ": sent again, the same frames byte for byte")
    # sent again cut before the point, then from there: the same stream
    oc1, _ = w.step("s", f.s(RESP[:10]))
    oc2, _ = w.step("s", f.s(RESP[10:], seq=f.sseq + 10), want=2)
    res.eq(stream(oc1 + oc2), stream(first), label + ": cut elsewhere, the same bytes at "
           "the same numbers")
    f.sseq += len(RESP) + n
    shift = n
    # the client acknowledges all of it; its next request carries that ack
    nxt = req("/v1/b", "X-API-Key: k-%s" % label)
    oc, os_ = w.step("c", f.data(nxt))
    if res.eq(len(os_), 1, label + ": the next request to the server"):
        t = Ether(os_[0])[TCP]
        res.eq(t.ack, f.sseq - shift, label + ": its ack in the server's numbers")
        res.check(pktcheck.cksums_ok(os_[0]), label + ": checksums")
    n2, _ = given(w, res, f, RESP, 8, label + ": the next response", shift=shift)
    f.sseq += len(RESP) + n2
    shift += n2
    # a status line cut across two segments: the fields follow it
    w.step("c", f.data(req("/v1/c", "X-API-Key: k-%s" % label)))
    oc, _ = w.step("s", f.s(RESP[:8], seq=f.sseq - shift))
    res.eq([bytes(Ether(x)[TCP].payload) for x in oc], [RESP[:8]],
           label + ": half a status line goes on as it is")
    oc, _ = w.step("s", f.s(RESP[8:], seq=f.sseq + 8 - shift), want=2)
    pay = [bytes(Ether(x)[TCP].payload) for x in oc]
    res.check(len(pay) == 2 and pay[0].startswith(LINE[8:] + fields(7)) and
              pay[1] == RESP[len(LINE):], label + ": its other half, then the budget, then the rest")


def main():
    binary = sys.argv[1]
    res = sltest.Results("budget_wire")
    conf = os.path.join(HERE, "budget.yaml")
    with wire.Wire(wire.netns_prefix()) as w:
        with sltest.Sluice(binary, conf, w.vdevs()) as s:
            s.wait_ready()
            w.drain()
            budget(w, res, Conn(42001), "v4")
            budget(w, res, Conn(42002, v6=True, vlan=9, ts=True), "v6")
            st = s.stats()
            res.eq(s.stop(), 0, "sluice exits 0 on SIGINT")
    res.eq(st["budget_headers"], 6, "budget_headers: three responses on each connection")
    res.eq(st["budget_resent"], 4, "budget_resent: sent again whole and cut, on each")
    res.eq(st["budget_dropped"], 0, "budget_dropped")
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
