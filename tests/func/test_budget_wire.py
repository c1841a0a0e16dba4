#!/usr/bin/python3
"""An allowed response given its budget (response.headers_on_allow, issue
14): the real sluice binary between two raw wires the test plays both
ends of (tests/func/wire.py), every frame checked.

- the response's segment reaches the client with the RateLimit fields
  after its status line: one frame grown by them where the client's MSS
  has room, else two (the status line and fields, then the rest),
  numbered on by the fields' length; checksums right, over IPv4 and over
  IPv6 in a VLAN with timestamps;
- the server sends the segment again (its ACK lost): the client gets the
  same two frames, byte for byte; sent again in two pieces cut before
  the point, the client's stream is the same bytes at the same numbers;
- the client's ACK of it all reaches the server in the server's numbers;
  the next request's response is given the next budget (one less), at
  numbers shifted by both;
- a status line cut across two server segments: the fields go after it,
  in the second; a response longer than the MSS takes, in two frames;
- four responses sent in random pieces with random pieces sent again
  (seeded, SL_SEED): every byte reaches the client at one number, the
  stream is each response with its budget, acks translated both ways;
- a server segment whose checksum came wrong leaves with a wrong one,
  the budget in it, grown or cut in two; sent again intact, it leaves
  right.

usage: test_budget_wire.py PATH/TO/sluice
"""

import os
import random
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
BIG = LINE + b"Content-Length: 1300\r\n\r\n" + b"y" * 1300


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
    client's) reaches the client with the fields after its status line:
    one frame where the client's MSS has room (536 here: no MSS option in
    the SYN), else two (the status line and fields, then the rest).
    Returns the fields' length and the frames."""
    room = 536 - (12 if f.ts else 0)
    oc, os_ = w.step("s", f.s(resp, seq=f.sseq - shift),
                     want=1 if len(resp) + 80 <= room else 2)
    res.eq(len(os_), 0, what + ": nothing to the server")
    if not res.check(oc, what + ": to the client"):
        return 0, []
    segs = sorted((Ether(x)[TCP].seq, bytes(Ether(x)[TCP].payload), x) for x in oc)
    data = b"".join(x[1] for x in segs)
    n = len(data) - len(resp)
    res.check(re.match(rb'^HTTP/1.1 200 OK\r\nRateLimit-Policy: "ten";q=10;w=60\r\n'
                       rb'RateLimit: "ten";r=%d;t=\d+\r\n' % remaining, data) is not None,
              what + ": the status line, then exactly the budget: %r" % data[:120])
    res.eq(data[len(LINE) + n:], resp[len(LINE):], what + ": then the rest, unchanged")
    res.eq(len(oc), 1 if len(resp) + n <= room else 2,
           what + ": one frame where the MSS has room, else two")
    at = f.sseq
    for seq, pay, x in segs:
        t = Ether(x)[TCP]
        res.eq((seq, t.ack), (at, f.cseq), what + ": numbered in sequence, acks translated")
        # (grown, or the part with the fields: within the MSS; the rest
        # is no longer than the server made it)
        res.check((len(pay) <= room if seq == segs[0][0] else len(pay) < len(resp)) and
                  pktcheck.cksums_ok(x), what + ": within the MSS, checksums")
        at += len(pay)
    if len(segs) == 2:
        res.eq(str(Ether(segs[0][2])[TCP].flags), "PA", what + ": the first part keeps PSH ACK")
    return n, oc


def budget(w, res, f, label):
    w.handshake(f, res)
    w.fwd(res, "c", f.data(req("/v1/a", "X-API-Key: k-%s" % label)), label + ": allowed")
    n, first = given(w, res, f, RESP, 9, label + ": its response")
    if not first:
        return
    # sent again whole: the same frames
    oc, os_ = w.step("s", f.s(RESP), want=len(first))
    res.eq([x.hex() for x in oc], [x.hex() for x in first],
           label + ": sent again, the same frames byte for byte")
    # sent again cut before the point, then from there: the same stream
    oc1, _ = w.step("s", f.s(RESP[:10]))
    oc2, _ = w.step("s", f.s(RESP[10:], seq=f.sseq + 10))
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
    oc, _ = w.step("s", f.s(RESP[8:], seq=f.sseq + 8 - shift))
    pay = b"".join(bytes(Ether(x)[TCP].payload) for x in oc)
    res.check(pay.startswith(LINE[8:] + fields(7)) and pay.endswith(b"\r\n" + RESP[len(LINE):]),
              label + ": its other half, then the budget, then the rest")
    n3 = len(pay) + 8 - len(RESP)
    f.sseq += len(RESP) + n3
    shift += n3
    # a response longer than the client's MSS takes: two frames
    w.step("c", f.data(req("/v1/d", "X-API-Key: k-%s" % label)))
    n4, _ = given(w, res, f, BIG, 6, label + ": a response of 1 300 bytes", shift=shift)


def shuffled(w, res, f, seed):
    """Responses the server sends in random pieces, with random pieces of
    what it already sent sent again (cut anywhere, across the point or
    not): every byte reaches the client at one number, the same each time
    it comes, and the client's stream is the response with its budget
    after the status line; the client's ack of it all reaches the server
    as the server's end."""
    rnd = random.Random(seed)
    w.handshake(f, res)
    shift = 0
    ok_stream = ok_same = ok_ack = True
    for k in range(4):
        body = bytes(rnd.choice(b"abcdefghij") for _ in range(rnd.randrange(50, 1500)))
        resp = LINE + b"Content-Length: %d\r\n\r\n" % len(body) + body
        # (its ack in the server's numbers, once a budget went in)
        _, os_ = w.step("c", f.data(req("/v1/s%d" % k, "X-API-Key: k-shuf")))
        ok_ack &= len(os_) == 1 and Ether(os_[0])[TCP].ack == f.sseq - shift
        got = {}
        sent = 0
        s0 = f.sseq - shift  # the response's start, in the server's numbers
        while sent < len(resp):
            if sent and rnd.random() < 0.4:  # some of it again, cut anywhere
                # (half of them from the head: across the point)
                a = rnd.randrange(0, min(sent, 20) if rnd.random() < 0.5 else sent)
                b = rnd.randrange(a + 1, sent + 1)
            else:
                a, b = sent, min(len(resp), sent + rnd.randrange(1, 400))
                sent = b
            oc, _ = w.step("s", f.s(resp[a:b], seq=s0 + a), quiet=0.05)
            for x in oc:
                t = Ether(x)[TCP]
                for i, byte in enumerate(bytes(t.payload)):
                    q = (t.seq + i) & 0xffffffff
                    if got.setdefault(q, byte) != byte:
                        ok_same = False
                ok_ack &= t.ack == f.cseq and pktcheck.cksums_ok(x)
        n = len(got) - len(resp)
        data = bytes(got.get((f.sseq + i) & 0xffffffff, 0) for i in range(len(got)))
        ok_stream &= (re.match(rb'^HTTP/1.1 200 OK\r\nRateLimit-Policy: "ten";q=10;w=60\r\n'
                               rb'RateLimit: "ten";r=\d+;t=\d+\r\n', data) is not None and
                      data[len(LINE) + n:] == resp[len(LINE):])
        f.sseq += len(resp) + n
        shift += n
        # the client acknowledges all of it, with a bare ACK
        oc, os_ = w.step("c", f.c(flags="A"))
        ok_ack &= len(os_) == 1 and Ether(os_[0])[TCP].ack == f.sseq - shift
    res.check(ok_same, "shuffled (seed %d): every byte at one number, the same each time" % seed)
    res.check(ok_stream, "shuffled: the client's stream is each response with its budget")
    res.check(ok_ack, "shuffled: acks translated both ways, checksums right")


def corrupted(w, res, f):
    """A server segment whose checksum was wrong when it came (a byte
    flipped on the way, after the server summed it) is given its budget
    and still has a wrong one: the client drops it, as it would have
    without sluice, where summing it again would have handed it the
    flipped byte as good data. Sent again intact, it reaches the client
    right: the same fields at the same numbers."""
    w.handshake(f, res)
    w.fwd(res, "c", f.data(req("/v1/a", "X-API-Key: k-bad")), "corrupted: allowed")
    bad = bytearray(bytes(f.s(RESP)))
    bad[-1] ^= 0x01
    oc, _ = w.step("s", bytes(bad))
    if not res.eq(len(oc), 1, "corrupted: one frame to the client"):
        return
    pay = bytes(Ether(oc[0])[TCP].payload)
    res.check(pay.startswith(LINE + b"RateLimit-Policy") and not pktcheck.cksums_ok(oc[0]),
              "corrupted: given its budget, its checksum still wrong")
    oc2, _ = w.step("s", f.s(RESP))
    res.check(len(oc2) == 1 and pktcheck.cksums_ok(oc2[0]) and
              Ether(oc2[0])[TCP].seq == Ether(oc[0])[TCP].seq and
              bytes(Ether(oc2[0])[TCP].payload) == pay[:-1] + RESP[-1:],
              "corrupted: sent again intact, the same frame, its checksum right")
    # past the MSS the segment leaves cut in two, each summed anew: both
    # wrong where it came wrong (the flipped byte in the second)
    n = len(pay) - len(RESP)
    f.sseq += len(RESP) + n
    w.step("c", f.data(req("/v1/b", "X-API-Key: k-bad")))
    bad = bytearray(bytes(f.s(BIG, seq=f.sseq - n)))
    bad[-1] ^= 0x01
    oc, _ = w.step("s", bytes(bad), want=2)
    res.check(len(oc) == 2 and not any(pktcheck.cksums_ok(x) for x in oc),
              "corrupted, cut in two: both parts' checksums wrong")
    oc2, _ = w.step("s", f.s(BIG, seq=f.sseq - n), want=2)
    res.check(len(oc2) == 2 and all(pktcheck.cksums_ok(x) for x in oc2) and
              stream(oc2).keys() == stream(oc).keys(),
              "corrupted, cut in two: sent again intact, both parts right, at the same numbers")


def main():
    binary = sys.argv[1]
    res = sltest.Results("budget_wire")
    conf = os.path.join(HERE, "budget.yaml")
    with wire.Wire(wire.netns_prefix()) as w:
        with sltest.Sluice(binary, conf, w.vdevs()) as s:
            s.wait_ready()
            w.attach(s.counts)
            budget(w, res, Conn(42001), "v4")
            budget(w, res, Conn(42002, v6=True, vlan=9, ts=True), "v6")
            shuffled(w, res, Conn(42003), int(os.environ.get("SL_SEED", "1")))
            corrupted(w, res, Conn(42004))
            st = s.stats()
            res.eq(s.stop(), 0, "sluice exits 0 on SIGINT")
    res.eq(st["budget_headers"], 14, "budget_headers: four responses on each connection, "
           "and the two corrupted ones")
    res.check(st["budget_resent"] > 4, "budget_resent: sent again whole and cut, on each, "
              "and shuffled pieces across the point (%d)" % st["budget_resent"])
    res.eq(st["budget_dropped"], 0, "budget_dropped")
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
