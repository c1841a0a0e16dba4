#!/usr/bin/python3
"""The Debian package: scripts/package.sh builds
sluice_<version>_amd64.deb; it is unpacked into a temporary root (dpkg -x:
nothing is installed on the test machine) and run from there.

- the control fields: Depends names Debian's DPDK, hiredis and libyaml
  packages (read from the binary by dpkg-shlibdeps), the config is a
  conffile;
- every file the operator needs is in its place: the binary, sluicectl,
  sluice-exporter and sluice-aggregator (links into /usr/lib/sluice, which they import
  their telemetry client from), the unit, the default config, man pages,
  the dashboard and alert rules;
- the unpacked `sluice --version` says the package's version, and
  `--check-config` accepts the unpacked default config; sluicectl, the
  exporter and the aggregator start through their links;
- the man pages render without a warning, and lintian finds no error.

usage: test_package.py
"""

import gzip
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sltest  # noqa: E402


def run(*cmd, **kw):
    return subprocess.run(list(cmd), capture_output=True, text=True, timeout=600, **kw)


def main():
    res = sltest.Results("package")
    with tempfile.TemporaryDirectory() as tmp:
        r = run(os.path.join(sltest.ROOT, "scripts", "package.sh"), os.path.join(tmp, "out"))
        deb = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""
        res.check(r.returncode == 0 and deb.endswith("_amd64.deb") and os.path.exists(deb),
                  "scripts/package.sh built %s%s" % (os.path.basename(deb),
                                                     r.stderr.strip()[-300:]))
        if not os.path.exists(deb):
            return res.finish()
        field = {f: run("dpkg-deb", "-f", deb, f).stdout.strip()
                 for f in ("Package", "Version", "Depends", "Architecture")}
        res.eq((field["Package"], field["Architecture"]), ("sluice", "amd64"),
               "package sluice for amd64")
        res.check(os.path.basename(deb) == "sluice_%s_amd64.deb" % field["Version"],
                  "named after its version (%s)" % field["Version"])
        deps = field["Depends"]
        res.check(all(d in deps for d in ("librte-eal", "librte-ethdev", "librte-pdump",
                                          "libhiredis", "libyaml", "python3-yaml")),
                  "Depends on Debian's DPDK, hiredis, libyaml (%s)" % deps)
        ctrl = os.path.join(tmp, "control")
        run("dpkg-deb", "-e", deb, ctrl)
        res.eq(open(os.path.join(ctrl, "conffiles")).read().split(),
               ["/etc/sluice/sluice.yaml"], "the default config is a conffile")

        root = os.path.join(tmp, "root")
        res.eq(run("dpkg-deb", "-x", deb, root).returncode, 0, "unpacked into a temporary root")
        want = ["usr/bin/sluice", "usr/bin/sluicectl", "usr/bin/sluice-exporter",
                "usr/bin/sluice-aggregator", "usr/share/man/man1/sluice-aggregator.1.gz",
                "usr/bin/sluice-bypass", "usr/share/man/man1/sluice-bypass.1.gz",
                "usr/lib/sluice/sltelemetry.py", "lib/systemd/system/sluice@.service",
                "etc/sluice/sluice.yaml", "usr/share/man/man1/sluice.1.gz",
                "usr/share/man/man1/sluicectl.1.gz", "usr/share/man/man1/sluice-exporter.1.gz",
                "usr/share/man/man5/sluice.yaml.5.gz",
                "usr/share/sluice/grafana/sluice.json",
                "usr/share/sluice/prometheus/sluice-alerts.yml",
                "usr/share/doc/sluice/copyright", "usr/share/doc/sluice/changelog.gz"]
        missing = [w for w in want if not os.path.exists(os.path.join(root, w))]
        res.eq(missing, [], "every file in its place")

        sluice = os.path.join(root, "usr", "bin", "sluice")
        v = run(sluice, "--version")
        release = field["Version"].split("+")[0]
        res.check(v.returncode == 0 and release in v.stdout and "DPDK" in v.stdout,
                  "the unpacked sluice --version: %s" % v.stdout.strip().replace("\n", "; "))
        c = run(sluice, "--", "--config", os.path.join(root, "etc", "sluice", "sluice.yaml"),
                "--check-config")
        res.check(c.returncode == 0 and c.stdout.startswith("OK rules="),
                  "the unpacked default config checks (%s)" % (c.stdout.strip() or
                                                              c.stderr.strip()[-200:]))
        for tool in ("sluicectl", "sluice-exporter", "sluice-aggregator", "sluice-bypass"):
            h = run("/usr/bin/python3", os.path.join(root, "usr", "bin", tool), "--help")
            res.check(h.returncode == 0 and "usage" in h.stdout.lower(),
                      "%s starts through its link (%s)" % (
                          tool, (h.stdout.strip().splitlines() or h.stderr.strip()[-200:]
                                 .splitlines() or [""])[0]))

        for page, sec in (("sluice", "1"), ("sluicectl", "1"), ("sluice-exporter", "1"),
                          ("sluice-aggregator", "1"), ("sluice-bypass", "1"),
                          ("sluice.yaml", "5")):
            src = os.path.join(root, "usr", "share", "man", "man" + sec, page + "." + sec + ".gz")
            plain = os.path.join(tmp, page + "." + sec)
            with gzip.open(src) as f, open(plain, "wb") as g:
                g.write(f.read())
            m = run("man", "--warnings", "-l", "-E", "UTF-8", plain,
                    env=dict(os.environ, MANWIDTH="80"))
            res.check(m.returncode == 0 and not m.stderr.strip() and "NAME" in m.stdout,
                      "man %s renders without a warning%s" % (
                          page, (": " + m.stderr.strip()[:200]) if m.stderr.strip() else ""))
        lint = run("lintian", "--tag-display-limit", "0", deb)
        errors = [ln for ln in lint.stdout.splitlines() if ln.startswith("E:")]
        warnings = [ln for ln in lint.stdout.splitlines() if ln.startswith("W:")]
        res.eq(errors, [], "lintian: no error (%d warnings%s)" % (
            len(warnings), (": " + "; ".join(warnings[:3])) if warnings else ""))
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
