#!/usr/bin/python3
"""The walls between folders: every quoted #include of a C file in a lib
module (lib/M/) or an app subject (app/sluice/S/) must name a header of
its own folder or of a folder its meson.build declares it uses, directly
or through those (lib: deps = [sl_deps['x'], ...]; app: uses = ['s', ...]
and sl_deps['x'] in deps). meson's include paths already refuse most
such includes; this also refuses a relative path ("../x/y.h") and a
header that only the build directory's include path happened to find,
and names the folder that would have to be declared.

usage: scripts/check-deps.py
"""

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
LIB_USE = re.compile(r"sl_deps\['(\w+)'\]")
LIST = re.compile(r"^\s*(uses|deps)\s*=\s*\[", re.M)


def lists(text):
    """(name, body) of each uses = [...] and deps = [...], brackets
    balanced (sl_deps['x'] has its own)."""
    for m in LIST.finditer(text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"[": 1, "]": -1}.get(text[i], 0)
            i += 1
        yield m.group(1), text[m.end():i - 1]


def declared(meson):
    """(subjects used, lib modules used) as a folder's meson.build says."""
    with open(meson) as f:
        text = f.read()
    uses, libs = [], []
    for kind, body in lists(text):
        if kind == "uses":
            uses += re.findall(r"'(\w+)'", body)
        libs += LIB_USE.findall(body)
    return uses, libs


def folders():
    """Each walled folder: (key, path, direct uses as keys)."""
    out = {}
    for top, prefix in (("lib", "lib:"), (os.path.join("app", "sluice"), "app:")):
        base = os.path.join(ROOT, top)
        for name in sorted(os.listdir(base)):
            path = os.path.join(base, name)
            meson = os.path.join(path, "meson.build")
            if not os.path.isfile(meson):
                continue
            uses, libs = declared(meson)
            out[prefix + name] = (path, ["app:" + u for u in uses] + ["lib:" + m for m in libs])
    return out


def closure(fs, key, seen=None):
    seen = set() if seen is None else seen
    for u in fs[key][1]:
        if u not in seen and u in fs:
            seen.add(u)
            closure(fs, u, seen)
    return seen


def main():
    fs = folders()
    where = {}  # header name -> folder keys that hold it
    for key, (path, _) in fs.items():
        for f in os.listdir(path):
            if f.endswith(".h"):
                where.setdefault(f, []).append(key)
    bad = 0
    for key, (path, _) in sorted(fs.items()):
        allowed = closure(fs, key) | {key}
        for f in sorted(os.listdir(path)):
            if not f.endswith((".c", ".h")):
                continue
            with open(os.path.join(path, f)) as fh:
                names = INCLUDE.findall(fh.read())
            for inc in names:
                rel = os.path.relpath(os.path.join(path, f), ROOT)
                if "/" in inc:
                    print("check-deps: %s includes %s: a path, not a declared folder's "
                          "header" % (rel, inc))
                    bad += 1
                    continue
                owners = where.get(inc)
                if owners is None or set(owners) & allowed:
                    continue  # a system or generated header, or allowed
                print("check-deps: %s includes %s, of %s, which %s does not declare"
                      % (rel, inc, " or ".join(owners), key))
                bad += 1
    print("check-deps: %d folders, %d includes beyond their walls" % (len(fs), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
