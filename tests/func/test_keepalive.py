#!/usr/bin/python3
"""A 429 that keeps the connection (response.keep_alive): the
real sluice binary between two raw wires the test plays both ends of
(tests/func/wire.py), every frame checked.

- allowed, answered by the server (a framed response), then refused: the
  429 goes to the client without FIN and nothing goes to the server;
- the client acknowledges it and sends its next request: it reaches the
  server with its sequence shifted back by the refused head and its ack
  by the 429 (checksums right), and the server's response reaches the
  client shifted forward by the 429, acknowledging in the client's
  numbers; SACK blocks translated both ways (one naming only the 429
  dropped);
- a second refusal on the same connection adds to both shifts, and a
  third right after it (no server segment between) is answered too;
- the refused head sent again before its 429 was acknowledged (the 429
  lost): the kept 429 sent again, byte for byte, and the connection goes
  on; sent again after: dropped;
- the same over IPv6 in a VLAN with timestamps agreed;
- a refusal that cannot be translated (a pipelined request behind it)
  closes as before (FIN, RST to the backend), counted as a fallback;
- started while the host's loopback is busy: none of its frames, which
  af_packet's sockets read until they are bound, reaches the wire.

usage: test_keepalive.py PATH/TO/sluice
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
sys.path.insert(0, HERE)
import sltest  # noqa: E402
import pktcheck  # noqa: E402
import wire  # noqa: E402

from scapy.all import TCP, Ether  # noqa: E402

from wire import Conn, req  # noqa: E402

ONCE = req("/v1/once", "X-API-Key: k-ka")
RESP = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"


def respond(w, res, f, what):
    """The server answers everything it got with RESP (acknowledging it)."""
    w.fwd(res, "s", f.s(RESP), what)
    f.sseq += len(RESP)


def refused_kept(w, res, f, head, what):
    """head refused with the connection kept: a 429 to the client, no
    FIN, nothing to the server. Returns the 429's payload length."""
    oc, os_ = w.step("c", f.data(head))
    if not res.eq((len(oc), len(os_)), (1, 0), what + ": one reply, nothing to the server"):
        return 0
    q = Ether(oc[0])
    t = q[TCP]
    res.eq(str(t.flags), "PA", what + ": PSH ACK, no FIN")
    res.eq((t.seq, t.ack), (f.sseq, f.cseq), what + ": at the client's place")
    res.check(pktcheck.cksums_ok(oc[0]), what + ": checksums")
    body = bytes(t.payload)
    res.check(body.startswith(b"HTTP/1.1 429 ") and b"connection: close" not in body.lower(),
              what + ": a 429 without Connection: close")
    return len(body)


def translated(res, out, want_seq, want_ack, payload, what, sack=()):
    """sack: the SACK edges the frame must carry (none by default)."""
    if not res.eq(len(out), 1, what + ": one frame on"):
        return
    t = Ether(out[0])[TCP]
    res.eq((t.seq, t.ack), (want_seq, want_ack), what + ": seq and ack translated")
    res.eq(bytes(t.payload), payload, what + ": payload unchanged")
    res.check(pktcheck.cksums_ok(out[0]), what + ": checksums")
    edges = tuple(e for o in t.options if o[0] == "SAck" for e in o[1])
    res.eq(edges, tuple(x & 0xffffffff for x in sack), what + ": SACK blocks translated")


def kept(w, res):
    f = Conn(41001)
    w.handshake(f, res)
    w.fwd(res, "c", f.data(ONCE), "the key's one request a minute")
    respond(w, res, f, "its response")
    n = refused_kept(w, res, f, ONCE, "the second")
    # what each side has seen: the server never got the head, the client
    # got n bytes the server never sent
    cdel, sins = len(ONCE), n
    f.sseq += n
    nxt = req("/v1/next", "X-API-Key: k-ka")
    # a block inside the 429 (bytes the server never sent) is dropped;
    # one past it moves back by the 429's length
    oc, os_ = w.step("c", f.data(nxt, options=[
        ("SAck", (f.sseq - 5, f.sseq - 1, f.sseq + 100, f.sseq + 200))]))
    res.eq(len(oc), 0, "next request: nothing back")
    translated(res, os_, f.cseq - len(nxt) - cdel, f.sseq - sins, nxt,
               "next request to the server", sack=(f.sseq + 100 - sins, f.sseq + 200 - sins))
    # the server answers in its own numbers
    srv = f.s(RESP, seq=f.sseq - sins, ack=f.cseq - cdel,
              options=[("SAck", (f.cseq - cdel - 9, f.cseq - cdel - 3))])
    oc, os_ = w.step("s", srv)
    res.eq(len(os_), 0, "its response: nothing back")
    translated(res, oc, f.sseq, f.cseq, RESP, "its response to the client",
               sack=(f.cseq - 9, f.cseq - 3))
    f.sseq += len(RESP)
    # a second refusal on the same connection adds to both shifts
    n2 = refused_kept(w, res, f, ONCE, "a third, refused")
    cdel, sins = cdel + len(ONCE), sins + n2
    f.sseq += n2
    oc, os_ = w.step("c", f.c(flags="A"))
    translated(res, os_, f.cseq - cdel, f.sseq - sins, b"", "its ACK to the server")
    # refused again at once, the server silent since: the server never
    # acknowledges a head it never got, so the 429 counts as its ACK
    # (else this one waited for an ACK that never comes)
    n3 = refused_kept(w, res, f, ONCE, "a fourth, right after")
    cdel, sins = cdel + len(ONCE), sins + n3
    f.sseq += n3
    oc, os_ = w.step("s", f.s(flags="A", seq=f.sseq - sins, ack=f.cseq - cdel))
    translated(res, oc, f.sseq, f.cseq, b"", "the server's ACK to the client")
    # FIN, translated
    oc, os_ = w.step("c", f.c(flags="FA"))
    translated(res, os_, f.cseq - cdel, f.sseq - sins, b"", "the client's FIN")


def lost(w, res):
    f = Conn(41002)
    w.handshake(f, res)
    w.fwd(res, "c", f.data(req("/a", "X-API-Key: k-lost")), "a first request")
    respond(w, res, f, "its response")
    once = req("/v1/once", "X-API-Key: k-lost")
    w.fwd(res, "c", f.data(once), "the key's one")
    respond(w, res, f, "its response")
    oc, os_ = w.step("c", f.data(once))
    res.eq((len(oc), len(os_)), (1, 0), "refused, kept: one reply")
    first = oc[0] if oc else b""
    n = len(Ether(first)[TCP].payload) if oc else 0
    # the 429 never arrives: the client sends the head again, and gets
    # the same 429 again, byte for byte (the kept one)
    f.cseq -= len(once)
    oc, os_ = w.step("c", f.data(once))
    res.eq((len(oc), len(os_)), (1, 0), "sent again before its 429 was acknowledged: "
           "one reply, nothing to the server")
    res.eq(oc[0].hex() if oc else "", first.hex(), "the same 429 again, byte for byte")
    # acknowledged now: the connection goes on in the shifted numbers
    f.sseq += n
    nxt = req("/after", "X-API-Key: k-lost")
    oc, os_ = w.step("c", f.data(nxt))
    translated(res, os_, f.cseq - len(nxt) - len(once), f.sseq - n, nxt,
               "the next request after the lost 429")
    # the head once more, its 429 acknowledged: nobody's to see
    f.cseq -= len(nxt) + len(once)
    w.dropped(res, f.data(once), "the answered head again, its 429 acknowledged")
    f.cseq += len(nxt)


def kept_v6_vlan(w, res):
    """The same over IPv6 in a VLAN, with timestamps agreed."""
    f = Conn(41004, v6=True, vlan=7, ts=True)
    w.handshake(f, res)
    once = req("/v1/once", "X-API-Key: k-six")
    w.fwd(res, "c", f.data(once), "IPv6: the key's one")
    respond(w, res, f, "IPv6: its response")
    n = refused_kept(w, res, f, once, "IPv6: the second")
    f.sseq += n
    nxt = req("/v6/next", "X-API-Key: k-six")
    oc, os_ = w.step("c", f.data(nxt))
    translated(res, os_, f.cseq - len(nxt) - len(once), f.sseq - n, nxt,
               "IPv6: the next request to the server")
    oc, os_ = w.step("s", f.s(RESP, seq=f.sseq - n, ack=f.cseq - len(once)))
    translated(res, oc, f.sseq, f.cseq, RESP, "IPv6: its response to the client")


def fallback(w, res):
    f = Conn(41003)
    w.handshake(f, res)
    once = req("/v1/once", "X-API-Key: k-fb")
    w.fwd(res, "c", f.data(once), "the key's one")
    respond(w, res, f, "its response")
    # refused with another request behind it in the segment: the stream
    # after it is unknown to the server's numbers, so the connection closes
    w.answered(res, f.data(once + req("/b")), 429, f.cseq - len(once) - len(req("/b")),
               "refused with a request behind it: closed as before")


def main():
    binary = sys.argv[1]
    res = sltest.Results("keepalive")
    conf = os.path.join(HERE, "keepalive.yaml")
    with wire.Wire(wire.netns_prefix()) as w:
        with wire.LoopbackBusy() as busy, sltest.Sluice(binary, conf, w.vdevs()) as s:
            s.wait_ready()
            busy.stop()
            oc, os_ = w.collect(want=0, quiet=0.3, limit=0.6)
            res.eq([x.hex() for x in oc + os_], [],
                   "started with the host's loopback busy: nothing on the wire")
            w.attach(s.counts)
            for case in (kept, lost, kept_v6_vlan, fallback):
                case(w, res)
            st = s.stats()
            res.eq(s.stop(), 0, "sluice exits 0 on SIGINT")
    res.eq(st["keepalive_replies"], 5, "keepalive_replies")
    res.eq(st["keepalive_unkept"], 0, "keepalive_unkept")
    res.eq(st["keepalive_fallback"], 1, "keepalive_fallback")
    res.eq(st["keepalive_resent"], 1, "keepalive_resent")
    # the next request, its response, an ACK each way, the FIN; after
    # the lost 429, the next request; over IPv6, a request and a response
    res.eq(st["keepalive_translated"], 8, "keepalive_translated")
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
