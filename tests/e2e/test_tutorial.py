#!/usr/bin/python3
"""docs/tutorial.md as written: its shell blocks, in order, in one bash
(set -euo pipefail), from the repository's root; then what each step says
it shows is looked for in the output. Whatever the tutorial started is
stopped and its namespaces removed, however it ended."""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sltest  # noqa: E402

TUTORIAL = os.path.join(sltest.ROOT, "docs", "tutorial.md")
CLEANUP = """
cleanup() {
    [ -n "${SLUICE_PID:-}" ] && kill -INT "$SLUICE_PID" 2>/dev/null || true
    [ -n "${BACKEND:-}" ] && kill "$BACKEND" 2>/dev/null || true
    wait 2>/dev/null || true
    scripts/netns.sh down tut
    rm -f /tmp/tut.yaml /tmp/tut-sluice.log /tmp/tut-backend.jsonl
}
trap cleanup EXIT
"""


def blocks():
    text = open(TUTORIAL).read()
    return re.findall(r"^```sh\n(.*?)^```", text, re.S | re.M)


def main():
    res = sltest.Results("tutorial")
    sh = blocks()
    res.check(len(sh) >= 8, "the tutorial has its %d shell blocks" % len(sh))
    script = "set -euo pipefail\n" + CLEANUP + "\n".join(
        'echo "### step %d"\n%s' % (i, b) for i, b in enumerate(sh))
    try:
        r = subprocess.run(["bash", "-c", script], cwd=sltest.ROOT, capture_output=True,
                           text=True, timeout=240)
        out, rc = r.stdout + r.stderr, r.returncode
    except subprocess.TimeoutExpired as e:
        out, rc = str(e.stdout or "") + str(e.stderr or ""), -1
        subprocess.run([os.path.join(sltest.ROOT, "scripts", "netns.sh"), "down", "tut"])
    print(out[-6000:])
    res.eq(rc, 0, "every command ran and exited 0")
    res.check("OK rules=1 version=" in out, "step 3: --check-config said OK")
    res.check(re.search(r"^(200 ){10}429 $", out, re.M) is not None,
              "step 5: ten 200s, then a 429")
    res.check("HTTP/1.1 429 Too Many Requests" in out, "step 5: the 429 in full")
    res.check('RateLimit-Policy: "per-key";q=10;w=50' in out and
              "X-RateLimit-Rule: per-key" in out and "Retry-After: " in out,
              "step 5: its Retry-After, RateLimit-Policy and rule, as the tutorial says")
    res.check(re.search(r"^200$", out, re.M) is not None, "step 5: another key served")
    res.check('"per-key"' in out and '"rejected"' in out, "step 6: /sluice/rules counted it")
    res.check(re.search(r"^11$", out, re.M) is not None,
              "step 6: the backend saw the eleven allowed (ten, and the other key's), "
              "none refused")
    res.check("reload (file changed): rules version" in out, "step 7: the edit applied")
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
