#!/usr/bin/python3
"""Packet capture on a running appliance: dpdk-dumpcap attaches
to sluice as a DPDK secondary process and records what its client-side
port received and sent, while curl runs through it.

- `dpdk-dumpcap -D` lists sluice's two ports;
- a capture on port 0 holds every request head exactly as the client
  sent it (three distinct paths, the API key) and sluice's own 429 for
  the request over the limit, read back with scapy;
- dumpcap's count of packets equals what the pcapng holds, and sluice
  stops cleanly afterwards (its pdump callbacks gone with the capture).

A secondary process can only attach to shared memory, which --no-huge
memory is not: this one test runs sluice on hugepages. It reserves them
itself (nr_hugepages raised by what it needs, a private hugetlbfs
mount), and gives them back whatever happens. Where the kernel will not
give them (a container without the right), it says so and exits 77,
which meson counts as skipped, not passed.

usage: test_capture.py PATH/TO/sluice
"""

import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sltest  # noqa: E402

from scapy.all import TCP, Raw, rdpcap  # noqa: E402

S4 = "198.18.0.2"
PAGES = 192  # 2 MiB each: sluice's -m 256 and dumpcap's ring and pool
NR = "/proc/sys/vm/nr_hugepages"
CONF = """version: 1
dataplane: {service_ports: [80], flows_per_worker: 1024, buckets_per_worker: 1024,
            head_buffers_per_worker: 64, idle_sleep_us: 200, mbufs: 4095}
identity: {api_key_header: X-API-Key}
tiers: [free]
rules:
  - {name: cap-two, scope: key, match: {path_prefix: /v1/cap}, limit: 2/min, burst: 2}
response: {retry_jitter: 0}
"""


def free_pages():
    for line in open("/proc/meminfo"):
        if line.startswith("HugePages_Free:"):
            return int(line.split()[1])
    return 0


class Hugepages:
    """PAGES more 2 MiB pages and a private hugetlbfs mount, for the
    duration; everything as it was afterwards."""

    def __init__(self, tmp):
        self.dir = os.path.join(tmp, "huge")
        self.before = None
        self.mounted = False

    def __enter__(self):
        os.makedirs(self.dir)
        self.before = int(open(NR).read())
        free0 = free_pages()
        try:
            with open(NR, "w") as f:
                f.write(str(self.before + PAGES))
        except OSError as e:
            self.reason = "nr_hugepages not writable (%s)" % e
            return self
        got = free_pages() - free0
        if got < PAGES:
            self.reason = "the kernel gave %d of %d hugepages" % (got, PAGES)
            return self
        r = subprocess.run(["mount", "-t", "hugetlbfs", "-o", "pagesize=2M", "nodev",
                            self.dir], capture_output=True, text=True)
        self.mounted = r.returncode == 0
        self.reason = None if self.mounted else "hugetlbfs mount failed: %s" % r.stderr.strip()
        return self

    def __exit__(self, *exc):
        if self.mounted:
            subprocess.run(["umount", self.dir])
        if self.before is not None:
            try:
                with open(NR, "w") as f:
                    f.write(str(self.before))
            except OSError:
                pass


def mapped_below(pid, huge_dir, base):
    """Hugepage mappings of pid below base (none when --base-virtaddr
    held: under ASan the memory otherwise lands among the libraries,
    where a secondary's own may collide with it)."""
    low = []
    for line in open("/proc/%d/maps" % pid):
        if huge_dir in line and int(line.split("-")[0], 16) < base:
            low.append(line.split()[0])
    return low


def heads(pkts):
    """TCP payloads to port 80 (requests) and from it (answers)."""
    req = [bytes(p[Raw].load) for p in pkts
           if TCP in p and Raw in p and p[TCP].dport == 80]
    ans = [bytes(p[Raw].load) for p in pkts
           if TCP in p and Raw in p and p[TCP].sport == 80]
    return req, ans


def main():
    binary = sys.argv[1]
    res = sltest.Results("capture")
    with tempfile.TemporaryDirectory() as tmp:
        with Hugepages(tmp) as hp:
            if hp.reason:
                print("SKIP: packet capture needs hugepages here: %s" % hp.reason)
                return 77
            conf = os.path.join(tmp, "sluice.yaml")
            with open(conf, "w") as f:
                f.write(CONF)
            with sltest.Topology(binary, conf, tmp, prefix="cp%d" % (os.getpid() % 1000),
                                 huge_dir=hp.dir) as t:
                fp = "--file-prefix=" + t.sluice.prefix
                low = mapped_below(t.sluice.proc.pid, hp.dir, sltest.BASE_VIRTADDR)
                res.check(low == [], "sluice's shared memory lies at --base-virtaddr, clear "
                          "of where dumpcap's libraries may land (%s)" % (low[:2] or "all above"))
                ls = subprocess.run(["dpdk-dumpcap", fp, "-D"], capture_output=True,
                                    text=True, timeout=60)
                res.check(ls.returncode == 0 and "net_af_packet0" in ls.stdout and
                          "net_af_packet1" in ls.stdout,
                          "dpdk-dumpcap -D lists sluice's ports (%s)" % (
                              ls.stdout.strip().replace("\n", "; ") or ls.stderr.strip()[-200:]))
                out = os.path.join(tmp, "client.pcapng")
                cap = subprocess.Popen(["dpdk-dumpcap", fp, "-i", "0", "-w", out,
                                        "-a", "duration:6"],
                                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                       text=True)
                # dumpcap is capturing once it says so (its callbacks are
                # in the primary by then)
                deadline = time.time() + 20
                while time.time() < deadline and cap.poll() is None:
                    if os.path.exists(out) and os.path.getsize(out) > 0:
                        break
                    time.sleep(0.1)
                time.sleep(0.5)
                codes = [t.curl("-H", "X-API-Key: k-cap", "http://%s/v1/cap/%d" % (S4, i))[0]
                         for i in range(3)]
                try:
                    said = cap.communicate(timeout=60)[0]
                except subprocess.TimeoutExpired:
                    # a stuck capture is a failure to report, not a
                    # traceback that leaves the rest unchecked
                    cap.kill()
                    said = cap.communicate()[0] + "\n(killed after 60 s)"
                res.eq(codes, [200, 200, 429], "three requests through the capture, the "
                       "third over the limit")
                res.eq(cap.returncode, 0, "dumpcap ran and stopped on its own (%s)" %
                       said.strip().splitlines()[-1:] if said.strip() else "")
                pkts = rdpcap(out) if os.path.exists(out) else []
                req, ans = heads(pkts)
                for i in range(3):
                    want = ("GET /v1/cap/%d HTTP/1.1\r\n" % i).encode()
                    got = [r for r in req if r.startswith(want)]
                    res.check(len(got) == 1 and b"\r\nX-API-Key: k-cap\r\n" in got[0],
                              "the capture holds request %d as the client sent it (%s)" % (
                                  i, got[0][:60] if got else "missing"))
                res.check(any(a.startswith(b"HTTP/1.1 429 ") and b"cap-two" in a for a in ans),
                          "the capture holds sluice's own 429, naming the rule (%d answers)" %
                          len(ans))
                m = [ln for ln in said.splitlines() if ln.startswith("Packets received/dropped")]
                n = int(m[0].split(":")[1].split("/")[0]) if m else -1
                res.eq(n, len(pkts), "dumpcap's count is what the file holds (%s)" % (
                    m[0] if m else said.strip()[-200:]))
                res.eq(t.sluice.stop(), 0, "sluice stops cleanly after the capture")
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
