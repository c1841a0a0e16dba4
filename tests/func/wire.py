"""A wire on both sides of sluice, played by the test: raw frames in, raw
frames out, one step at a time, so that a TCP conversation (client and
server) can be scripted to the byte and what sluice forwards, drops or
builds compared exactly.

  [ns P-x] c0 ── P-c1 (port 0)  sluice  (port 1) P-s1 ── s0 [ns P-x]

The namespace holds both test ends with no address and IPv6 off: its
kernel answers nothing, so every frame on the wire is the test's or
sluice's.
"""

import ctypes
import os
import select
import socket
import struct
import subprocess
import time

from scapy.all import IP, TCP, Ether, Dot1Q, IPv6, Raw

import pktcheck

CM, SM = "02:00:00:00:00:01", "02:00:00:00:00:02"
C4, S4 = "198.18.0.1", "198.18.0.2"
C6, S6 = "2001:2::1", "2001:2::2"

CLONE_NEWNET = 0x40000000
ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
SOL_PACKET = 263
PACKET_AUXDATA = 8
TP_STATUS_VLAN_VALID = 0x10
TP_STATUS_VLAN_TPID_VALID = 0x40
SO_RCVBUFFORCE = 33
# SL_DRAIN_US, with room for the clocks' skew: how long a TX buffer waits
DRAIN_S = 0.0005
# attached, how long a step waits past sluice's counters that do not
# agree with the wire (a frame the kernel dropped): the old quiet wire
QUIET_UNSETTLED = 0.5
_libc = ctypes.CDLL(None, use_errno=True)


def _sh(*cmd):
    subprocess.run(cmd, check=True, capture_output=True)


def _in_ns(ns, fn):
    """fn() with this thread in network namespace ns; back after."""
    with open("/proc/self/ns/net") as me, open("/var/run/netns/" + ns) as there:
        if _libc.setns(there.fileno(), CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), "setns " + ns)
        try:
            return fn()
        finally:
            _libc.setns(me.fileno(), CLONE_NEWNET)


class Wire:
    def __init__(self, prefix):
        self.p = prefix
        self.ns = prefix + "-x"
        self.socks = {}
        # frames put on the wire by the test, and read off it (sluice's
        # and the hosts' alike): what attach() compares sluice's own
        # counters against
        self.sent = self.got = 0
        self.counts = None

    def __enter__(self):
        self.down()
        try:
            _sh("ip", "netns", "add", self.ns)
            for side in ("c", "s"):
                _sh("ip", "link", "add", "%s-%s1" % (self.p, side), "type", "veth",
                    "peer", "name", side + "0", "netns", self.ns)
                _sh("sysctl", "-qw", "net.ipv6.conf.%s-%s1.disable_ipv6=1" % (self.p, side))
                _sh("ip", "netns", "exec", self.ns, "sysctl", "-qw",
                    "net.ipv6.conf.%s0.disable_ipv6=1" % side)
                for ns, dev in ((None, "%s-%s1" % (self.p, side)), (self.ns, side + "0")):
                    run = ["ip", "netns", "exec", ns] if ns else []
                    subprocess.run(run + ["ethtool", "-K", dev, "tx", "off", "rx", "off",
                                          "tso", "off", "gso", "off", "gro", "off"],
                                   capture_output=True)
                    _sh(*(run + ["ip", "link", "set", dev, "up"]))
            for side in ("c", "s"):
                def mk(dev=side + "0"):
                    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
                    s.bind((dev, 0))
                    # the kernel takes VLAN tags off into metadata: ask
                    # for it, so frames are read as they were on the wire
                    s.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
                    # room for a batch of hundreds of frames unread
                    s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 32 << 20)
                    s.setblocking(False)
                    return s
                self.socks[side] = _in_ns(self.ns, mk)
        except BaseException:
            self.down()
            raise
        return self

    def __exit__(self, *exc):
        self.down()

    def down(self):
        for s in self.socks.values():
            s.close()
        self.socks = {}
        for side in ("c", "s"):
            subprocess.run(["ip", "link", "del", "%s-%s1" % (self.p, side)], capture_output=True)
        subprocess.run(["ip", "netns", "del", self.ns], capture_output=True)

    def vdevs(self):
        return ["net_af_packet0,iface=%s-c1" % self.p, "net_af_packet1,iface=%s-s1" % self.p]

    def send(self, side, frame):
        self.socks[side].send(bytes(frame))
        self.sent += 1

    def drain(self):
        for side in ("c", "s"):
            while self._read(side) is not None:
                pass

    def attach(self, counts):
        """counts() -> (rx, tx, loop age in us) of the sluice between the
        ends, over its workers. From here a step ends once sluice has read
        every frame sent, every frame it sent has arrived, and each worker
        has begun a loop since (its TX buffers drained), instead of after
        a quiet wire: what a quiet tenth of a second only made likely, the
        counters say, in milliseconds."""
        self.drain()
        rx, tx, _ = counts()
        self.counts = counts
        self.base = (rx - self.sent, tx - self.got)

    def _snapshot(self):
        t0 = time.monotonic()
        rx, tx, age = self.counts()
        return rx, tx, t0 - age / 1e6, time.monotonic()

    def _settled(self, prev, cur):
        """Nothing in sluice for the wire: every frame read and answered
        (cur taken after prev, with the same counters), and a loop that
        began after prev was read, a drain interval later."""
        rx, tx, loop_began, _ = cur
        return (prev is not None and prev[:2] == (rx, tx)
                and rx - self.base[0] >= self.sent and tx - self.base[1] == self.got
                and loop_began > prev[3] + DRAIN_S)

    def _read(self, side):
        try:
            data, anc, _, addr = self.socks[side].recvmsg(65535, 256)
        except BlockingIOError:
            return None
        if addr[2] == PACKET_OUTGOING:
            return b""  # ours, seen leaving
        self.got += 1
        for level, typ, aux in anc:
            if level != SOL_PACKET or typ != PACKET_AUXDATA or len(aux) < 20:
                continue
            status, = struct.unpack_from("I", aux, 0)
            tci, tpid = struct.unpack_from("HH", aux, 16)
            if status & TP_STATUS_VLAN_VALID:
                if not status & TP_STATUS_VLAN_TPID_VALID:
                    tpid = 0x8100
                data = data[:12] + struct.pack("!HH", tpid, tci) + data[12:]
        return data

    def collect(self, want=0, quiet=None, limit=3.0):
        """Frames that came out at c and s: until at least want arrived
        and then sluice settled (attach), or quiet seconds passed with
        none (0.25 by default without attach), or limit seconds."""
        out = {"c": [], "s": []}
        end = time.time() + limit
        last = time.time()
        settle = quiet is None and self.counts is not None
        if quiet is None:
            quiet = QUIET_UNSETTLED if settle else 0.25
        prev = None
        while time.time() < end:
            n = len(out["c"]) + len(out["s"])
            if n >= want and settle:
                cur = self._snapshot()
                if self._settled(prev, cur):
                    self._read_into(out, 0)
                    break
                prev = cur
            if n >= want and time.time() - last >= quiet:
                break
            if self._read_into(out, 0.005 if settle else 0.05):
                last = time.time()
        return out["c"], out["s"]

    def _read_into(self, out, wait):
        """Frames ready within wait seconds, appended by side; any read."""
        got = False
        r, _, _ = select.select([self.socks["c"], self.socks["s"]], [], [], wait)
        for sock in r:
            side = "c" if sock is self.socks["c"] else "s"
            while True:
                f = self._read(side)
                if f is None:
                    break
                if f and not _chatter(f):
                    out[side].append(f)
                    got = True
        return got

    def step(self, side, frame, want=1, quiet=None):
        """Sends frame at side; returns (frames out at c, frames out at s).
        Waits for want frames, then for sluice to settle (attach), or
        without it for quiet seconds without another (a drop, want 0, is
        then only seen as a quiet wire: it waits longer)."""
        self.send(side, frame)
        if quiet is None and self.counts is None:
            quiet = 0.1 if want else 0.3
        return self.collect(want=want, quiet=quiet)

    def batch(self, side, frames, want, limit=20.0):
        """Many frames, 32 at a time (what one burst reads), with what came
        out read between; returns all of it, once sluice settled (attach)
        or the wire was quiet for 0.3 s."""
        oc, os_ = [], []
        for i in range(0, len(frames), 32):
            for f in frames[i:i + 32]:
                self.send(side, f)
            a, b = self.collect(want=0, quiet=0.02, limit=0.5)
            oc += a
            os_ += b
        a, b = self.collect(want=max(0, want - len(oc) - len(os_)),
                            quiet=None if self.counts is not None else 0.3, limit=limit)
        return oc + a, os_ + b

    # ---- checks on one step, for sltest.Results ----

    def fwd(self, res, side, frame, what):
        """Forwarded unchanged to the other side, and nothing else."""
        oc, os_ = self.step(side, frame)
        other, same = (os_, oc) if side == "c" else (oc, os_)
        ok = res.eq([x.hex() for x in other], [bytes(frame).hex()],
                    what + ": forwarded unchanged")
        ok &= res.eq([x.hex() for x in same], [], what + ": nothing back")
        return ok

    def dropped(self, res, frame, what, side="c"):
        oc, os_ = self.step(side, frame, want=0)
        return res.eq([x.hex() for x in oc + os_], [], what + ": dropped")

    def answered(self, res, frame, status, rst_seq, what, body=None):
        """Answered by sluice: one reply to the client, one RST to the
        backend at rst_seq. Returns the reply's (headers, body, frame)."""
        oc, os_ = self.step("c", frame, want=2)
        if not res.eq((len(oc), len(os_)), (1, 1), what + ": one reply, one RST"):
            return None
        req_pkt = Ether(bytes(frame))
        hdrs, b = pktcheck.check_answer(res, oc[0], req_pkt, status, what)
        if body is not None:
            res.eq(b, body, what + ": body")
        if rst_seq is not None:
            res.eq(os_[0].hex(), pktcheck.expected_rst(req_pkt, rst_seq).hex(),
                   what + ": RST to the backend at the stream's place")
        return hdrs, b, oc[0]

    def handshake(self, conn, res, syn_payload=b""):
        syn = conn.c(syn_payload, flags="S", seq=conn.cisn, ack=0)
        if syn_payload:
            # it goes on without its payload: a backend with TCP Fast
            # Open would act on it before anything is decided
            oc, os_ = self.step("c", syn)
            res.eq(([x.hex() for x in os_], oc),
                   ([bytes(conn.c(flags="S", seq=conn.cisn, ack=0)).hex()], []),
                   "%d: SYN, forwarded without its payload" % conn.sport)
        else:
            self.fwd(res, "c", syn, "%d: SYN" % conn.sport)
        self.fwd(res, "s", conn.s(flags="SA", seq=conn.sisn, ack=conn.cisn + 1),
                 "%d: SYN-ACK" % conn.sport)
        self.fwd(res, "c", conn.c(flags="A"), "%d: ACK" % conn.sport)

    def server_ack(self, conn, res, n=0, what="server ACK"):
        """The server acknowledges all it got (and sends n bytes)."""
        p = conn.s(b"r" * n, flags="PA" if n else "A")
        conn.sseq += n
        self.fwd(res, "s", p, "%d: %s" % (conn.sport, what))


class LoopbackBusy:
    """The host's loopback busy (ping -f, bounded in count and time) while
    sluice starts: net_af_packet's sockets read every interface of the
    host until they are bound, and nothing of that may reach the wire."""

    def __enter__(self, seconds=5):
        # two, for a rate that fills the few milliseconds before the bind
        self.p = [subprocess.Popen(["ping", "-f", "-q", "-c", "200000", "-w", str(seconds),
                                    "127.0.0.1"], stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL) for _ in range(2)]
        time.sleep(0.2)
        return self

    def stop(self):
        for p in self.p:
            p.kill()
            p.wait()

    def __exit__(self, *exc):
        self.stop()


def _chatter(f):
    """The hosts' own frames on the veths (IPv6 MLD and ND, LLDP): to a
    group address and not TCP. A test's frames are TCP, or unicast."""
    if not f[0] & 1 or len(f) < 24:
        return False
    et = f[12] << 8 | f[13]
    if et == 0x0800:
        return f[23] != 6
    if et == 0x86DD:
        return f[20] != 6
    return True


def netns_prefix():
    return "w%d" % (os.getpid() % 10000)


def req(path, *headers, body=b"", method="GET"):
    h = "".join("%s\r\n" % x for x in headers)
    return ("%s %s HTTP/1.1\r\nHost: api\r\n%s\r\n" % (method, path, h)).encode() + body


class Conn:
    """One TCP connection whose both ends the test plays: frames for
    either side at the sequence numbers each has reached."""

    def __init__(self, sport, dport=80, v6=False, vlan=None, ts=False, csrc=None):
        self.sport, self.dport, self.v6, self.vlan = sport, dport, v6, vlan
        self.cisn, self.sisn = 1000 + sport * 7, 5000 + sport * 3
        self.cseq, self.sseq = self.cisn + 1, self.sisn + 1
        self.ts = 100 if ts else None
        self.csrc = csrc

    def _l3(self, client, dst_mac=None):
        l2 = Ether(src=CM, dst=dst_mac or SM) if client else Ether(src=SM, dst=CM)
        if self.vlan is not None:
            l2 = l2 / Dot1Q(vlan=self.vlan)
        a, b = (C6, S6) if self.v6 else (C4, S4)
        if self.csrc:
            a = self.csrc
        if not client:
            a, b = b, a
        return l2 / (IPv6(src=a, dst=b) if self.v6 else IP(src=a, dst=b))

    def c(self, payload=b"", flags="PA", seq=None, ack=None, dst_mac=None, options=None,
          l3=None, **kw):
        if options is None:
            options = [("Timestamp", (self.ts, 0))] if self.ts else []
        base = l3 if l3 is not None else self._l3(True, dst_mac)
        p = base / TCP(sport=self.sport, dport=self.dport, flags=flags,
                       seq=self.cseq if seq is None else seq,
                       ack=self.sseq if ack is None else ack, options=options, **kw)
        return p / Raw(payload) if payload else p

    def s(self, payload=b"", flags="PA", seq=None, ack=None, options=None):
        if options is None:
            options = [("Timestamp", (9, self.ts))] if self.ts else []
        p = self._l3(False) / TCP(sport=self.dport, dport=self.sport, flags=flags,
                                  seq=self.sseq if seq is None else seq,
                                  ack=self.cseq if ack is None else ack, options=options)
        return p / Raw(payload) if payload else p

    def syn(self):
        return self.c(flags="S", seq=self.cisn, ack=0)

    def synack(self):
        return self.s(flags="SA", seq=self.sisn, ack=self.cisn + 1)

    def ack(self):
        return self.c(flags="A")

    def data(self, payload, **kw):
        """A client data segment at the next sequence; advances it."""
        if self.ts:
            self.ts += 1
        p = self.c(payload, **kw)
        self.cseq += len(payload)
        return p

    def fin(self):
        p = self.c(flags="FA")
        self.cseq += 1
        return p
