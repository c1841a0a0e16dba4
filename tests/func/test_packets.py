#!/usr/bin/python3
"""Packet tests: the real sluice binary on net_pcap vdevs, fed captures
built here with scapy. Every frame that comes out is compared byte for
byte with what should have come out, and the counters with what happened.

usage: test_packets.py PATH/TO/sluice
"""

import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sltest  # noqa: E402
import pktcheck  # noqa: E402

from scapy.all import (ARP, ICMP, IP, UDP, TCP, Ether, Dot1Q, Dot1AD, IPv6,  # noqa: E402
                       ICMPv6ND_NS, IPv6ExtHdrHopByHop, Raw, rdpcap, wrpcap)

CM, SM = "02:00:00:00:00:01", "02:00:00:00:00:02"
C4, S4 = "198.18.0.1", "198.18.0.2"
C6, S6 = "2001:2::1", "2001:2::2"


class Flow:
    """A client-side TCP connection whose sequence numbers we track."""

    def __init__(self, sport, dport=80, v6=False, vlan=None, isn=1000):
        self.sport, self.dport, self.v6, self.vlan = sport, dport, v6, vlan
        self.isn = isn
        self.seq = isn + 1

    def _l3(self):
        l2 = Ether(src=CM, dst=SM)
        if self.vlan is not None:
            l2 = l2 / Dot1Q(vlan=self.vlan)
        return l2 / (IPv6(src=C6, dst=S6) if self.v6 else IP(src=C4, dst=S4))

    def syn(self):
        return self._l3() / TCP(sport=self.sport, dport=self.dport, flags="S", seq=self.isn)

    def data(self, payload, seq=None, advance=True, flags="PA", **kw):
        s = self.seq if seq is None else seq
        p = self._l3() / TCP(sport=self.sport, dport=self.dport, flags=flags,
                             seq=s, ack=1, **kw) / Raw(payload)
        if advance and seq is None:
            self.seq += len(payload)
        return p

    def fin(self):
        p = self._l3() / TCP(sport=self.sport, dport=self.dport, flags="FA", seq=self.seq, ack=1)
        self.seq += 1
        return p


def req(path, *headers, body=b""):
    h = "".join("%s\r\n" % x for x in headers)
    return ("GET %s HTTP/1.1\r\nHost: api\r\n%s\r\n" % (path, h)).encode() + body


def build():
    """Returns (port0 input, port1 input) as lists of (packet, forwarded?)."""
    down, up = [], []

    def fwd(p):
        down.append((p, True))

    def drop(p):
        down.append((p, False))

    def answered(p, status, rst_seq):
        down.append((p, (status, rst_seq)))

    # A. Everything that is not inspected crosses untouched.
    fwd(Ether(src=CM, dst="ff:ff:ff:ff:ff:ff") / ARP(psrc=C4, pdst=S4))
    fwd(Ether(src=CM, dst=SM) / IP(src=C4, dst=S4) / ICMP())
    fwd(Ether(src=CM, dst=SM) / IP(src=C4, dst=S4) / UDP(sport=5353, dport=53) / b"q")
    fwd(Ether(src=CM, dst="33:33:ff:00:00:02") / IPv6(src=C6, dst="ff02::1:ff00:2") /
        ICMPv6ND_NS(tgt=S6))
    fwd(Ether(src=CM, dst=SM) / IP(src=C4, dst=S4) / TCP(sport=1234, dport=22, flags="PA") /
        req("/not-inspected"))
    fwd(Ether(src=CM, dst=SM) / Dot1Q(vlan=10) / IP(src=C4, dst=S4) / ICMP())
    fwd(Ether(src=CM, dst=SM) / Dot1Q(vlan=10) / ARP(psrc=C4, pdst=S4))
    fwd(Ether(src=CM, dst=SM) / Dot1AD(vlan=5) / Dot1Q(vlan=6) / IP(src=C4, dst=S4) /
        UDP(sport=1, dport=2) / b"x")
    fwd(Ether(src=CM, dst=SM) / IPv6(src=C6, dst=S6) / UDP(sport=1, dport=2) / b"y")
    fwd(Ether(src=CM, dst="01:80:c2:00:00:0e", type=0x88cc) / Raw(b"\x02\x07\x04" + b"\x00" * 40))
    fwd(Ether(src=CM, dst=SM) / IP(src=C4, dst=S4, flags="MF", proto=17) / Raw(b"u" * 40))

    # B. One keep-alive connection: a head in three segments, two pipelined
    #    requests, a Content-Length body, a chunked body, a retransmission.
    f = Flow(40001)
    fwd(f.syn())
    r1 = req("/b1", "X-API-Key: key-b")
    for part in (r1[:7], r1[7:30], r1[30:]):
        fwd(f.data(part))
    fwd(f.data(req("/b2") + req("/b3")))
    post = b"POST /b4 HTTP/1.1\r\nHost: api\r\nContent-Length: 10\r\n\r\n"
    fwd(f.data(post + b"01234"))
    old = f.seq
    fwd(f.data(b"56789"))
    fwd(f.data(b"56789", seq=old))  # retransmission: forwarded, not parsed
    ch = b"POST /b5 HTTP/1.1\r\nHost: api\r\nTransfer-Encoding: chunked\r\n\r\n"
    fwd(f.data(ch + b"5\r\nhel"))
    fwd(f.data(b"lo\r\n0\r\n\r\n"))
    fwd(f.fin())

    # C. IPv6 in a VLAN, on the second service port.
    f = Flow(40002, dport=8080, v6=True, vlan=20)
    fwd(f.syn())
    fwd(f.data(req("/c1", "Authorization: Bearer tok-c")))
    fwd(f.data(req("/c2", "X-User-Id: u-1")))
    # an IPv6 hop-by-hop header in front of TCP is parsed through
    p = Ether(src=CM, dst=SM) / IPv6(src=C6, dst=S6) / IPv6ExtHdrHopByHop() / \
        TCP(sport=40012, dport=80, flags="PA", seq=77, ack=1) / req("/c3")
    fwd(p)  # mid-stream pickup of a request line

    # D. A segment ahead of a gap is dropped; its retransmission passes.
    f = Flow(40003)
    fwd(f.syn())
    r = req("/d1")
    first, second = r[:10], r[10:]
    drop(f.data(second, seq=f.seq + 10))
    fwd(f.data(first))
    fwd(f.data(second))

    # E. A bad TCP checksum is dropped before it is read.
    f = Flow(40004)
    fwd(f.syn())
    drop(f.data(req("/evil"), seq=f.seq, chksum=0x1234))
    fwd(f.data(req("/e1")))

    # F. A TCP fragment would carry request bytes past the parser.
    drop(Ether(src=CM, dst=SM) / IP(src=C4, dst=S4, flags="MF") / TCP(sport=40005, dport=80) /
         Raw(b"GET /frag HTTP/1.1\r\n"))

    # G. Malformed IP: dropped when it comes from a client.
    bad = bytearray(bytes(Ether(src=CM, dst=SM) / IP(src=C4, dst=S4) / TCP(dport=80) / b"abc"))
    bad[16:18] = (200).to_bytes(2, "big")  # total length past the frame
    drop(Ether(bytes(bad)))
    bad = bytearray(bytes(Ether(src=CM, dst=SM) / IP(src=C4, dst=S4) / UDP() / b"abc"))
    bad[24] ^= 0xff  # header checksum
    drop(Ether(bytes(bad)))

    # H. A smuggling shape: answered 400, the backend reset.
    f = Flow(40006)
    fwd(f.syn())
    s0 = f.seq
    answered(f.data(b"POST /h HTTP/1.1\r\nHost: api\r\nContent-Length: 6\r\n"
                    b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\nX"), 400, s0)

    # I. A head over max_head_bytes (1024 here): the first part passes (a
    #    backend cannot act on half a head), then 431 and a reset.
    f = Flow(40007)
    fwd(f.syn())
    big = req("/i", "X-Pad: " + "p" * 1100)
    fwd(f.data(big[:700]))
    s0 = f.seq
    answered(f.data(big[700:]), 431, s0)

    # Server to client: forwarded untouched, whatever it is.
    up.append(Ether(src=SM, dst=CM) / IP(src=S4, dst=C4) /
              TCP(sport=80, dport=40001, flags="SA", seq=5000, ack=1001))
    up.append(Ether(src=SM, dst=CM) / IP(src=S4, dst=C4) /
              TCP(sport=80, dport=40001, flags="PA", seq=5001, ack=1001) /
              b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
    up.append(Ether(src=SM, dst=CM) / ARP(op=2, psrc=S4, pdst=C4))
    up.append(Ether(src=SM, dst=CM) / IP(src=S4, dst=C4) / UDP(sport=53, dport=5353) / b"r")
    up.append(Ether(src=SM, dst=CM) / IP(src=S4, dst=C4) /
              TCP(sport=80, dport=49999, flags="R", seq=1))
    bad = bytearray(bytes(Ether(src=SM, dst=CM) / IP(src=S4, dst=C4) / UDP() / b"abc"))
    bad[24] ^= 0xff
    up.append(Ether(bytes(bad)))  # malformed from a server: forwarded
    return down, up


def main():
    binary = sys.argv[1]
    res = sltest.Results("packets")
    down, up = build()
    conf = os.path.join(os.path.dirname(os.path.abspath(__file__)), "func.yaml")
    with tempfile.TemporaryDirectory() as d:
        p = lambda n: os.path.join(d, n)  # noqa: E731
        wrpcap(p("in0.pcap"), [x for x, _ in down])
        wrpcap(p("in1.pcap"), up)
        vdevs = ["net_pcap0,rx_pcap=%s,tx_pcap=%s" % (p("in0.pcap"), p("out0.pcap")),
                 "net_pcap1,rx_pcap=%s,tx_pcap=%s" % (p("in1.pcap"), p("out1.pcap"))]
        total = len(down) + len(up)
        with sltest.Sluice(binary, conf, vdevs) as s:
            s.wait_ready()
            st = s.wait_for(lambda st: st["rx"] >= total)
            res.eq(s.stop(), 0, "sluice exits 0 on SIGINT")
            res.check("sluice: final rx=%d" % total in s.out, "final counters printed")
        out1 = [bytes(x) for x in rdpcap(p("out1.pcap"))]
        out0 = [bytes(x) for x in rdpcap(p("out0.pcap"))]

    # Upstream: what was forwarded, with an RST where a request was answered.
    want1 = []
    for x, fate in down:
        if fate is True:
            want1.append(bytes(x))
        elif isinstance(fate, tuple):
            want1.append(pktcheck.expected_rst(x, fate[1]))
    pktcheck.same_frames_per_conn(res, out1, want1, "upstream, RSTs included")
    fwd0, built = pktcheck.split_out0(out0, up)
    res.check(fwd0 == [bytes(x) for x in up], "downstream frames byte-for-byte, in order")
    answers = [(x, fate[0]) for x, fate in down if isinstance(fate, tuple)]
    res.eq(len(built), len(answers), "one reply per answered request")
    built_by = pktcheck.by_conn(built)
    for reqpkt, status in answers:
        frame = built_by.get(pktcheck.conn_of(bytes(reqpkt)), [b""])[0]
        hdrs, body = pktcheck.check_answer(res, frame, reqpkt, status, "%d reply" % status)
        want_body = {400: b'{"error":"bad_request","reason":"cl_and_te"}\n',
                     431: b'{"error":"request_header_fields_too_large"}\n'}[status]
        res.eq(body, want_body, "%d body" % status)

    res.eq(st["rx"], total, "rx")
    res.eq(st["tx"], len(want1) + len(up) + len(answers), "tx")
    res.eq(st["replies"], 2, "replies")
    res.eq(st["requests"], 12, "requests")
    res.eq(st["allowed"], 10, "allowed")
    res.eq(st["invalid"], 2, "invalid (smuggling shape answered 400, oversized head 431)")
    res.eq(st["requests"], st["allowed"] + st["rejected"] + st["blocked"] + st["invalid"],
           "requests = allowed + rejected + blocked + invalid")
    res.eq(st["parse_errors"].get("cl_and_te"), 1, "parse_errors.cl_and_te")
    res.eq(st["head_too_large"], 1, "head_too_large")
    res.eq(st["ident_key"], 2, "identities from API keys (header and Bearer)")
    res.eq(st["ident_user"], 1, "identities from the user header")
    res.eq(st["ooo_dropped"], 1, "ooo_dropped")
    res.eq(st["retransmits"], 1, "retransmits")
    res.eq(st["bad_checksum"], 1, "bad_checksum")
    res.eq(st["frag_dropped"], 1, "frag_dropped")
    res.eq(st["malformed"], 3, "malformed (two from clients, one from a server)")
    res.eq(st["malformed_dropped"], 2, "malformed_dropped")
    res.eq(st["malformed_reasons"], {"ip_total_length": 1, "ip_checksum": 2}, "malformed reasons")
    res.eq(st["flows_midstream"], 1, "flows_midstream")
    res.eq(st["heads_reassembled"], 2, "heads_reassembled (b1 in three segments, d1 after its gap)")
    res.eq(st["passthrough"], 11 + 3, "passthrough (server-side service-port segments are tracked, not passed through)")
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
