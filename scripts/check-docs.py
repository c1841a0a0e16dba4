#!/usr/bin/python3
"""The documents against the code they describe. Fails (exit 1) when:

- a key the config parser accepts is missing from docs/reference/config.md,
  or the reference lists a key the parser does not accept (both read from
  their sources: the parser's field tables, the reference's tables);
- a YAML block in README.md or docs/ does not pass --check-config (a block
  without `version:` is checked as a fragment of a file that has it), or
  a config in conf/ (the default, the demo's, conf/examples/) does not
  pass --check-config --strict;
- the telemetry reference names a /sluice command the code does not
  register, or the code registers one the reference does not describe;
- a file in the repository carries a work-log label (an issue number, an
  ordinal work period): history lives in git;
- conf/man/sluice.yaml.5 is not what scripts/config-man.py makes of the
  reference;
- the exporter writes a metric family docs/reference/metrics.md does not
  describe (read from the exporter itself, rendering a telemetry reply of
  every command's shape).

usage: scripts/check-docs.py [SLUICE_BINARY]   (no binary: YAML not run)
"""
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")

# the parser's field tables, by the section of the file they read
TABLES = {
    "root": "", "dataplane": "dataplane", "identity": "identity",
    "request": "request", "response": "response", "decisions": "decisions",
    "store": "store", "redis": "store.redis", "rule": "rules",
    "match": "rules[].match", "override": "overrides", "blocklist": "blocklist",
    "reload": "reload",
}


def read(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return f.read()


def parser_keys():
    keys = set()
    for name in sorted(os.listdir(os.path.join(ROOT, "lib", "rules"))):
        if not name.endswith(".c"):
            continue
        text = read(os.path.join("lib", "rules", name))
        for m in re.finditer(r"struct field (\w+)_fields\[\] = \{(.*?)\n\};", text, re.S):
            if m.group(1) not in TABLES:
                continue  # the root's passes (first_, second_) repeat it
            sect = TABLES[m.group(1)]
            for k in re.findall(r'F_\w+\("(\w+)"', m.group(2)):
                keys.add((sect + "." + k) if sect else k)
    return keys


def reference_keys():
    keys, sect = set(), None
    for line in read("docs/reference/config.md").splitlines():
        h = re.match(r"^#{2,3} (.+)$", line)
        if h:
            title = h.group(1).strip()
            sect = "" if title == "The root" else (
                None if " " in title else title)
            continue
        k = re.match(r"^\| `(\w+)` \|", line)
        if k and sect is not None:
            keys.add((sect + "." + k.group(1)) if sect else k.group(1))
    return keys


def yaml_blocks():
    files = ["README.md"] + [os.path.join(d, f) for d, _, fs in
                             os.walk(os.path.join(ROOT, "docs")) for f in fs
                             if f.endswith(".md")]
    for path in files:
        rel = os.path.relpath(os.path.join(ROOT, path), ROOT)
        lines = read(rel).splitlines()
        i = 0
        while i < len(lines):
            if lines[i].strip() == "```yaml":
                j = i + 1
                while j < len(lines) and lines[j].strip() != "```":
                    j += 1
                yield rel, i + 2, "\n".join(lines[i + 1:j]) + "\n"
                i = j
            i += 1


def check_yaml(binary, bad):
    for rel, line, text in yaml_blocks():
        if not re.search(r"^version:", text, re.M):
            text = "version: 1\n" + text
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
            f.write(text)
        try:
            r = subprocess.run([binary, "--", "--config", f.name, "--check-config"],
                               capture_output=True, text=True, timeout=30)
        finally:
            os.unlink(f.name)
        if r.returncode != 0:
            bad.append("%s:%d: the YAML block does not pass --check-config:\n%s"
                       % (rel, line, (r.stdout + r.stderr).strip()))


def check_conf(binary, bad):
    for dirpath, _, files in os.walk(os.path.join(ROOT, "conf")):
        for f in sorted(files):
            path = os.path.join(dirpath, f)
            if not f.endswith(".yaml") or not re.search(r"^version:", read(path), re.M):
                continue
            r = subprocess.run([binary, "--", "--config", path, "--check-config", "--strict"],
                               capture_output=True, text=True, timeout=30)
            if r.returncode != 0:
                bad.append("%s: does not pass --check-config --strict:\n%s" % (
                    os.path.relpath(path, ROOT), (r.stdout + r.stderr).strip()))


def exporter_families():
    """Every family sluice-exporter writes, from its own render()."""
    import importlib.machinery
    import importlib.util
    path = os.path.join(ROOT, "tools", "sluice-exporter")
    loader = importlib.machinery.SourceFileLoader("sluice_exporter", path)
    mod = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
    loader.exec_module(mod)
    zero = {k: 0 for k in mod.COUNTERS + mod.GAUGES + [k for _, k in mod.LATENCY]}
    shapes = {
        "/sluice/stats": dict(zero, parse_errors={"r": 1}),
        "/sluice/workers": {"lcore1": dict(zero, loop_age_us=1)},
        "/sluice/rules": {"version": "v", "r": {"name": "r", "allowed": 0, "rejected": 0,
                                                "shadow_rejected": 0, "degraded": 0}},
        "/sluice/tiers": {"t": {"allowed": 0, "rejected": 0, "shadow_rejected": 0,
                                "degraded": 0}},
        "/sluice/store": dict({k: 0 for k in mod.STORE_COUNTERS}, kind="redis",
                              state="closed", scripts="fcall"),
        "/sluice/regions": {"region": "a", "g": {"name": "g", "version": 1, "age_ms": 1,
                                                 "identities": 1, "static_parts": 1,
                                                 "0" * 32: 1}},
        "/sluice/decisions": {"written": 0, "file_errors": 0, "stream_errors": 0,
                              "stream_unreachable_dropped": 0},
        "/sluice/config": {"path": "p", "watch": 1, "reloads": 0, "reload_failures": 0},
        "/sluice/backend,r": {"r": dict({k: 0 for k in ("1xx", "2xx", "3xx", "4xx", "5xx",
                                                       "unanswered", "unframed", "bytes", "timed",
                                                       "sum_us", "le_us_500")}, name="r")},
    }
    text = mod.render(lambda cmd: shapes[cmd])
    return re.findall(r"^# TYPE (\S+) ", text, re.M)


def metrics(bad):
    doc = read("docs/reference/metrics.md")
    rows = set(re.findall(r"^\| `(\w+)` \|", doc, re.M))
    for fam in exporter_families():
        m = re.match(r"sluice_(?:worker_)?(\w+)_total$", fam)
        if fam in rows or ("`%s`" % fam) in doc or (m and m.group(1) in rows):
            continue
        bad.append("docs/reference/metrics.md: %s is not described" % fam)


def telemetry(bad):
    code = set()
    for d in ("app", "lib"):
        for dirpath, _, files in os.walk(os.path.join(ROOT, d)):
            for f in files:
                if f.endswith(".c"):
                    code |= set(re.findall(r'"(/sluice/\w+)"',
                                           read(os.path.join(dirpath, f))))
    doc = set(re.findall(r"`(/sluice/\w+)`", read("docs/reference/telemetry.md")))
    for c in sorted(doc - code):
        bad.append("docs/reference/telemetry.md: %s is no command" % c)
    for c in sorted(code - doc):
        bad.append("docs/reference/telemetry.md: %s is not described" % c)


LABELS = re.compile(
    r"\bissues? #?\d+\b|\b(first|second|third|fourth|fifth|sixth|seventh|eighth|"
    r"ninth|tenth|last|previous|next|this) (work )?session\b|\bsession \d+\b|"
    r"\b(day|week|sprint|milestone|iteration) \d+ of\b", re.I)


def labels(bad):
    files = subprocess.run(["git", "-C", ROOT, "ls-files"], capture_output=True,
                           text=True, check=True).stdout.split()
    for rel in files:
        if rel.endswith((".svg", ".pcap", ".png")) or rel.startswith("tests/fuzz/seeds/"):
            continue
        try:
            text = read(rel)
        except (UnicodeDecodeError, FileNotFoundError, IsADirectoryError):
            continue
        for n, line in enumerate(text.splitlines(), 1):
            m = LABELS.search(line)
            if m and rel != "scripts/check-docs.py":
                bad.append("%s:%d: a work-log label (%r): history lives in git"
                           % (rel, n, m.group(0)))


OPT = re.compile(r"(?<![\w-])--[a-z][a-z-]*[a-z]")
SLUICECTL_CMDS = ("status", "rules", "regions", "top", "reload", "diff", "why", "override",
                  "publish")


def help_options(cmd):
    out = subprocess.run(cmd + ["--help"], capture_output=True, text=True, timeout=30)
    return set(OPT.findall(out.stdout + out.stderr))


def man_options(bad, binary):
    """Every option a program's --help names is in its man page."""
    progs = [("sluice", [[binary]])]
    for tool in ("sluicectl", "sluice-exporter", "sluice-aggregator", "sluice-bypass"):
        path = os.path.join(ROOT, "tools", tool)
        cmds = [[path]] + ([[path, c] for c in SLUICECTL_CMDS] if tool == "sluicectl" else [])
        progs.append((tool, cmds))
    for name, cmds in progs:
        man = read(os.path.join("conf", "man", name + ".1")).replace("\\", "")
        said = set()
        for cmd in cmds:
            said |= help_options(cmd)
        for opt in sorted(said - set(OPT.findall(man))):
            bad.append("conf/man/%s.1: %s --help names %s, the man page does not" % (
                name, name, opt))


def main():
    bad = []
    p, r = parser_keys(), reference_keys()
    for k in sorted(p - r):
        bad.append("docs/reference/config.md: the parser accepts '%s', not described" % k)
    for k in sorted(r - p):
        bad.append("docs/reference/config.md: '%s' is described, the parser refuses it" % k)
    if len(sys.argv) > 1:
        check_yaml(sys.argv[1], bad)
        check_conf(sys.argv[1], bad)
        man_options(bad, sys.argv[1])
    telemetry(bad)
    metrics(bad)
    labels(bad)
    man = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "config-man.py"),
                          "--check"], capture_output=True, text=True)
    if man.returncode != 0:
        bad.append(man.stdout.strip())
    for b in bad:
        print(b)
    print("check-docs: %d config keys described, %d problems" % (len(r), len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
