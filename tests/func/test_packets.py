#!/usr/bin/python3
"""Packet tests: the real sluice binary on net_pcap vdevs, fed captures
built here with scapy. Every frame that comes out is compared byte for
byte with what should have come out, and the counters with what happened.

These are the frames whose fate depends on no conversation: what is not
inspected, what is malformed, what is encapsulated past reading. TCP
conversations need their server's answers in order, so they are scripted
step by step in test_stream.py.

usage: test_packets.py PATH/TO/sluice
"""

import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sltest  # noqa: E402
import pktcheck  # noqa: E402

from scapy.all import (ARP, ICMP, IP, UDP, TCP, Ether, Dot1Q, Dot1AD, IPv6,  # noqa: E402
                       ICMPv6ND_NS, IPv6ExtHdrDestOpt, IPv6ExtHdrFragment, Raw, rdpcap,
                       wrpcap)

CM, SM = "02:00:00:00:00:01", "02:00:00:00:00:02"
C4, S4 = "198.18.0.1", "198.18.0.2"
C6, S6 = "2001:2::1", "2001:2::2"


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

    # H. Encapsulation sluice does not read is not let through from a
    #    client: a third VLAN tag, an IPv6 fragment header anywhere before
    #    TCP (here: an atomic fragment, then destination options).
    drop(Ether(src=CM, dst=SM) / Dot1Q(vlan=0) / Dot1Q(vlan=0) / Dot1Q(vlan=0) /
         IP(src=C4, dst=S4) / TCP(sport=40008, dport=80, flags="PA") / req("/vlan3"))
    drop(Ether(src=CM, dst=SM) / IPv6(src=C6, dst=S6) / IPv6ExtHdrFragment(m=0, offset=0) /
         IPv6ExtHdrDestOpt() / TCP(sport=40009, dport=80, flags="PA") / req("/frag6"))
    # ... but a UDP fragment is not a stream's: it passes
    fwd(Ether(src=CM, dst=SM) / IPv6(src=C6, dst=S6) / IPv6ExtHdrFragment(m=1, nh=17) /
        Raw(b"u" * 40))

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
    up.append(Ether(src=SM, dst=CM) / Dot1Q(vlan=0) / Dot1Q(vlan=0) / Dot1Q(vlan=0) /
              IP(src=S4, dst=C4) / UDP(sport=1, dport=2) / b"z")  # a server's: forwarded
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
        answered = sum(1 for _, fate in down if isinstance(fate, tuple))
        want_tx = sum(1 for _, fate in down if fate is True) + 2 * answered + len(up)
        with sltest.Sluice(binary, conf, vdevs) as s:
            s.wait_ready()
            st = s.wait_for(lambda st: st["rx"] >= total)
            # TX is buffered up to the drain interval after RX counts a
            # burst, so tx lags rx: wait for it, and report what it reached.
            try:
                st = s.wait_for(lambda st: st["tx"] >= want_tx, timeout=5)
            except AssertionError:
                st = s.stats()
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
    res.eq(st["replies"], 0, "replies")
    res.eq(st["requests"], 0, "requests (the stateful cases are test_stream.py's)")
    res.eq(st["frag_dropped"], 2, "frag_dropped (IPv4 TCP, IPv6 fragment before options)")
    res.eq(st["malformed"], 5, "malformed (three from clients, two from servers)")
    res.eq(st["malformed_dropped"], 3, "malformed_dropped")
    res.eq(st["malformed_reasons"], {"ip_total_length": 1, "ip_checksum": 2, "vlan_depth": 2},
           "malformed reasons")
    res.eq(st["flows_midstream"], 0, "flows_midstream")
    res.eq(st["passthrough"], 12 + 4, "passthrough")
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
