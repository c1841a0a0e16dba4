#!/usr/bin/python3
"""The Prometheus alert rules (conf/prometheus/sluice-alerts.yml),
checked by Prometheus's own tool rather than by reading the YAML:

- `promtool check rules`: every expression parses, every rule is valid;
- `promtool test rules tests/func/alerts_test.yml`: each alert fires on
  the condition it names (synthetic series through Prometheus's rule
  engine), with its labels and summary, after its `for`, and stays quiet
  on a series beside it that does not meet the condition (one instance
  open and one closed, worker series not counted twice, one rule set and
  then two, a rule refusing ten times as often as yesterday beside one
  refusing as often).

usage: test_alerts.py
"""

import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sltest  # noqa: E402


def main():
    res = sltest.Results("alerts")
    rules = os.path.join(sltest.ROOT, "conf", "prometheus", "sluice-alerts.yml")
    here = os.path.dirname(os.path.abspath(__file__))
    r = subprocess.run(["promtool", "check", "rules", rules], capture_output=True,
                       text=True, timeout=120)
    res.check(r.returncode == 0, "promtool check rules: %s" % (
        (r.stdout + r.stderr).strip().splitlines()[-1:]))
    r = subprocess.run(["promtool", "test", "rules", "alerts_test.yml"], cwd=here,
                       capture_output=True, text=True, timeout=300)
    res.check(r.returncode == 0, "promtool test rules: every alert fires where it should, "
              "and only there%s" % ("" if r.returncode == 0 else "\n" + r.stdout + r.stderr))
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
