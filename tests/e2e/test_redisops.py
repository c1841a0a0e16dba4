#!/usr/bin/python3
"""Redis as operators run it: credentials.

- An ACL user with the least privilege the appliance needs (the list in
  docs/design/leases.md, applied here as written there) and the default user
  disabled: sluice with store.redis.username and a password_file leases
  through Redis — a 5/min key served 5 of 8, its state in Redis, no store
  error, the scripts loaded as functions.
- The same appliance with a wrong password: it starts, says at start that
  Redis refused the credentials, runs degraded (circuit open): a fail_open
  rule decides from the node's share, a fail_closed rule refuses (also
  when its ask is the half-open probe, which such a Redis answers with a
  protocol error rather than NOAUTH), and it stops cleanly.
- With a region and a global rule, under the same ACL: the appliance's
  demand reported into Redis and a slice written there followed; and
  sluice-aggregator under its own least privilege (the second line there)
  reads reports and writes slices.
- TLS, the way docs/design/leases.md gives (Debian 12's hiredis 0.14 has none): a
  redis-server listening on its TLS port only, with a certificate from a
  CA generated here, reached through a local stunnel client that verifies
  the chain and the host name; the limit holds through it.

usage: test_redisops.py PATH/TO/sluice
"""

import json
import os
import re
import subprocess
import sys
import tempfile
import time

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sltest  # noqa: E402

S4 = "198.18.0.2"
CONF = """version: 1
dataplane: {service_ports: [80], flows_per_worker: 4096, buckets_per_worker: 4096,
            head_buffers_per_worker: 64, idle_sleep_us: 200,
            mbufs: 4095, coordinator_timeout_ms: 200}
identity: {api_key_header: X-API-Key}
tiers: [free]
rules:
  - {name: shared, scope: key, match: {path_prefix: /v1/shared}, limit: 5/min, burst: 5}
  - {name: open, scope: key, match: {path_prefix: /v1/open}, limit: 4/min, burst: 4,
     on_store_failure: fail_open}
  - {name: closed, scope: key, match: {path_prefix: /v1/closed}, limit: 100/min,
     on_store_failure: fail_closed}
  - {name: spread, scope: key, match: {path_prefix: /v1/spread}, limit: 100/min, burst: 10,
     across_regions: true}
regions: {eu: 1, us: 1}
store:
  region: eu
  redis: {endpoints: ["127.0.0.1:%d"], timeout_ms: 20, probe_interval_ms: 300,
          username: sluice, password_file: %s}
  expected_appliances: 1
response: {retry_jitter: 0}
"""


def readme_acl(user="sluice"):
    """The ACL rules docs/design/leases.md gives for user."""
    readme = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs",
                          "design", "leases.md")
    with open(readme) as f:
        text = f.read()
    start = text.index("ACL SETUSER %s " % user)
    line = text[start:text.index("\n", start)]
    return line.split()[3:]  # after ACL SETUSER USER


def cli(port, *args, user=None, pw=None):
    cmd = ["redis-cli", "-p", str(port)]
    if pw:
        cmd += ["--user", user or "default", "--pass", pw, "--no-auth-warning"]
    return subprocess.run(cmd + list(args), capture_output=True, text=True).stdout.strip()


def run(binary, res, tmp, port, pwfile, tag):
    conf = os.path.join(tmp, "sluice-%s.yaml" % tag)
    with open(conf, "w") as f:
        f.write(CONF % (port, pwfile))
    with sltest.Topology(binary, conf, tmp, prefix="q%s%d" % (tag, os.getpid() % 1000)) as t:
        codes = [t.curl("-H", "X-API-Key: k-%s" % tag, "http://%s/v1/shared/%d" % (S4, i))[0]
                 for i in range(8)]
        opened = [t.curl("-H", "X-API-Key: o-%s" % tag, "http://%s/v1/open/%d" % (S4, i))[0]
                  for i in range(6)]
        # the second one after the probe interval: the half-open probe,
        # answered by a Redis that refuses the connection itself
        closed = []
        for i in range(4):
            closed.append(t.curl("-H", "X-API-Key: c-%s" % tag,
                                 "http://%s/v1/closed/%d" % (S4, i))[0])
            time.sleep(0.35)
        spread = [t.curl("-H", "X-API-Key: g-%s" % tag, "http://%s/v1/spread/%d" % (S4, i))[0]
                  for i in range(3)]
        regions = follow_slice(t, port, tag) if tag == "g" else {}
        store = sltest.telemetry(t.sluice.prefix, "/sluice/store")
        exported = subprocess.run([EXPORTER, "-f", t.sluice.prefix, "--once"],
                                  capture_output=True, text=True, timeout=30).stdout
        rc = t.sluice.stop()
        return codes, opened, closed, store, rc, t.sluice.out, exported, (spread, regions)


ADMIN = {}


def follow_slice(t, port, tag):
    """Under the appliance's least privilege: its demand for the global
    rule reported into Redis, and a slice written there (by the admin, as
    the aggregator would, announced) followed. Returns what it saw."""
    got = {"rules": []}
    for _ in range(30):  # reported every second
        got["rules"] = cli(port, "SMEMBERS", "sl:usage:rules", **ADMIN).split()
        if got["rules"]:
            break
        time.sleep(0.2)
    if not got["rules"]:
        return got
    rid = got["rules"][0]
    raw = cli(port, "HGETALL", "sl:usage:{%s}" % rid, **ADMIN).splitlines()
    top = json.loads(raw[1]).get("top", {}) if len(raw) == 2 else {}
    got["identities"] = list(top)
    if len(top) != 1:
        return got
    key = "sl:slice:{%s}" % rid
    cli(port, "HSET", key, "v", "7", "t", "1", "x", "10000", list(top)[0], "8000", **ADMIN)
    cli(port, "PUBLISH", "sl:slices", "%s 7" % rid, **ADMIN)
    for _ in range(20):
        got["regions"] = sltest.telemetry(t.sluice.prefix, "/sluice/regions")
        if got["regions"].get("spread", {}).get("version") == 7:
            break
        time.sleep(0.1)
    return got


def round_as_aggregator(tmp, port, us, pw):
    """One round over eu (port) and us, as the aggregator's ACL user, on a
    fresh report in eu as an appliance (stopped by now) writes it."""
    pwfile = os.path.join(tmp, "agg.pw")
    with open(pwfile, "w") as f:
        f.write(pw + "\n")
    conf = os.path.join(tmp, "agg.yaml")
    with open(conf, "w") as f:
        f.write("regions: {eu: 1, us: 1}\n")
    cli(port, "DEL", *cli(port, "--scan", "--pattern", "sl:slice:*", **ADMIN).split(), **ADMIN)
    cli(port, "SADD", "sl:usage:rules", "00000000000000aa", **ADMIN)
    cli(port, "HSET", "sl:usage:{00000000000000aa}", "n1", json.dumps(
        {"t": int(time.time() * 1000), "i": 1000, "total": 5, "top": {"ab" * 16: 5}}), **ADMIN)
    return subprocess.run([AGGREGATOR, "-c", conf, "--once", "--region", "eu=127.0.0.1:%d" % port,
                           "--region", "us=127.0.0.1:%d" % us, "--username", "sluice-aggregator",
                           "--password-file", pwfile], capture_output=True, text=True, timeout=60)


def aggregator_acl(res, tmp, port):
    """sluice-aggregator under its least privilege: a round read the
    appliance's report and wrote the slices."""
    pw = "agg-pw-%d" % os.getpid()
    acl = [">" + pw if a.startswith(">") else a for a in readme_acl("sluice-aggregator")]
    res.eq(cli(port, "ACL", "SETUSER", "sluice-aggregator", *acl, **ADMIN), "OK",
           "the documented ACL for the aggregator's user applies")
    # a second region (one alone always holds the whole limit: no slice
    # to write), its Redis under the same ACL
    us = sltest.free_port()
    d = os.path.join(tmp, "us")
    os.makedirs(d)
    with sltest.redis_server(us, d):
        cli(us, "ACL", "SETUSER", "sluice-aggregator", *acl)
        r = round_as_aggregator(tmp, port, us, pw)
    keys = cli(port, "--scan", "--pattern", "sl:slice:*", **ADMIN).split()
    res.check(r.returncode == 0 and '"rebalance"' in r.stdout and "error" not in r.stdout and
              "sl:slice:{00000000000000aa}" in keys, "the aggregator under its least privilege: a round read the "
              "report and wrote the slices (%s; %s)" % (keys, (r.stdout + r.stderr)[-300:]))


def tls(binary, res, tmp):
    """redis-server on TLS only, sluice through a local stunnel client."""
    def ossl(*args):
        subprocess.run(["openssl"] + list(args), cwd=tmp, check=True, capture_output=True)
    ossl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
         "/CN=test-ca", "-keyout", "ca.key", "-out", "ca.crt")
    ossl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost",
         "-keyout", "redis.key", "-out", "redis.csr")
    with open(os.path.join(tmp, "san.ext"), "w") as f:
        f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    ossl("x509", "-req", "-in", "redis.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
         "-CAcreateserial", "-days", "2", "-extfile", "san.ext", "-out", "redis.crt")
    tport, lport = sltest.free_port(), sltest.free_port()
    d = os.path.join(tmp, "tls")
    os.makedirs(d)
    redis = subprocess.Popen(
        ["redis-server", "--port", "0", "--tls-port", str(tport), "--bind", "127.0.0.1",
         "--tls-cert-file", os.path.join(tmp, "redis.crt"),
         "--tls-key-file", os.path.join(tmp, "redis.key"),
         "--tls-ca-cert-file", os.path.join(tmp, "ca.crt"), "--tls-auth-clients", "no",
         "--save", "", "--appendonly", "no", "--dir", d],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    conf = os.path.join(tmp, "stunnel.conf")
    with open(conf, "w") as f:
        f.write("foreground = yes\npid =\n[redis]\nclient = yes\n"
                "accept = 127.0.0.1:%d\nconnect = 127.0.0.1:%d\n"
                "CAfile = %s\nverifyChain = yes\ncheckHost = localhost\n" % (
                    lport, tport, os.path.join(tmp, "ca.crt")))
    tunnel = subprocess.Popen(["stunnel", conf], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    tcli = ["redis-cli", "-p", str(tport), "--tls", "--cacert", os.path.join(tmp, "ca.crt")]
    try:
        for _ in range(100):
            if cli(lport, "PING") == "PONG":
                break
            time.sleep(0.1)
        res.eq(cli(lport, "PING"), "PONG", "stunnel client to Redis's TLS port: PONG")
        plain = subprocess.run(["redis-cli", "-p", str(tport), "PING"], capture_output=True,
                               text=True, timeout=10).stdout.strip()
        res.check(plain != "PONG", "Redis speaks TLS only: plain RESP refused (%r)" % plain)
        conf2 = os.path.join(tmp, "sluice-tls.yaml")
        with open(conf2, "w") as f:
            f.write(CONF.replace(",\n          username: sluice, password_file: %s}",
                                 "}") % lport)
        with sltest.Topology(binary, conf2, tmp, prefix="qt%d" % (os.getpid() % 1000)) as t:
            codes = [t.curl("-H", "X-API-Key: k-tls", "http://%s/v1/shared/%d" % (S4, i))[0]
                     for i in range(8)]
            store = sltest.telemetry(t.sluice.prefix, "/sluice/store")
            res.eq(t.sluice.stop(), 0, "TLS: stops cleanly")
        res.eq(sorted(codes), [200] * 5 + [429] * 3,
               "through TLS: 5/min, 5 of 8 (%s)" % codes)
        res.eq((store["state"], store["store_errors"]), ("closed", 0),
               "through TLS: no store error (%d replies)" % store.get("store_replies", 0))
        keys = subprocess.run(tcli + ["--scan", "--pattern", "sl:*"], capture_output=True,
                              text=True, timeout=10).stdout.split()
        res.check(len(keys) > 0, "the state is in the TLS-only Redis (%d keys)" % len(keys))
    finally:
        for p in (tunnel, redis):
            p.kill()
            p.wait()


AGGREGATOR = os.path.join(sltest.ROOT, "tools", "sluice-aggregator")
EXPORTER = os.path.join(sltest.ROOT, "tools", "sluice-exporter")


def dashboards(res, exported):
    """The Grafana dashboard and the alert rules ask only for metrics the
    exporter gives an appliance with a store (a renamed metric would leave
    a panel empty and an alert silent), and every alert is complete."""
    have = {ln.split("{")[0].split(" ")[0] for ln in exported.splitlines()
            if ln.startswith("sluice_")}
    dash = json.load(open(os.path.join(sltest.ROOT, "conf", "grafana", "sluice.json")))
    exprs = [tg["expr"] for p in dash["panels"] for tg in p["targets"]]
    alerts = yaml.safe_load(open(os.path.join(sltest.ROOT, "conf", "prometheus",
                                              "sluice-alerts.yml")))
    rules = [r for g in alerts["groups"] for r in g["rules"]]
    exprs += [r["expr"] for r in rules]
    used = {m for e in exprs for m in re.findall(r"\bsluice_[a-z0-9_]+", e)}
    res.check(used and used <= have, "dashboard and alerts use %d exported metrics%s" % (
        len(used), "" if used <= have else "; missing: %s" % sorted(used - have)))
    res.check(len(dash["panels"]) >= 6 and all(
        r.get("alert") and r.get("expr") and r.get("labels", {}).get("severity") and
        r.get("annotations", {}).get("summary") for r in rules) and len(rules) >= 4,
        "%d panels; %d alerts, each with expr, severity and summary" % (
            len(dash["panels"]), len(rules)))


def main():
    binary = sys.argv[1]
    res = sltest.Results("redisops")
    port = sltest.free_port()
    with tempfile.TemporaryDirectory() as tmp:
        admin = "admin-pw-%d" % os.getpid()
        with sltest.redis_server(port, tmp):
            # the appliance's user as the docs give it; the default
            # user (no password) off: every connection must authenticate
            acl = readme_acl()
            good = "sluice-pw-%d" % os.getpid()
            acl = [">" + good if a.startswith(">") else a for a in acl]
            res.eq(cli(port, "ACL", "SETUSER", "sluice", *acl), "OK",
                   "the documented ACL for the appliance's user applies")
            res.eq(cli(port, "ACL", "SETUSER", "admin", "on", ">" + admin, "~*", "&*", "+@all"),
                   "OK", "an admin user for the test")
            ADMIN.update(user="admin", pw=admin)
            cli(port, "ACL", "SETUSER", "default", "off")
            res.check("NOAUTH" in cli(port, "PING") or "WRONGPASS" in cli(port, "PING") or
                      cli(port, "PING") != "PONG", "without credentials Redis refuses")

            pwfile = os.path.join(tmp, "redis.pw")
            with open(pwfile, "w") as f:
                f.write(good + "\n")
            os.chmod(pwfile, 0o600)
            codes, opened, closed, store, rc, out, exported, (spread, follow) = run(
                binary, res, tmp, port, pwfile, "g")
            res.check(spread == [200] * 3 and len(follow.get("identities", [])) == 1,
                      "a global rule under the least privilege: its demand reported into the "
                      "region's Redis (%s)" % {k: follow.get(k) for k in ("rules", "identities")})
            sl = follow.get("regions", {}).get("spread", {})
            res.check(sl.get("version") == 7 and 8000 in sl.values(),
                      "and a slice written and announced there followed (%s)" % sl)
            res.eq((store.get("usage_refused"), follow.get("regions", {}).get("refused")),
                   (0, 0), "nothing of it refused by Redis (usage_refused, regions' refused)")
            aggregator_acl(res, tmp, port)
            dashboards(res, exported)
            res.eq(sorted(codes), [200] * 5 + [429] * 3,
                   "an ACL user with the least privilege: 5/min through Redis, 5 of 8 (%s)" %
                   codes)
            keys = cli(port, "--scan", "--pattern", "sl:*", user="admin", pw=admin).split()
            res.check(len(keys) > 0, "the limits' state lives in Redis (%d keys)" % len(keys))
            res.eq((store["state"], store["store_errors"], store["scripts"]),
                   ("closed", 0, "fcall"),
                   "no store error, the scripts loaded as functions (%s)" % {
                       k: store.get(k) for k in ("state", "store_errors", "scripts",
                                                 "store_replies")})
            res.eq(closed, [200] * 4, "a fail_closed rule answered from Redis")
            res.eq(rc, 0, "stops cleanly")
            res.check("refused the credentials" not in out, "no credential error logged")

            # a user that may not run the scripts: Redis answers every
            # ask NOPERM, and the log says so, not only that the circuit
            # opened
            cli(port, "ACL", "SETUSER", "sluice", "-fcall", "-evalsha", "-eval", **ADMIN)
            _, _, _, store, rc, out, _, _ = run(binary, res, tmp, port, pwfile, "n")
            said = [ln for ln in out.splitlines() if "answered an ask" in ln]
            res.check(len(said) == 1 and "NOPERM" in said[0] and store["store_errors"] > 1,
                      "scripts refused: what Redis said is logged, once (%s; store_errors %s)"
                      % (said, store["store_errors"]))
            res.eq(rc, 0, "runs degraded and stops cleanly")
            cli(port, "ACL", "SETUSER", "sluice", *acl, **ADMIN)

            with open(pwfile, "w") as f:
                f.write("not-the-password\n")
            codes, opened, closed, store, rc, out, _, _ = run(binary, res, tmp, port, pwfile,
                                                              "w")
            res.check("refused the credentials" in out and "WRONGPASS" in out,
                      "a wrong password is said at start: %s" % [
                          ln for ln in out.splitlines() if "credentials" in ln][:2])
            res.check(store["state"] in ("open", "half_open"),
                      "wrong credentials: the store is out (%s), the circuit open" %
                      store["state"])
            res.eq(opened, [200] * 4 + [429] * 2,
                   "fail_open decides from the node's share (4/min): %s" % opened)
            res.eq(closed, [429] * 4, "fail_closed refuses while the store is out, "
                   "the half-open probe's refusal too (%s)" % {
                       k: store.get(k) for k in ("store_errors", "store_degraded_late",
                                                 "circuit_opened")})
            res.eq(rc, 0, "runs degraded and stops cleanly, no crash")
            tls(binary, res, tmp)
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
