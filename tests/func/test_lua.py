#!/usr/bin/python3
"""The Redis scripts against the C authority: the same random
sequences of grants and give-backs, with their times, through
sl_lease_grant/sl_lease_give_back (tests/tools/limit_replay) and through
the reserve and refund scripts of app/sluice/store/store_lua.h on a real
redis-server, for all five algorithms. Redis TIME is replaced by the
step's time in a copy of the scripts (one asserted substitution; the
scripts are otherwise as shipped), and a whole sequence runs inside one
EVAL so that no key expires by the wall clock meanwhile. Rates are
powers of two per millisecond, so the scripts' floating point is exact
where the C side is exact. Granted units must agree at every step.

Then the charge path only the scripts have: units taken whatever is left
put the bucket (or the window) into debt that later grants wait out, and
a reservation is granted with the wait until its units are there.

usage: test_lua.py PATH/TO/limit_replay
"""

import os
import random
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sltest  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
LUA_H = os.path.join(HERE, "..", "..", "app", "sluice", "store", "store_lua.h")
NOW = "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
ALGOS = {0: "token_bucket", 1: "gcra", 2: "fixed_window", 3: "sliding_window",
         4: "sliding_log"}


def script(name):
    """A script's Lua text, from the C string in store_lua.h."""
    src = open(LUA_H).read()
    m = re.search(r"%s\[\] =\n(.*?);\n" % name, src, re.S)
    parts = re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(1))
    return "".join(p.encode().decode("unicode_escape") for p in parts)


def with_clock(lua):
    """The script with Redis TIME replaced by the time passed in."""
    assert lua.count("redis.call('TIME')") == 1 and lua.count(NOW) == 1, "TIME moved"
    lua = lua.replace("local t = redis.call('TIME')\n", "")
    return lua.replace(NOW, "local now = tonumber(ARGV[#ARGV])\n")


def driver():
    """One EVAL that runs a whole sequence: steps in ARGV as
    op,t,a,b,algo,count,period,burst,force,span,ahead."""
    reserve = with_clock(script("SL_LUA_RESERVE"))
    refund = with_clock(script("SL_LUA_REFUND"))
    return ("local function reserve(KEYS, ARGV)\n%s\nend\n"
            "local function refund(KEYS, ARGV)\n%s\nend\n"
            "local out = {}\n"
            "for i = 1, #ARGV, 11 do\n"
            "  local op, t = ARGV[i], ARGV[i + 1]\n"
            "  local a, b = ARGV[i + 2], ARGV[i + 3]\n"
            "  local algo, count, period, burst = ARGV[i + 4], ARGV[i + 5], ARGV[i + 6], "
            "ARGV[i + 7]\n"
            "  if op == 'g' then\n"
            "    local r = reserve(KEYS, {algo, count, period, burst, a, b, ARGV[i + 8], "
            "ARGV[i + 9], ARGV[i + 10], t})\n"
            "    out[#out + 1] = r[1] .. ' ' .. r[4] .. ' ' .. r[2]\n"
            "  else\n"
            "    refund(KEYS, {algo, count, period, burst, a, t})\n"
            "    out[#out + 1] = 'ok'\n"
            "  end\n"
            "end\n"
            "return out\n") % (reserve, refund)


def run_lua(port, key, header, steps, force=0, span=0, ahead=0):
    algo, count, period, burst = header
    argv = []
    for st in steps:
        op, t, a = st[0], st[1], st[2]
        b = st[3] if op == "g" else 0
        argv += [op, t, a, b, algo, count, period, burst, force, span, ahead]
    r = subprocess.run(["redis-cli", "-p", str(port), "EVAL", driver(), "1", key] +
                       [str(x) for x in argv], capture_output=True, text=True)
    return r.stdout.split("\n")[:len(steps)] if r.returncode == 0 else [r.stderr]


def run_c(tool, header, steps):
    text = "%d %d %d %d\n" % header + "".join(
        ("g %d %d %d\n" % s[1:4]) if s[0] == "g" else ("r %d %d\n" % s[1:3]) for s in steps)
    r = subprocess.run([tool], input=text, capture_output=True, text=True)
    return r.stdout.split("\n")[:len(steps)]


def sequence(rnd, header, n=300):
    algo, count, period, burst = header
    gap = period // count  # one unit's refill
    t, steps = 1 << 20, []
    for _ in range(n):
        t += rnd.choice((0, 1, gap // 4, gap // 2, gap, gap * 2, period // 2, period * 3))
        if algo != 4 and rnd.random() < 0.1:
            steps.append(("r", t, rnd.randint(1, 3)))
            continue
        need = rnd.randint(1, 2)
        # the log grants want or need alone (no most between)
        want = need if rnd.random() < 0.6 else need + rnd.randint(1, 4)
        steps.append(("g", t, want, need))
    return steps


def differential(res, tool, port):
    rnd = random.Random(20)
    headers = [(0, 16, 1024, 8), (0, 64, 1024, 16), (1, 16, 1024, 8),
               (2, 8, 1024, 8), (3, 8, 1024, 8), (4, 8, 1024, 8), (4, 32, 4096, 32),
               # a day's limit (ms), where a window's weight times its
               # length passes 64 bits
               (0, 50, 86400000, 50), (1, 50, 86400000, 50), (2, 50, 86400000, 50),
               (3, 50, 86400000, 50)]
    for h in headers:
        for rep in range(3):
            steps = sequence(rnd, h)
            c = run_c(tool, h, steps)
            lua = run_lua(port, "sl:{diff}:%d:%d:%d" % (h[0], h[1], rep), h, steps)
            # granted units at every step; the count left too where both
            # keep it the same way (whole units)
            bad = [(i, steps[i], c[i], lua[i]) for i in range(len(steps))
                   if c[i].split()[:1] != lua[i].split()[:1]]
            grants = sum(int(x.split()[0]) for x in c if x != "ok")
            res.check(not bad, "%s %d/%d ms burst %d, run %d: %d steps, %d units granted, "
                      "C and Lua agree at every step%s" % (
                          ALGOS[h[0]], h[1], h[2], h[3], rep, len(steps), grants,
                          "" if not bad else "; first differences: %s" % bad[:3]))


def debt(res, port):
    """The charge path: units taken whatever is left, the wait after."""
    h = (0, 16, 1024, 8)  # 1 unit per 64 ms
    t0 = 1 << 22
    steps = [("g", t0, 8, 8), ("g", t0, 5, 5), ("g", t0 + 64, 1, 1)]
    out = run_lua(port, "sl:{debt}:tb", h, steps[:1]) + \
        run_lua(port, "sl:{debt}:tb", h, steps[1:2], force=1) + \
        run_lua(port, "sl:{debt}:tb", h, steps[2:])
    res.eq([o.split()[0] for o in out], ["8", "5", "0"],
           "a charge beyond what is left is taken (8 granted, 5 charged, then refused)")
    res.eq(out[2].split()[2], str(6 * 64 - 64),
           "the bucket in debt by 5: the next unit waits 6 units' refill (%s ms)" % out[2])
    w = run_lua(port, "sl:{debt}:w", (2, 8, 1024, 8), [("g", t0, 8, 8)]) + \
        run_lua(port, "sl:{debt}:w", (2, 8, 1024, 8), [("g", t0 + 1, 3, 3)], force=1) + \
        run_lua(port, "sl:{debt}:w", (2, 8, 1024, 8), [("g", t0 + 2, 1, 1)])
    res.eq([o.split()[0] for o in w], ["8", "3", "0"],
           "a fixed window charged past its quota refuses the rest of it")
    # a reservation: 4 units not there, within 1 s: granted with the wait
    r = run_lua(port, "sl:{debt}:rs", h, [("g", t0, 8, 8)]) + \
        run_lua(port, "sl:{debt}:rs", h, [("g", t0 + 64, 4, 4)], ahead=1000) + \
        run_lua(port, "sl:{debt}:rs", h, [("g", t0 + 64, 8, 8)], ahead=100)
    res.eq([(o.split()[0], o.split()[2]) for o in r], [("8", "0"), ("4", "192"), ("0", "604")],
           "a reservation: 4 units granted, the last good in 192 ms (3 more units' refill); "
           "8 more within 100 ms refused, to ask again when they would fit: in 11 units' "
           "refill less the 100 ms (%s)" % r)


def main():
    tool = sys.argv[1]
    res = sltest.Results("lua")
    port = sltest.free_port()
    with tempfile.TemporaryDirectory() as tmp:
        with sltest.redis_server(port, tmp):
            differential(res, tool, port)
            debt(res, port)
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
