#!/usr/bin/python3
"""The attacker of test_evasion.py, run in the client namespace: TCP
written by hand (scapy builds the frames, a raw socket carries them) from
addresses the namespace's kernel does not hold, so that it neither
answers the server's segments nor resets them.

usage: evasion_client.py CASE[,CASE...] SRC_MAC DST_MAC   (prints one JSON line)
"""

import json
import random
import re
import select
import socket
import struct
import sys
import time

from scapy.all import IP, TCP, Ether, Dot1Q, IPv6, IPv6ExtHdrDestOpt, IPv6ExtHdrFragment, Raw

S4, S6 = "198.18.0.2", "2001:2::2"
PORT = 8081
A4, A6 = "198.18.0.50", "2001:2::50"  # not the kernel's: the test's own
LOST_MAC = "02:00:00:00:00:99"  # no one's: the backend's stack drops the frame
ETH_P_ALL = 0x0003


class Wire:
    def __init__(self, smac, dmac):
        self.smac, self.dmac = smac, dmac
        self.s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        self.s.bind(("eth0", 0))
        self.s.setsockopt(socket.SOL_SOCKET, 33, 16 << 20)  # SO_RCVBUFFORCE
        self.tunnel = []  # statuses reopened_tunnel's connections got
        self.ports = set()

    def fresh_port(self):
        """A source port no connection of this run had: the attacks draw
        about 64 of 40 000, two of them alike in about one run in twenty,
        and a backend still holding the first one's tuple leaves the
        second's handshake unanswered (a case then short by one: once
        "reopened 4 of 5")."""
        while True:
            p = random.randint(20000, 60000)
            if p not in self.ports:
                self.ports.add(p)
                return p

    def send(self, frame):
        self.s.send(bytes(frame))

    def frames(self, timeout):
        end = time.time() + timeout
        while True:
            left = end - time.time()
            if left <= 0:
                return
            r, _, _ = select.select([self.s], [], [], left)
            if not r:
                return
            data, addr = self.s.recvfrom(65535)
            if addr[2] != 4:  # not our own, leaving
                yield data


class Conn:
    """One hand-made connection to nginx."""

    def __init__(self, w, sport=None, v6=False, ts=False, src=None, dport=PORT):
        self.w, self.v6, self.ts = w, v6, (random.randint(1 << 20, 1 << 30) if ts else None)
        self.src = src or (A6 if v6 else A4)
        self.dst = S6 if v6 else S4
        self.sport = sport or w.fresh_port()
        self.dport = dport
        self.isn = random.randint(0, 1 << 31)
        self.snd = self.isn + 1
        self.rcv = 0
        self.got = b""
        self.closed = False

    def l3(self, ip_opts=None):
        if self.v6:
            return IPv6(src=self.src, dst=self.dst)
        return IP(src=self.src, dst=self.dst, options=ip_opts or [])

    def frame(self, payload=b"", flags="PA", seq=None, ack=None, dmac=None, opts=None,
              l3=None, l2=None, **kw):
        if opts is None:
            opts = [("Timestamp", (self.ts, 0))] if self.ts else []
        if self.ts:
            self.ts += 1
        t = TCP(sport=self.sport, dport=self.dport, flags=flags, seq=self.snd if seq is None else seq,
                ack=self.rcv if ack is None else ack, window=65535, options=opts, **kw)
        base = l2 if l2 is not None else Ether(src=self.w.smac, dst=dmac or self.w.dmac)
        p = base / (l3 if l3 is not None else self.l3()) / t
        return p / Raw(payload) if payload else p

    def _mine(self, f):
        p = Ether(f)
        if TCP not in p or p[TCP].dport != self.sport or p[TCP].sport != self.dport:
            return None
        return p

    def pump(self, timeout=0.5, until=None):
        """Reads the server's segments for a while, acknowledging data."""
        for f in self.w.frames(timeout):
            p = self._mine(f)
            if p is None:
                continue
            t = p[TCP]
            if "R" in str(t.flags):
                self.closed = True
                return
            data = bytes(t.payload)
            if data and t.seq == self.rcv:
                self.got += data
                self.rcv += len(data)
            if "F" in str(t.flags) and t.seq + len(data) == self.rcv:
                self.rcv += 1
                self.closed = True
            if data or "F" in str(t.flags):
                self.w.send(self.frame(flags="A"))
            if until is not None and until(self):
                return

    def connect(self, syn_payload=b""):
        self.w.send(self.frame(syn_payload, flags="S", seq=self.isn, ack=0))
        for f in self.w.frames(3):
            p = self._mine(f)
            if p is not None and str(p[TCP].flags) == "SA":
                self.rcv = p[TCP].seq + 1
                self.w.send(self.frame(flags="A"))
                return True
        return False

    def send(self, payload, **kw):
        f = self.frame(payload, **kw)
        if kw.get("seq") is None:
            self.snd += len(payload)
        self.w.send(f)
        return f

    def responses(self):
        return self.got.count(b"HTTP/1.1 ")


def opened(w, n, syn_payload=b"", **kw):
    """n connections, each yielded (with its index) once its handshake
    is done; one the server did not answer is skipped."""
    for i in range(n):
        c = Conn(w, **kw)
        if c.connect(syn_payload):
            yield i, c


def head(path, key, pad=0):
    h = "GET %s HTTP/1.1\r\nHost: api\r\nX-API-Key: %s\r\n" % (path, key)
    if pad:
        h += "X-Pad: %s\r\n" % ("p" * pad)
    return (h + "\r\n").encode()


def same_len(a, b):
    """b padded (in a header) to a's length, so both cover one range."""
    d = len(a) - len(b)
    assert d >= 12, (a, b)
    return b[:-2] + b"X-P: " + b"q" * (d - 7) + b"\r\n" + b"\r\n"


# ---- the cases: each uses its own keys; the test reads nginx's log -------

def answered(c):
    """The head's answer came (nginx's or sluice's): no need to wait on."""
    return c.closed or c.responses() >= 1


def forged_rst(w, key):
    for _, c in opened(w, 5):
        c.w.send(c.frame(flags="R", seq=c.snd + 100000, ack=0))
        h = head("/v1/search", key)
        c.send(h[:1])
        c.pump(0.1)
        c.send(h[1:])
        c.pump(0.5, until=answered)


def forged_syn(w, key):
    for _, c in opened(w, 5):
        c.w.send(c.frame(flags="S", seq=random.randint(0, 1 << 31), ack=0))
        c.pump(0.1)
        c.send(head("/v1/search", key))
        c.pump(0.5, until=answered)


def first_copy_dropped(w, key, how):
    """A harmless head the backend's stack drops, then another head at its
    place: the limited path with key, and a blocklisted key."""
    for i, c in opened(w, 5, ts=(how == "paws")):
        bad = head("/v1/search", key if i % 2 else "k-bad")
        ok = same_len(bad, b"GET /o HTTP/1.1\r\nHost: api\r\n\r\n")
        seq = c.snd
        kw = {}
        if how == "noack":
            kw = {"flags": "P"}
        elif how == "mac":
            kw = {"dmac": LOST_MAC}
        elif how == "md5":
            kw = {"opts": [(19, b"\x11" * 16)]}
        elif how == "ackbeyond":
            kw = {"ack": c.rcv + 100000}
        elif how == "paws":
            kw = {"opts": [("Timestamp", (c.ts - 100000, 0))]}
        elif how == "lsrr":
            kw = {"l3": IP(src=c.src, dst=c.dst, options=[b"\x83\x07\x04\xc6\x12\x00\x02"])}
        c.w.send(c.frame(ok, seq=seq, **kw))
        c.pump(0.1)
        c.send(bad, seq=seq)
        c.snd = seq + len(bad)
        c.pump(0.5, until=answered)


def reopen_and_send(c, dropped, first):
    """The backend made to end a connection sluice still holds: bytes it
    drops (a wrong MAC) move sluice on, an RST where the backend stands
    ends the backend's side only. The same 4-tuple opens again, its ISN
    far behind where sluice is, and sends first: not resent bytes, a new
    connection's first. False where the handshake got no answer."""
    seq = c.snd
    c.w.send(c.frame(dropped, seq=seq, dmac=LOST_MAC))
    c.w.send(c.frame(flags="R", seq=seq, ack=0))
    time.sleep(0.05)
    isn = seq - 200000
    c.isn, c.snd, c.rcv, c.got, c.closed = isn & 0xffffffff, (isn + 1) & 0xffffffff, 0, b"", False
    if not c.connect():
        return False
    c.send(first)
    c.pump(0.5, until=answered)
    return True


def reopened(w, key):
    """A head the backend drops, then a head of a new connection on it."""
    for i, c in opened(w, 3):
        bad = head("/v1/search", key if i % 2 else "k-bad")
        reopen_and_send(c, same_len(bad, b"GET /o HTTP/1.1\r\nHost: api\r\n\r\n"), bad)


def reopened_tunnel(w, key):
    """As reopened, the first connection a tunnel: after a 101, sluice
    reads nothing, so a connection the backend begins anew on its tuple
    must not be taken for the tunnel."""
    for _, c in opened(w, 2, dport=8082):
        c.send(b"GET /ws HTTP/1.1\r\nHost: api\r\nConnection: Upgrade\r\n"
               b"Upgrade: websocket\r\n\r\n")
        c.pump(0.5, until=answered)
        if reopen_and_send(c, b"x" * 40, b"GET /ws HTTP/1.1\r\nHost: api\r\n"
                           b"X-API-Key: k-bad\r\nConnection: Upgrade\r\n"
                           b"Upgrade: websocket\r\n\r\n"):
            w.tunnel += [int(x) for x in re.findall(rb"HTTP/1\.1 (\d{3}) ", c.got)]


def picked_up_in_a_body(w, key):
    """sluice made to forget a connection whose request body the backend
    is still reading: a body segment the backend drops (a wrong MAC)
    moves sluice on, and an RST at sluice's next sequence ends sluice's
    flow while the backend, for which it is in its window but not at its
    next sequence, keeps the connection. Then, where the backend stands
    in the body: what looks like a head with a long body, and where the
    backend's body ends, a head of its own."""
    for i, c in opened(w, 2):
        c.send(b"POST /o HTTP/1.1\r\nHost: api\r\nContent-Length: 1000\r\n\r\n")
        c.send(b"b" * 200)
        c.pump(0.2)
        seq = c.snd
        c.w.send(c.frame(b"b" * 100, seq=seq, dmac=LOST_MAC))
        c.w.send(c.frame(flags="R", seq=seq + 100, ack=0))
        fake = b"GET /o HTTP/1.1\r\nHost: api\r\nContent-Length: 5000\r\n\r\n"
        bad = head("/v1/search", key if i % 2 else "k-bad")
        data = fake + b"f" * (800 - len(fake)) + bad
        for _ in range(6):  # picked up: the first copies ask the server
            c.send(data, seq=seq)
            c.pump(0.3, until=lambda c: c.closed)
            if c.closed:
                break
        c.snd = seq + len(data)
        c.pump(0.5, until=answered)


def urgent(w, key):
    for i, c in opened(w, 5):
        h = head("/v1/Xsearch", key if i % 2 else "k-bad")
        c.send(h, flags="PAU", urgptr=9)  # the X: Linux takes it out
        c.pump(0.5, until=answered)


def vlan3(w, key):
    for _, c in opened(w, 3):
        l2 = Ether(src=w.smac, dst=w.dmac) / Dot1Q(vlan=0) / Dot1Q(vlan=0) / Dot1Q(vlan=0)
        c.send(head("/v1/x", "k-bad"), l2=l2)
        c.pump(0.5)


def frag6(w, key):
    for _, c in opened(w, 3, v6=True):
        l3 = IPv6(src=c.src, dst=c.dst) / IPv6ExtHdrFragment(m=0, offset=0, id=7) / \
            IPv6ExtHdrDestOpt()
        c.send(head("/v1/x", "k-bad"), l3=l3)
        c.pump(0.5)


def syn_data(w, key):
    """A blocklisted head in the SYN: a backend with TCP Fast Open acts
    on it as the stream's first bytes, before any other is sent."""
    for i, c in opened(w, 5, syn_payload=head("/v1/search", "k-bad", pad=1300)):
        c.send(head("/v1/search", key if i % 2 else "k-bad"))
        c.pump(0.5, until=answered)


def upgrade(w, key):
    """nginx does not upgrade: what follows is still HTTP, still read."""
    c = Conn(w)
    if not c.connect():
        return
    up = b"GET /ws HTTP/1.1\r\nHost: api\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n"
    c.send(up + head("/v1/x", "k-bad"))  # pipelined behind it: held
    c.pump(1.0)
    for _ in range(3):
        if c.closed:
            break
        c.send(head("/v1/x", "k-bad"))
        c.pump(0.5)


def _fold(s):
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff


def flood(w, n):
    """n spoofed flows, each one frame, sent as fast as the socket takes
    them: half SYNs, half handshake-less incomplete heads ('GET ...'),
    built once and patched per flow (addresses, port, checksums)."""
    tmpls = [bytearray(bytes(Ether(src=w.smac, dst=w.dmac) / IP(src="198.18.2.1", dst=S4) /
                             TCP(sport=1, dport=PORT, flags=fl, seq=1, ack=ack) / pl))
             for fl, ack, pl in (("S", 0, b""), ("PA", 1, b"GET / HTTP/1.1\r\nHost: x\r\n"))]
    sent = 0
    for i in range(n):
        t = tmpls[i % 2]
        t[28] = 2 + (i >> 16) % 60
        t[29] = (i >> 8) & 0xff
        t[33] = 1 + i % 250
        t[34:36] = struct.pack("!H", 1024 + (i * 7) % 60000)
        t[24:26] = b"\0\0"
        t[24:26] = struct.pack("!H", _fold(sum(struct.unpack("!10H", t[14:34]))))
        tl = len(t) - 34
        t[50:52] = b"\0\0"
        body = bytes(t[34:]) + (b"\0" if tl % 2 else b"")
        ps = sum(struct.unpack("!4H", t[26:34])) + 6 + tl
        t[50:52] = struct.pack("!H", _fold(ps + sum(struct.unpack("!%dH" % (len(body) // 2),
                                                                   body))))
        while True:
            try:
                w.s.send(bytes(t))
                sent += 1
                break
            except (BlockingIOError, OSError):
                time.sleep(0.001)
    return sent


# ---- legitimate twins: the kernel's own TCP ---------------------------

def _statuses(sock, want, timeout=5.0):
    sock.settimeout(0.2)
    data, end = b"", time.time() + timeout
    while time.time() < end and data.count(b"HTTP/1.1 ") < want:
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            continue
        if not chunk:
            break
        data += chunk
    return [int(x) for x in re.findall(rb"HTTP/1\.1 (\d{3}) ", data)]


def _sock(port=PORT):
    s = socket.create_connection((S4, port), timeout=5)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def legit_pipelined():
    """Allowed then blocked in one segment: the allowed one's answer first."""
    s = _sock()
    s.sendall(head("/a", "k-fine") + head("/v1/x", "k-bad"))
    return _statuses(s, 2, 8)


def legit_slow():
    """An honest client under head_timeout: a head in three parts, 1 s apart."""
    s = _sock()
    h = head("/slow", "k-slow", pad=2900)
    for part in (h[:1000], h[1000:2000], h[2000:]):
        s.sendall(part)
        time.sleep(1.0)
    return _statuses(s, 1)


def legit_evict(w, n):
    """A keep-alive client across a flood of n spoofed flows: its next
    head, sent split, is still read (the limit still binds it)."""
    s = _sock()
    s.sendall(head("/v1/search", "k-evict"))
    first = _statuses(s, 1)
    sent = flood(w, n)
    h = head("/v1/search", "k-evict")
    s.sendall(h[:1])
    time.sleep(0.2)
    s.sendall(h[1:])
    return first + _statuses(s, 1), sent


def legit_big_after_flood(w, n):
    """Head buffers: after n spoofed incomplete heads, a 3000-byte head in
    three segments still gets its answer."""
    sent = flood(w, n)
    return legit_slow_fast(), sent


def legit_slow_fast():
    s = _sock()
    h = head("/big", "k-big", pad=2900)
    for part in (h[:1000], h[1000:2000], h[2000:]):
        s.sendall(part)
        time.sleep(0.05)
    return _statuses(s, 1)


def legit_upgrade():
    """A server that does switch: after its 101 the bytes pass as they are."""
    s = _sock(8082)
    s.sendall(b"GET /ws HTTP/1.1\r\nHost: api\r\nConnection: Upgrade\r\n"
              b"Upgrade: websocket\r\n\r\n")
    st = _statuses(s, 1)
    time.sleep(0.2)
    s.sendall(head("/v1/x", "k-bad"))
    s.settimeout(3)
    echo = b""
    try:
        while b"k-bad" not in echo:
            c = s.recv(4096)
            if not c:
                break
            echo += c
    except socket.timeout:
        pass
    return st, b"X-API-Key: k-bad" in echo


def legit_rst_close():
    """An abortive close (RST at the exact sequence) ends the flow."""
    s = _sock()
    s.sendall(head("/rst", "k-fine"))
    st = _statuses(s, 1)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()
    return st


CASES = {"rst": forged_rst, "syn": forged_syn, "urg": urgent, "vlan3": vlan3,
         "frag6": frag6, "syndata": syn_data, "upgrade": upgrade, "reopen": reopened,
         "reopen-tunnel": reopened_tunnel, "pickup-body": picked_up_in_a_body}
for _how in ("noack", "mac", "md5", "ackbeyond", "paws", "lsrr"):
    CASES["drop-" + _how] = (lambda h: lambda w, k: first_copy_dropped(w, k, h))(_how)


def main():
    case, smac, dmac = sys.argv[1:4]
    w = Wire(smac, dmac)
    out = {"case": case}
    if case == "legit-pipelined":
        out["statuses"] = legit_pipelined()
    elif case == "legit-slow":
        out["statuses"] = legit_slow()
    elif case.startswith("legit-evict:"):
        out["statuses"], out["sent"] = legit_evict(w, int(case.split(":")[1]))
    elif case.startswith("legit-heads:"):
        out["statuses"], out["sent"] = legit_big_after_flood(w, int(case.split(":")[1]))
    elif case == "legit-upgrade":
        out["statuses"], out["echoed"] = legit_upgrade()
    elif case == "legit-rst":
        out["statuses"] = legit_rst_close()
    else:  # attacks, one after another: "rst,syn,..."
        for c in case.split(","):
            CASES[c](w, "k-" + c)
        out["tunnel"] = w.tunnel
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
