#!/usr/bin/python3
"""The command line without EAL: --version and --help exit 0
before any EAL start, a wrong option or a stray argument is named and
exits 1, --config is required; --explain reads heads back to back.

usage: test_cli.py PATH/TO/sluice
"""

import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sltest  # noqa: E402


def run(binary, *args):
    r = subprocess.run([binary] + list(args), capture_output=True, text=True, timeout=30)
    return r.returncode, r.stdout, r.stderr


def main():
    binary = sys.argv[1]
    res = sltest.Results("cli")
    rc, out, err = run(binary, "--version")
    res.check(rc == 0 and out.startswith("sluice ") and "release " in out and
              "DPDK 22.11" in out and "EAL:" not in out + err,
              "--version: sluice's and DPDK's versions, no EAL (%r)" % out.strip())
    rc, out2, _ = run(binary, "--", "--version")
    res.eq((rc, out2), (0, out), "-- --version: the same")
    rc, out, err = run(binary, "--", "--help")
    res.check(rc == 0 and "--config FILE" in out and "--check-config" in out and
              "example:" in out and "EAL:" not in out + err,
              "-- --help: the options and an example on stdout, exit 0")
    rc, _, err = run(binary, "--", "--config", "x.yaml", "--bogus")
    res.check(rc == 1 and "sluice: unrecognized option '--bogus'" in err,
              "an unknown option is named: %r" % err.splitlines()[:1])
    conf = os.path.join(sltest.ROOT, "conf", "sluice.yaml")
    rc, out, err = run(binary, "--config", conf, "--check-config")
    rc2, out2, err2 = run(binary, "--", "--config", conf, "--check-config")
    res.check(rc == 0 and out.startswith("OK rules=") and (rc, out, err) == (rc2, out2, err2),
              "--check-config without '--' (no EAL either way): as with it (%r)" % out.strip())
    for args in (("--config", conf), ("--no-huge", "--config", conf, "--check-config")):
        rc, out, err = run(binary, *args)
        res.check(rc == 1 and "go after '--'" in err and "EAL:" not in err and
                  len((out + err).splitlines()) == 1,
                  "%s: one line that says where sluice's options go (%r)" % (
                      " ".join(args).replace(conf, "F"), err.strip()))
    rc, _, err = run(binary, "--", "--config", "x.yaml", "stray")
    res.check(rc == 1 and "unexpected argument 'stray'" in err,
              "a stray argument is named: %r" % err.splitlines()[:1])
    rc, out, err = run(binary, "--no-huge", "-l", "0")
    res.check(rc == 1 and "--config FILE is required" in err and
              len((out + err).splitlines()) == 1,
              "no '--' at all: --config is required, said before EAL starts (%r)" % err.strip())
    rc, _, err = run(binary, "--", "--check-config")
    res.check(rc == 1 and "--config FILE is required" in err,
              "--config is required: %r" % err.splitlines()[:1])
    unit(binary, res)
    explain_heads(binary, res)
    host_rules(binary, res)
    never_bound(binary, res)
    return res.finish()


def never_bound(binary, res):
    """Rules that can never match or never refuse, requests no rule binds,
    options that do nothing where they are written and old spellings:
    each said with its line and what to do; --strict makes them fail the
    check, and a config without them passes it."""
    cases = [
        ("  - {name: q, scope: ip, match: {path: \"/login?next=1\"}, limit: 5/min}\n",
         ":4: warning: rule 'q' can never match: '/login?next=1' holds a query"),
        ("  - {name: b, scope: ip, match: {path: /x/y, path_prefix: /v1}, limit: 5/min}\n",
         ":4: warning: rule 'b' can never match: a request must meet both"),
        ("  - {name: u, scope: user, limit: 5/min}\n  - {name: i, scope: ip, limit: 9/s}\n",
         ":4: warning: rule 'u' can never match: scope: user keys on the header "
         "identity.user_header names, and none is set"),
        ("  - {name: c, scope: ip, match: {methods: [CONNECT]}, limit: 5/min}\n",
         ":4: warning: rule 'c' can never match: CONNECT is refused (400 connect)"),
        ("  - {name: p, scope: key, tier: pro, limit: 5/min}\n"
         "  - {name: i, scope: ip, limit: 9/s}\ntiers: [free, pro]\nkeys: {k1: free}\n",
         ":4: warning: rule 'p' can never match: no key is of tier 'pro'"),
        ("  - {name: k, scope: key, limit: 5/min}\n  - {name: i, scope: ip, limit: 9/s}\n"
         "overrides:\n  - {rule: i, key: k1, limit: 9/min, expires: 2099-01-01T00:00:00Z}\n",
         ":7: warning: override of rule 'i' never applies: it names an API key (key:), and "
         "the rule counts per client address"),
        ("  - {name: i, scope: ip, limit: 9/s}\noverrides:\n"
         "  - {rule: i, ip: '2001:2::10', limit: 9/min, expires: 2099-01-01T00:00:00Z}\n",
         ":6: warning: override of rule 'i': '2001:2::10' stands for 2001:2::/64, every "
         "client in it"),
        ("  - {name: i, scope: ip, limit: 9/s}\noverrides:\n"
         "  - {rule: i, ip: 198.18.0.7, limit: 9/min, expires: 2099-01-01T00:00:00Z}\n"
         "  - {rule: i, ip: '::ffff:198.18.0.7', limit: 8/min, expires: 2000-01-01T00:00:00Z}\n",
         ":6: warning: override of rule 'i' never applies: the one on line 7 names the same "
         "client and is the one looked up, even once it has expired"),
        ("  - {name: k, scope: key, limit: 5/min}\n",
         ":4: warning: every rule is keyed on an API key or a user"),
        ("  - {name: s, scope: ip, limit: 5/min, shadow: true}\n",
         ":1: warning: no enforcing rule"),
        ("  - {name: o, scope: ip, limit: 5/min, on_store_failure: fail_closed}\n",
         ":4: warning: rule 'o': on_store_failure does nothing without a store"),
        ("  - {name: t, scope: ip, tier: pro, limit: 5/min}\ntiers: [free, pro]\n",
         ":4: warning: rule 't': scope: ip with a tier binds only requests whose API key "
         "is of tier 'pro'"),
        ("  - {name: g, scope: ip, limit: 5/min, global: true}\nregions: {eu: 1}\n"
         "store: {region: eu, expected_appliances: 2, redis: {endpoints: [\"127.0.0.1:1\"]}}\n",
         ":4: warning: rule 'g': 'global' is spelled across_regions now"),
        ("  - {name: e, scope: global, limit: 5/min}\n",
         ":4: warning: rule 'e': scope: global is one bucket for the rule, as scope: "
         "endpoint is; write endpoint"),
        ("  - {name: a, scope: ip, limit: 5/min}\n"
         "  - {name: b, scope: ip, match: {path_prefix: /v1}, limit: 10/min, burst: 20}\n",
         ":5: warning: rule 'b' never refuses: every request it matches also meets rule "
         "'a' (line 4)"),
        ("  - {name: i, scope: ip, limit: 5/min}\n"
         "store: {redis: {endpoints: [\"127.0.0.1:1\"]}}\n",
         ":5: warning: store: expected_appliances is not set (1)"),
        ("  - {name: k, scope: key, limit: 5/min}\n  - {name: i, scope: ip, limit: 50/min}\n",
         None),
        # narrower and stricter, or another scope: each may refuse
        ("  - {name: a, scope: ip, limit: 10/min}\n"
         "  - {name: b, scope: ip, match: {path_prefix: /v1}, limit: 5/min}\n"
         "  - {name: k, scope: key, match: {path_prefix: /v1}, limit: 50/min}\n", None),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "w.yaml")
        for rules, said in cases:
            with open(path, "w") as f:
                f.write("version: 1\nidentity: {api_key_header: X-API-Key}\nrules:\n" + rules)
            rc, out, err = run(binary, "--", "--config", path, "--check-config")
            src, _, serr = run(binary, "--", "--config", path, "--check-config", "--strict")
            if said is None:
                res.check(rc == 0 and src == 0 and err == "" and serr == "",
                          "--check-config: a key rule and an ip rule, nothing said; "
                          "--strict passes (%r)" % err.strip())
                continue
            res.check(rc == 0 and out.startswith("OK rules=") and (path + said) in err,
                      "--check-config warns%s (%r)" % (said, err.strip()[:160]))
            res.check(src == 1 and "refused (--strict)" in serr,
                      "--check-config --strict: the warning fails it (exit %d)" % src)


def host_rules(binary, res):
    """Rules that all match a host leave other hosts unlimited: said, with
    the hosts named; one rule without host and nothing is said."""
    rules = ("version: 1\nrules:\n"
             "  - {name: a, scope: ip, match: {host: api.example.com}, limit: 5/s}\n"
             "  - {name: b, scope: ip, match: {host: www.example.com}, limit: 5/s}\n")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "h.yaml")
        for extra, warned in (("", True), ("  - {name: c, scope: ip, limit: 50/s}\n", False)):
            with open(path, "w") as f:
                f.write(rules + extra)
            rc, out, err = run(binary, "--", "--config", path, "--check-config")
            said = "%s:3: warning: every rule matches a host (api.example.com, " \
                   "www.example.com)" % path in err
            res.check(rc == 0 and out.startswith("OK rules=") and said == warned,
                      "--check-config, %d rules: host warning %s: %r" % (
                          2 + bool(extra), "given" if warned else "none", err.strip()))


def explain_heads(binary, res):
    """Heads back to back, one line each: a body by Content-Length skipped,
    a refused head skipped to its blank line, a trailing part incomplete."""
    conf = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "conf",
                        "sluice.yaml")
    heads = ("GET /zz/%2e%2e/v1/%73earch HTTP/1.1\r\nHost: API.test.\r\n\r\n"
             "GET  /bad HTTP/1.1\r\nHost: a\r\n\r\n"
             "POST /v1/x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nGET /"
             "GET /b/../c HTTP/1.1\r\nHost: b\r\n\r\n"
             "GET /d HTTP/1.1\r\nHo")
    r = subprocess.run([binary, "--", "--config", conf, "--explain", "-"], input=heads,
                       capture_output=True, text=True, timeout=30)
    views = [json.loads(line) for line in r.stdout.splitlines()]
    got = [v.get("path", v.get("refused")) for v in views]
    res.eq((r.returncode, got), (0, ["/v1/search", "target", "/v1/x", "/c", "incomplete"]),
           "--explain: each head of a pipelined input in turn")
    explain_overrides(binary, res)


def explain_overrides(binary, res):
    """The limit an override gives, its line and reason, for the client
    it names: a mapped address its IPv4 client, an IPv6 address its
    group; an expired one not at all."""
    conf = ("version: 1\nrules:\n  - {name: a, scope: ip, limit: 10/s}\noverrides:\n"
            "  - {rule: a, ip: '::ffff:198.18.0.7', limit: 70/s, burst: 80, reason: partner,"
            " expires: 2099-01-01T00:00:00Z}\n"
            "  - {rule: a, ip: '2001:2::', limit: 90/s, expires: 2099-01-01T00:00:00Z}\n"
            "  - {rule: a, ip: 198.18.0.8, limit: 50/s, expires: 2001-01-01T00:00:00Z}\n")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "o.yaml")
        with open(path, "w") as f:
            f.write(conf)
        got = []
        for peer in ("198.18.0.7", "2001:2::99", "198.18.0.8", "198.18.0.9"):
            r = subprocess.run([binary, "--", "--config", path, "--explain", "-", "--peer", peer],
                               input="GET / HTTP/1.1\r\nHost: a\r\n\r\n", capture_output=True,
                               text=True, timeout=30)
            rule = json.loads(r.stdout)["rules"][0]
            o = rule.get("override")
            got.append((rule["limit"], rule["burst"], o and (o["line"], o["reason"])))
    res.eq(got, [(70, 80, (5, "partner")), (90, 90, (6, "")), (10, 10, None), (10, 10, None)],
           "--explain: an override's limit, burst, line and reason for the client it names "
           "(a mapped address its IPv4 client, an IPv6 one its /64); an expired one and "
           "another client the rule's own")


def unit(binary, res):
    """The service unit as shipped, its paths pointed at this build:
    systemd-analyze verify accepts it, and its ExecStartPre line checks a
    config."""
    src = os.path.join(sltest.ROOT, "conf", "systemd", "sluice@.service")
    text = open(src).read().replace(
        "/usr/bin/sluice-bypass", os.path.join(sltest.ROOT, "tools", "sluice-bypass")).replace(
        "/usr/bin/sluice", os.path.abspath(binary))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "sluice@edge.service")
        with open(path, "w") as f:
            f.write(text)
        r = subprocess.run(["systemd-analyze", "verify", path], capture_output=True,
                           text=True, timeout=60)
        res.check(r.returncode == 0 and not r.stderr.strip(),
                  "systemd-analyze verify sluice@.service: %s" % (r.stderr.strip() or "clean"))
        # the exporter's and the aggregator's units, their programs this tree's
        for name, inst in (("sluice-exporter@.service", "sluice-exporter@edge.service"),
                           ("sluice-aggregator.service", "sluice-aggregator.service")):
            t = open(os.path.join(sltest.ROOT, "conf", "systemd", name)).read()
            for tool in ("sluice-exporter", "sluice-aggregator"):
                t = t.replace("/usr/bin/" + tool, os.path.join(sltest.ROOT, "tools", tool))
            p = os.path.join(tmp, inst)
            with open(p, "w") as f:
                f.write(t.replace("After=sluice@%i.service\nBindsTo=sluice@%i.service\n", "")
                        .replace("WantedBy=sluice@%i.service", "WantedBy=multi-user.target"))
            r = subprocess.run(["systemd-analyze", "verify", p], capture_output=True,
                               text=True, timeout=60)
            res.check(r.returncode == 0 and not r.stderr.strip(),
                      "systemd-analyze verify %s: %s" % (name, r.stderr.strip() or "clean"))
    pre = [ln.split("=", 1)[1] for ln in text.splitlines() if ln.startswith("ExecStartPre=")]
    cmd = pre[0].replace("/etc/sluice/%i.yaml", os.path.join(sltest.ROOT, "conf", "sluice.yaml"))
    r = subprocess.run(cmd.split(), capture_output=True, text=True, timeout=30)
    res.check(r.returncode == 0 and r.stdout.startswith("OK rules="),
              "the unit's ExecStartPre validates a config: %s" % r.stdout.strip())


if __name__ == "__main__":
    sys.exit(main())
