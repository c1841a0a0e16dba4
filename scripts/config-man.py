#!/usr/bin/python3
"""sluice.yaml(5) from docs/reference/config.md: one source for the
configuration's reference, two forms. Writes conf/man/sluice.yaml.5, or
with --check says whether the page in the tree is the one the reference
makes (scripts/check-docs.py runs that).

usage: scripts/config-man.py [--check]
"""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
SRC = os.path.join(ROOT, "docs", "reference", "config.md")
OUT = os.path.join(ROOT, "conf", "man", "sluice.yaml.5")


def roff(text):
    """Markdown inline text as roff: code in bold, links as their text."""
    text = text.replace("\\", "\\e")
    text = re.sub(r"\[([^\]]+)\]\([^)]+\)", r"\1", text)
    text = re.sub(r"`([^`]+)`", lambda m: "\\fB" + m.group(1) + "\\fR", text)
    text = text.replace("**", "")
    return text.replace("–", "\\(en").replace("—", "\\(em").replace("×", "x")


def line(s):
    s = roff(s)
    return ("\\&" + s) if s.startswith((".", "'")) else s


def render(md):
    out = ['.TH SLUICE.YAML 5 "" "sluice" "File Formats"',
           ".SH NAME", "sluice.yaml \\- the sluice appliance's configuration file",
           ".SH DESCRIPTION"]
    in_code = False
    para = []

    def flush():
        if para:
            out.append(line(" ".join(para)))
            para.clear()

    for raw in md.splitlines()[1:]:
        if raw.startswith("```"):
            flush()
            out.append(".EX" if not in_code else ".EE")
            in_code = not in_code
            continue
        if in_code:
            out.append(("\\&" + raw.replace("\\", "\\e")) if raw.startswith((".", "'"))
                       else raw.replace("\\", "\\e"))
            continue
        if raw.startswith("#"):
            flush()
            title = raw.lstrip("#").strip()
            out.append((".SH " if raw.startswith("## ") else ".SS ") + roff(title).upper()
                       if raw.startswith("## ") else ".SS " + roff(title))
            continue
        if raw.startswith("| key ") or raw.startswith("| ---"):
            continue
        cells = [c.strip() for c in raw.strip().strip("|").split("|")]
        if raw.startswith("| `") and len(cells) == 5:
            flush()
            key, kind, default, applies, meaning = cells
            key = key.strip("`")
            out.append(".TP")
            what = [kind] + ([default] if default == "required" else
                             ["default " + default] if default else []) + [applies]
            out.append(line("`%s` (%s)" % (key, "; ".join(what))))
            out.append(line(meaning))
            continue
        if not raw.strip():
            flush()
            out.append(".PP")
            continue
        para.append(raw.strip())
    flush()
    out += [".SH SEE ALSO", "\\fBsluice\\fR(1), \\fBsluicectl\\fR(1)"]
    text = "\n".join(out) + "\n"
    return re.sub(r"(\.PP\n)+", ".PP\n", text).replace(".PP\n.SH", ".SH").replace(
        ".PP\n.SS", ".SS").replace(".PP\n.TP", ".TP").replace(".PP\n.EX", ".EX")


def main():
    text = render(open(SRC, encoding="utf-8").read())
    if "--check" in sys.argv:
        same = os.path.exists(OUT) and open(OUT, encoding="utf-8").read() == text
        if not same:
            print("conf/man/sluice.yaml.5 is not what docs/reference/config.md makes: "
                  "run scripts/config-man.py")
        return 0 if same else 1
    with open(OUT, "w", encoding="utf-8") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
