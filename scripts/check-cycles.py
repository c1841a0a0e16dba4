#!/usr/bin/python3
"""Dependency cycles between the C files of app/ and lib/: a.c depends on
b.c when a.c names a function or global that b.c defines (every exported
name starts with sl_ or the_; definitions start at column 0, the house
style). Prints each group of files that depend on each other in a circle
and exits 1 if one is not in scripts/cycles.allow — cycles still to
remove, listed so that no new one (and no file added to an old one)
lands meanwhile. An allowed cycle that is gone is reported too, so that
the list shrinks with the code.

usage: scripts/check-cycles.py
"""

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEF_FN = re.compile(r"^((?:sl|the)_\w+)\(", re.M)
DEF_VAR = re.compile(r"^(?!static\b|extern\b)[A-Za-z_][\w \t\*]*?\b((?:sl|the)_\w+)"
                     r"\s*(?:=[^=]|;|\[)", re.M)
NAME = re.compile(r"\b(?:sl|the)_\w+\b")
COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)


def sources():
    for top in ("app", "lib"):
        for dp, _, fs in os.walk(os.path.join(ROOT, top)):
            for f in sorted(fs):
                if f.endswith(".c"):
                    p = os.path.join(dp, f)
                    with open(p, errors="replace") as fh:
                        yield os.path.relpath(p, ROOT), COMMENT.sub(" ", fh.read())


def graph():
    text = dict(sources())
    owner = {}
    for f, t in text.items():
        for m in DEF_FN.finditer(t):
            owner.setdefault(m.group(1), set()).add(f)
        for m in DEF_VAR.finditer(t):
            owner.setdefault(m.group(1), set()).add(f)
    return {f: {o for n in set(NAME.findall(t)) for o in owner.get(n, ()) if o != f}
            for f, t in text.items()}


def cycles(g):
    """Strongly connected groups of more than one file (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(g[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(tuple(sorted(group)))

    sys.setrecursionlimit(10000)
    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def main():
    allowed = set()
    with open(os.path.join(ROOT, "scripts", "cycles.allow")) as f:
        for line in f:
            line = line.split("#", 1)[0].split()
            if line:
                allowed.add(tuple(sorted(line)))
    found = cycles(graph())
    bad = [c for c in found if c not in allowed]
    for c in found:
        print("%s cycle: %s" % ("NEW" if c in bad else "known", " ".join(c)))
    for c in sorted(allowed - set(found)):
        print("gone (remove it from scripts/cycles.allow): %s" % " ".join(c))
    print("check-cycles: %d cycles, %d not allowed" % (len(found), len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
