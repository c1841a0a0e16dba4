"""Helpers shared by the packet and end-to-end tests: start sluice, read
its telemetry, stop it, and clean up whatever happens."""

import contextlib
import json
import os
import random
import signal
import socket
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import sltelemetry  # noqa: E402


def record(kind, **fields):
    """Appends one measured run, as a JSON line, to $SLUICE_RESULTS (if
    set): scripts/charts.py draws BENCHMARKS.md's charts from such
    files. Tests print their figures either way."""
    path = os.environ.get("SLUICE_RESULTS")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(dict(kind=kind, **fields)) + "\n")


def _terminated(signum, frame):
    # meson's timeout sends SIGTERM: unwind like an exception, so that
    # every `with` and `finally` still removes its namespaces, processes
    # and files
    raise SystemExit(128 + signum)


signal.signal(signal.SIGTERM, _terminated)


def free_port():
    """A TCP port on 127.0.0.1 nobody listens on now."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def start_redis(port, tmp, *extra):
    """A redis-server on 127.0.0.1:port, nothing persisted, answering PING."""
    r = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                          "--save", "", "--appendonly", "no", "--dir", tmp] + list(extra),
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        if subprocess.run(["redis-cli", "-p", str(port), "ping"],
                          capture_output=True, text=True).stdout.strip() == "PONG":
            return r
        time.sleep(0.05)
    r.kill()
    raise RuntimeError("redis-server did not start on port %d" % port)


@contextlib.contextmanager
def redis_server(port, tmp, *extra):
    """start_redis's server for a with-block: gone when it ends, however."""
    r = start_redis(port, tmp, *extra)
    try:
        yield r
    finally:
        if r.poll() is None:
            r.kill()
        r.wait()


def cluster_port():
    """A port on 127.0.0.1 whose cluster bus port (+10000) is free too."""
    while True:
        p = random.randrange(20000, 40000)
        ok = True
        for q in (p, p + 10000):
            s = socket.socket()
            try:
                s.bind(("127.0.0.1", q))
            except OSError:
                ok = False
            finally:
                s.close()
        if ok:
            return p


def start_cluster(tmp, masters=3, replicas=0, *extra):
    """A Redis Cluster on 127.0.0.1 of masters x (1 + replicas) nodes,
    each in its own directory under tmp, started and waited for: every
    node says cluster_state:ok and every replica's link to its master is
    up (a replica takes over only once it has synced). Returns (ports,
    {port: process}); on failure what was started is killed."""
    ports = []
    while len(ports) < masters * (1 + replicas):
        p = cluster_port()  # free now, and not drawn already
        if not {p, p + 10000, p - 10000} & set(ports):
            ports.append(p)
    procs = {}
    try:
        for p in ports:
            d = os.path.join(tmp, str(p))
            os.makedirs(d)
            procs[p] = start_redis(p, d, "--cluster-enabled", "yes",
                                   "--cluster-config-file", "nodes.conf", *extra)
        subprocess.run(["redis-cli", "--cluster", "create"] +
                       ["127.0.0.1:%d" % p for p in ports] +
                       ["--cluster-replicas", str(replicas), "--cluster-yes"],
                       capture_output=True, text=True, timeout=60, check=True)
        deadline = time.time() + 20
        while time.time() < deadline:
            synced = sum("master_link_status:up" in redis_cli(p, "info", "replication")
                         for p in ports)
            # and every node's view says so (gossip lags the replication)
            seen = [sum(" slave " in " %s " % " ".join(line.split()[2].split(","))
                        for line in redis_cli(p, "cluster", "nodes").splitlines()
                        if len(line.split()) > 2) for p in ports]
            if synced == masters * replicas and seen == [masters * replicas] * len(ports) and \
                    all("cluster_state:ok" in redis_cli(p, "cluster", "info") for p in ports):
                return ports, procs
            time.sleep(0.1)
        raise RuntimeError("the cluster on %s did not come up" % ports)
    except BaseException:
        stop_all(procs)
        raise


def stop_all(procs):
    """Kills the processes of {port: process} still running."""
    for p in procs.values():
        if p.poll() is None:
            p.kill()
            p.wait()


def redis_cli(port, *args):
    """One redis-cli command on 127.0.0.1:port, its output stripped ("" if
    it hangs past 10 s)."""
    try:
        return subprocess.run(["redis-cli", "-p", str(port)] + list(args),
                              capture_output=True, text=True, timeout=10).stdout.strip()
    except subprocess.TimeoutExpired:
        return ""


def telemetry(prefix, cmd, timeout=5.0):
    """One command on the DPDK telemetry socket, through the operators'
    own client (tools/sltelemetry.py): the tests read the appliance
    the way sluicectl and the exporter do."""
    for attempt in range(3):
        try:
            t = sltelemetry.Telemetry(prefix, timeout)
            break
        except TimeoutError:
            # DPDK's telemetry thread shares the main lcore's CPU; under
            # ASan on two loaded cores its greeting has once taken over 5 s
            print("telemetry: no greeting in %.0f s (attempt %d)" % (timeout, attempt + 1))
            if attempt == 2:
                raise
    try:
        return t(cmd)
    finally:
        t.close()


def check_leased_200(res, a, b, key, what, url="http://198.18.0.2/v1/bulk", n=(250, 50)):
    """Demand above a 200/min limit from the clients of two topologies at
    once, unevenly (n requests in turn from each, bounded: a coordinator
    that split the limit per appliance would admit about 100 + 50), and
    checks that every answer is a 200 or a 429, and that the admitted
    count is between (1 - accuracy 0.1) x 200 and the limit plus its
    refill over the run — with no allowance for answers decided without
    Redis: units admitted so are charged to it too (the node's ledger and
    what it owes), so they cannot add to the count. Prints the
    admitted/limit ratio. Returns (admitted, degraded)."""
    def degraded():
        return sum(telemetry(t.sluice.prefix, "/sluice/store")["store_degraded"]
                   for t in (a, b))
    d0 = degraded()
    t0 = time.time()
    # one curl per client, a connection per request (a new source port
    # each: spread over the workers by RSS), at most 60 a second: as one
    # client would after another, not all at once (units a lease holds
    # unspent at the very end are not a refusal this measures)
    procs = [subprocess.Popen(
        ["ip", "netns", "exec", t.cns, "curl", "-s", "--rate", "60/s", "--max-time", "5", "-w",
         "%{http_code}\n", "-H", "Connection: close", "-H", "X-API-Key: " + key]
        + [a for i in range(k) for a in ("-o", "/dev/null", "%s/%d" % (url, i))],
        stdout=subprocess.PIPE, text=True) for t, k in zip((a, b), n)]
    outs = [p.communicate(timeout=240)[0].split() for p in procs]
    secs = time.time() - t0
    deg = degraded() - d0
    codes = outs[0] + outs[1]
    admitted = codes.count("200")
    refill = int(200 * secs / 60) + 1
    res.eq(len(codes) - admitted - codes.count("429"), 0,
           "%s: every answer a 200 or a 429 (%d of %d)" % (what, len(codes), sum(n)))
    res.check(180 <= admitted <= 200 + refill,
              "%s, leased 200/min, demand %d + %d: %d admitted (%d + %d) in %.1f s "
              "(admitted/limit %.3f; bound 180..%d = limit + refill %d; %d asks decided "
              "without Redis)" % (
                  what, n[0], n[1], admitted, outs[0].count("200"), outs[1].count("200"),
                  secs, admitted / 200.0, 200 + refill, refill, deg))
    return admitted, deg


def check_two_by_two(res, a, b, key, what):
    """check_leased_200 for two appliances with two workers each (four
    lease holders): both workers of each decided some, answers degraded
    by a missed Redis timeout stay rare, and the workers napped while
    idle (the configs set idle_sleep_us: six polling threads would
    otherwise starve the kernel's own work on CI's two vCPUs)."""
    _, deg = check_leased_200(res, a, b, key, what)
    for t in (a, b):
        w = telemetry(t.sluice.prefix, "/sluice/workers")
        per = [v["allowed"] + v["rejected"] for v in w.values()]
        res.check(len(per) == 2 and min(per) > 0,
                  "%s: both workers decided some (%s)" % (t.prefix, per))
        res.check(min(v["idle_sleeps"] for v in w.values()) > 0,
                  "%s: idle workers napped (%s)" % (
                      t.prefix, [v["idle_sleeps"] for v in w.values()]))
    res.check(deg <= 5, "%s: at most a few answers degraded (%d)" % (what, deg))


# where sluice on hugepages puts its memory (see Sluice)
BASE_VIRTADDR = 0x200000000000


class Sluice:
    """A sluice process with a unique --file-prefix, stopped on exit."""

    def __init__(self, binary, config, vdevs, lcores="0,1", extra_eal=(),
                 log=None, huge_dir=None):
        self.prefix = "sl%d_%d" % (os.getpid(), int(time.time() * 1000) % 100000)
        # hugepages only where a test needs a secondary process to attach
        # (packet capture): --no-huge memory cannot be shared. The
        # secondary maps the primary's memory at the same addresses; under
        # ASan DPDK's default hint (4 GiB) lies in the shadow gap, the
        # memory lands among the libraries near 0x7f.., and dumpcap's own
        # randomly placed libraries collide with it now and then ("Cannot
        # init memory" in CI). 32 TiB is free in both processes.
        mem = ["--no-huge", "-m", "512"] if huge_dir is None else [
            "--huge-dir", huge_dir, "-m", "256", "--base-virtaddr", hex(BASE_VIRTADDR)]
        args = [binary] + mem + ["--no-pci",
                                 "--file-prefix", self.prefix, "--log-level", "lib.eal:warning"]
        if lcores.startswith("--lcores"):
            args += lcores.split(" ", 1)
        else:
            args += ["-l", lcores]
        for v in vdevs:
            args += ["--vdev", v]
        args += list(extra_eal) + ["--", "--config", config]
        self.log = log or open(os.devnull, "w")
        self.out = ""
        self._tel = None
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)

    def wait_ready(self, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("sluice exited early:\n" +
                                   self.proc.stdout.read())
            try:
                st = telemetry(self.prefix, "/sluice/stats")
                if st is not None:  # null until the commands are registered
                    return st
            except (OSError, ValueError, KeyError):
                pass
            time.sleep(0.2)
        raise RuntimeError("sluice telemetry never came up")

    def stats(self):
        return telemetry(self.prefix, "/sluice/stats")

    def counts(self):
        """(rx, tx, the oldest worker loop's age in us), on a connection
        kept open: wire.Wire.attach reads it after every frame."""
        if self._tel is None:
            self._tel = sltelemetry.Telemetry(self.prefix, 5.0)
        ws = self._tel("/sluice/workers").values()
        return (sum(w["rx"] for w in ws), sum(w["tx"] for w in ws),
                max(w.get("loop_age_us", 0) for w in ws))

    def _untel(self):
        if self._tel is not None:
            self._tel.close()
            self._tel = None

    def wait_for(self, pred, timeout=20):
        deadline = time.time() + timeout
        st = None
        while time.time() < deadline:
            st = self.stats()
            if pred(st):
                return st
            time.sleep(0.1)
        raise AssertionError("condition not reached; last stats: %s" % st)

    def stop(self, timeout=20):
        self._untel()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.out, _ = self.proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.out, _ = self.proc.communicate()
                raise AssertionError("sluice did not stop on SIGINT")
            if self.proc.returncode != 0:
                # what it said on the way out (a sanitizer's report)
                print("sluice exited %d; its last output:\n%s" % (
                    self.proc.returncode, (self.out or "")[-6000:]))
        return self.proc.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._untel()
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


class Results:
    """Counts checks and prints the closing line CI reads."""

    def __init__(self, name):
        self.name = name
        self.passed = 0
        self.failed = 0
        self.t0 = time.monotonic()

    def check(self, cond, what):
        # seconds since the start on every line: where a test's time goes
        stamp = "%6.1f" % (time.monotonic() - self.t0)
        if cond:
            self.passed += 1
            print("ok   %s %s" % (stamp, what))
        else:
            self.failed += 1
            print("FAIL %s %s" % (stamp, what))
        return cond

    def eq(self, got, want, what):
        return self.check(got == want, "%s (got %r, want %r)" % (what, got, want))

    def finish(self):
        print("%s: %d passed, %d failed" % (self.name, self.passed, self.failed))
        return 0 if self.failed == 0 and self.passed > 0 else 1


NETNS = os.path.join(ROOT, "scripts", "netns.sh")
SERVER = "198.18.0.2"  # the server namespace's address (scripts/netns.sh)
BACKEND = os.path.join(ROOT, "scripts", "backend.py")


class Topology:
    """Client and server namespaces joined through sluice on net_af_packet,
    with scripts/backend.py serving ports 80, 8080 and 9000. Everything is
    torn down on exit, whatever happened."""

    def __init__(self, binary, config, tmp, workers=1, prefix=None, huge_dir=None):
        self.binary, self.config, self.workers = binary, config, workers
        self.huge_dir = huge_dir
        self.prefix = prefix or "t%d" % (os.getpid() % 100000)
        self.cns, self.sns = self.prefix + "-c", self.prefix + "-s"
        self.log = os.path.join(tmp, "backend-%s.jsonl" % self.prefix)
        self.backend = self.sluice = None

    def __enter__(self):
        subprocess.run([NETNS, "up", self.prefix], check=True, capture_output=True)
        try:
            self.backend = subprocess.Popen(
                ["ip", "netns", "exec", self.sns, "/usr/bin/python3", BACKEND,
                 "--port", "80", "--port", "8080", "--port", "9000", "--log", self.log],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            self.backend.stdout.readline()  # listening
            if self.workers == 1:
                vdevs = ["net_af_packet0,iface=%s-c1" % self.prefix,
                         "net_af_packet1,iface=%s-s1" % self.prefix]
                lcores = "0,1"
            else:
                q = ",qpairs=%d" % self.workers
                vdevs = ["net_af_packet0,iface=%s-c1%s" % (self.prefix, q),
                         "net_af_packet1,iface=%s-s1%s" % (self.prefix, q)]
                lcores = "--lcores 0@0," + ",".join(
                    "%d@%d" % (i, 1 if i % 2 else 0) for i in range(1, self.workers + 1))
            self._vdevs, self._lcores = vdevs, lcores
            self._start()
            # the links' first packet: a veth pair just brought up drops
            # what it is given until Linux's link watch (up to a second)
            # has turned its carrier on, so the first exchange through it
            # took 0.5-0.8 s (ARP retried), charged to whatever request
            # came first -- not the appliance's, and measured by no test
            self.client("ping", "-c1", "-W3", SERVER, timeout=10)
        except BaseException:
            self.__exit__()
            raise
        return self

    def _start(self):
        for attempt in range(3):
            self.sluice = Sluice(self.binary, self.config, self._vdevs, lcores=self._lcores,
                                 huge_dir=self.huge_dir)
            try:
                self.sluice.wait_ready()
                break
            except RuntimeError as e:
                # DPDK's af_packet names its fanout group (pid ^
                # ifindex) & 0xffff: two appliances started back to
                # back can draw one id for two interfaces, which the
                # kernel refuses (EINVAL). Another pid draws another.
                if "PACKET_FANOUT" not in str(e) or attempt == 2:
                    raise

    def restart(self, kill=False):
        """sluice stopped (SIGINT, or SIGKILL as a crash would) and started
        again on the same ports. Returns the stopped one's exit code."""
        if kill:
            self.sluice.proc.kill()
            rc = self.sluice.proc.wait()
        else:
            rc = self.sluice.stop()
        self._start()
        return rc

    def __exit__(self, *exc):
        if self.sluice is not None and self.sluice.proc.poll() is None:
            self.sluice.proc.kill()
            self.sluice.proc.wait()
        if self.backend is not None:
            self.backend.kill()
            self.backend.wait()
        # whatever else a test started in the namespaces (nginx's workers
        # outlive a killed master) goes with them
        for ns in (self.cns, self.sns):
            pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True,
                                  text=True).stdout.split()
            for pid in pids:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (OSError, ValueError):
                    pass
        subprocess.run([NETNS, "down", self.prefix], capture_output=True)

    def client(self, *cmd, timeout=30):
        """A command in the client namespace, bounded in time."""
        return subprocess.run(["ip", "netns", "exec", self.cns] + list(cmd),
                              capture_output=True, text=True, timeout=timeout)

    def curl(self, *args):
        """One bounded curl from the client; returns (status, headers, body)."""
        r = self.client("curl", "-sS", "--max-time", "10", "-D", "-", *args)
        head, _, body = r.stdout.replace("\r\n", "\n").partition("\n\n")
        lines = head.split("\n")
        try:
            status = int(lines[0].split()[1])
        except (IndexError, ValueError):
            return 0, {}, r.stderr
        hdrs = {}
        for line in lines[1:]:
            k, _, v = line.partition(": ")
            hdrs[k.lower()] = v
        return status, hdrs, body

    def backend_log(self):
        try:
            with open(self.log) as f:
                # read while the backend writes: a last line not yet
                # whole is not a request yet
                return [json.loads(line) for line in f if line.endswith("\n")]
        except FileNotFoundError:
            return []


NGINX_CONF = """
worker_processes 1;
daemon off;
pid %(tmp)s/nginx.pid;
error_log %(tmp)s/nginx-error.log;
events { worker_connections 256; }
http {
    log_format oracle '%(log_format)s';
    access_log %(tmp)s/nginx-access.log oracle;
    client_body_temp_path %(tmp)s/cb;
    proxy_temp_path %(tmp)s/px;
    fastcgi_temp_path %(tmp)s/fc;
    uwsgi_temp_path %(tmp)s/uw;
    scgi_temp_path %(tmp)s/sc;
    server {
        listen 198.18.0.2:%(port)d%(listen)s;
        listen [2001:2::2]:%(port)d%(listen)s;
        location / { return 200 "ok\\n"; }
    }
}
"""


class Nginx:
    """nginx in the topology's server namespace on port, every request
    logged in log_format to TMP/nginx-access.log (a test's oracle), its
    listen directives given listen (" fastopen=64"). Stopped on exit,
    whatever happened."""

    def __init__(self, t, tmp, port, log_format, listen=""):
        self.t, self.tmp, self.port = t, tmp, port
        self.conf = os.path.join(tmp, "nginx.conf")
        for d in ("cb", "px", "fc", "uw", "sc"):
            os.makedirs(os.path.join(tmp, d), exist_ok=True)
        with open(self.conf, "w") as f:
            f.write(NGINX_CONF % {"tmp": tmp, "port": port, "log_format": log_format,
                                  "listen": listen})
        self.proc = None

    def __enter__(self):
        self.proc = subprocess.Popen(["ip", "netns", "exec", self.t.sns, "nginx", "-c",
                                      self.conf],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # listening once a connection through sluice is accepted (bash's
        # /dev/tcp: dash has none, and a probe that cannot succeed waited
        # its whole 5 s every time)
        for _ in range(50):
            if self.t.client("bash", "-c", "exec 3<>/dev/tcp/%s/%d" % (SERVER, self.port),
                             timeout=5).returncode == 0:
                return self
            time.sleep(0.1)
        raise RuntimeError("nginx never listened on %d" % self.port)

    def __exit__(self, *exc):
        # SIGTERM: the master stops its workers (a killed one leaves them)
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        subprocess.run(["ip", "netns", "exec", self.t.sns, "pkill", "-f", self.conf],
                       capture_output=True)

    def log(self):
        """The access log's lines, split on blanks."""
        try:
            with open(os.path.join(self.tmp, "nginx-access.log")) as f:
                return [line.split() for line in f if line.strip()]
        except FileNotFoundError:
            return []
