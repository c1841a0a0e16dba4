"""Field-by-field checks of the frames sluice builds (replies, RSTs, ACKs)."""

from scapy.all import IP, TCP, Dot1Q, Ether, IPv6


def l3(p):
    return p[IPv6] if IPv6 in p else p[IP]


def cksums_ok(frame):
    """Rebuilds the frame with checksums recomputed: same bytes if right."""
    p = Ether(frame)
    q = p.copy()
    del q[TCP].chksum
    if IP in q:
        del q[IP].chksum
    return bytes(q) == frame


def http_reply(frame):
    """(status, {header: value}, body, raw text) of a reply frame."""
    raw = bytes(Ether(frame)[TCP].payload)
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    status = int(lines[0].split(" ")[1])
    hdrs = {}
    for line in lines[1:]:
        k, _, v = line.partition(": ")
        hdrs[k] = v
    return status, hdrs, body, raw


def check_answer(res, frame, req, status, what):
    """A reply built from the client's segment req: addressing, sequence
    numbers, flags, checksums; returns (headers, body)."""
    p = Ether(frame)
    rq = req
    ok = True
    ok &= res.eq(p.src, rq.dst, what + ": source MAC is the server's")
    ok &= res.eq(p.dst, rq.src, what + ": destination MAC is the client's")
    if Dot1Q in rq:
        ok &= res.eq(p[Dot1Q].vlan if Dot1Q in p else None, rq[Dot1Q].vlan,
                     what + ": VLAN tag kept")
    ok &= res.eq((l3(p).src, l3(p).dst), (l3(rq).dst, l3(rq).src), what + ": addresses swapped")
    ok &= res.eq((p[TCP].sport, p[TCP].dport), (rq[TCP].dport, rq[TCP].sport),
                 what + ": ports swapped")
    ok &= res.eq(p[TCP].seq, rq[TCP].ack, what + ": seq = the request's ack")
    ok &= res.eq(p[TCP].ack, rq[TCP].seq + len(rq[TCP].payload),
                 what + ": ack = the request's seq + payload")
    ok &= res.eq(str(p[TCP].flags), "FPA", what + ": flags FIN PSH ACK")
    ok &= res.check(cksums_ok(frame), what + ": IP and TCP checksums")
    st, hdrs, body, raw = http_reply(frame)
    ok &= res.eq(st, status, what + ": status")
    ok &= res.eq(hdrs.get("Connection"), "close", what + ": Connection: close")
    ok &= res.eq(int(hdrs.get("Content-Length", -1)), len(body), what + ": Content-Length")
    ok &= res.eq(hdrs.get("Content-Type"), "application/json", what + ": Content-Type")
    if not ok:
        print("  reply was:\n  " + raw.decode(errors="replace").replace("\r\n", "\n  "))
    return hdrs, body


def expected_rst(req, seq):
    """The RST sluice sends the backend for the client's segment req."""
    l2 = Ether(src=req.src, dst=req.dst)
    if Dot1Q in req:
        l2 = l2 / Dot1Q(vlan=req[Dot1Q].vlan, prio=req[Dot1Q].prio)
    if IPv6 in req:
        ip = IPv6(src=req[IPv6].src, dst=req[IPv6].dst, hlim=64)
    else:
        ip = IP(src=req[IP].src, dst=req[IP].dst, ttl=64, id=0, flags="DF")
    return bytes(l2 / ip / TCP(sport=req[TCP].sport, dport=req[TCP].dport, seq=seq,
                               ack=req[TCP].ack, flags="RA", window=1024))


def split_out0(out0, up_frames):
    """Frames sluice forwarded from the server side, and the ones it built."""
    want = [bytes(x) for x in up_frames]
    fwd, built = [], []
    for f in out0:
        (fwd if f in want else built).append(f)
    return fwd, built


def same_frames(res, got, want, what):
    """Byte-for-byte equality of two frame lists, showing the first difference."""
    res.eq(len(got), len(want), what + ": frame count")
    ok = res.check(got == want, what + ": byte for byte, in order")
    for i, (a, b) in enumerate(zip(got, want)):
        if a != b:
            print("  first difference at frame %d:\n  got  %s\n  want %s" % (i, a.hex(), b.hex()))
            break
    return ok


def conn_of(frame):
    """The connection a frame belongs to (both directions alike), or None."""
    p = Ether(frame)
    if TCP not in p or (IP not in p and IPv6 not in p):
        return None
    a = (l3(p).src, p[TCP].sport)
    b = (l3(p).dst, p[TCP].dport)
    return tuple(sorted([a, b]))


def by_conn(frames):
    groups = {}
    for f in frames:
        groups.setdefault(conn_of(f), []).append(f)
    return groups


def same_frames_per_conn(res, got, want, what):
    """Frames of one connection keep their order; a request that waited
    for the coordinator may let other connections' frames pass it."""
    res.eq(len(got), len(want), what + ": frame count")
    g, w = by_conn(got), by_conn(want)
    ok = res.check(g == w, what + ": byte for byte, in order within each connection")
    if not ok:
        for k in w:
            if g.get(k) != w[k]:
                print("  first connection that differs: %s" % (k,))
                for a, b in zip(g.get(k, []), w[k]):
                    if a != b:
                        print("  got  %s\n  want %s" % (a.hex(), b.hex()))
                        break
                break
    return ok
