#!/usr/bin/python3
"""End to end enforcement with curl and a real backend: a burst of five gets
exactly five through; Retry-After is honest (waiting it works, not waiting
does not); a blocked address gets 403; of two limits the strictest is
reported; shadow rules never reject; the backend sees only what was allowed.

usage: test_enforce.py PATH/TO/sluice
"""

import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import sltest  # noqa: E402

URLLIB = """
import sys, urllib.request, urllib.error
req = urllib.request.Request(sys.argv[1], headers={"X-API-Key": "k-retry"})
for _ in range(2):
    try:
        urllib.request.urlopen(req, timeout=5).read()
        print("200")
    except urllib.error.HTTPError as e:
        print(e.code, e.headers["Retry-After"], e.headers["X-RateLimit-Rule"])
        break
"""
CONF = os.path.join(os.path.dirname(os.path.abspath(__file__)), "enforce.yaml")
S4, S6 = "198.18.0.2", "2001:2::2"


def main():
    res = sltest.Results("enforce")
    with tempfile.TemporaryDirectory() as tmp, \
            sltest.Topology(sys.argv[1], CONF, tmp) as t:
        allowed_paths, denied_paths = [], []

        def get(path, *args, host=S4):
            st, hdrs, body = t.curl(*args, "http://%s%s" % (host, path))
            (allowed_paths if st == 200 else denied_paths).append(path)
            return st, hdrs, body

        # a burst of five: exactly five pass
        codes = [get("/v1/burst/%d" % i, "-H", "X-API-Key: k-burst")[0] for i in range(8)]
        res.eq(codes, [200] * 5 + [429] * 3, "burst 5: exactly five through, then 429")
        st, h, body = get("/v1/burst/x", "-H", "X-API-Key: k-burst")
        res.eq(h.get("x-ratelimit-rule"), "burst-five", "429 names the rule")
        res.eq(h.get("connection"), "close", "429 closes the connection")
        res.check(body.startswith('{"error":"rate_limited","rule":"burst-five","retry_after":'),
                  "429 JSON body")
        res.check(h.get("ratelimit-policy") == '"burst-five";q=5;w=50',
                  "RateLimit-Policy: the burst of 5 binds first, told over the 50 s "
                  "6/min refills it")
        res.check(1 <= int(h.get("retry-after", 0)) <= 10, "Retry-After within the refill time")

        # Retry-After is honest
        st, h, _ = get("/v1/retry/1", "-H", "X-API-Key: k-retry")
        res.eq(st, 200, "first request in a second passes")
        st, h, _ = get("/v1/retry/2", "-H", "X-API-Key: k-retry")
        res.eq(st, 429, "second in the same second is refused")
        wait = int(h.get("retry-after", "0"))
        res.eq(wait, 1, "Retry-After: 1")
        st, _, _ = get("/v1/retry/3", "-H", "X-API-Key: k-retry")
        res.eq(st, 429, "retrying well before Retry-After is refused")
        time.sleep(wait + 0.05)
        st, _, _ = get("/v1/retry/4", "-H", "X-API-Key: k-retry")
        res.eq(st, 200, "retrying after Retry-After succeeds")

        # a second, independent HTTP client reads the 429 the same way
        r = t.client("/usr/bin/python3", "-c", URLLIB, "http://%s/v1/retry/5" % S4)
        lines = r.stdout.split("\n")
        allowed_paths.extend(["/v1/retry/5"] * lines.count("200"))
        denied_paths.append("/v1/retry/5")
        res.check("429 1 per-second" in lines,
                  "Python's http.client/urllib reads status, Retry-After and the rule")

        # two limits: the strictest is the one reported
        st, _, _ = get("/v1/expensive/a", "-H", "X-API-Key: k-two")
        res.eq(st, 200, "first expensive call passes")
        st, h, _ = get("/v1/expensive/a", "-H", "X-API-Key: k-two")
        res.eq(st, 429, "second expensive call refused")
        res.eq(h.get("x-ratelimit-rule"), "endpoint-hour",
               "the strictest of two limits is named (an hour beats a second)")
        res.check(int(h.get("retry-after", 0)) >= 3600, "its Retry-After is the longer wait")

        # blocklist: a second client address in a blocked /32 gets 403
        t.client("ip", "addr", "add", "198.18.0.100/24", "dev", "eth0")
        st, h, body = get("/v1/blocked", "--interface", "198.18.0.100")
        res.eq(st, 403, "a blocked CIDR gets 403")
        res.eq(body, '{"error":"forbidden","rule":"blocklist"}\n', "403 body")
        st, _, _ = get("/v1/not-blocked")
        res.eq(st, 200, "the other address of the same client is not blocked")

        # shadow rules never reject, but count
        codes = [get("/v1/shadow/%d" % i)[0] for i in range(3)]
        res.eq(codes, [200] * 3, "shadow rule never rejects")

        # IPv6 is answered the same way
        codes = [get("/v1/burst/six%d" % i, "-g", "-H", "X-API-Key: k-six", host="[%s]" % S6)[0]
                 for i in range(6)]
        res.eq(codes, [200] * 5 + [429], "IPv6: five through, then 429")

        time.sleep(0.3)
        seen = [g["path"] for g in t.backend_log()]
        res.eq(sorted(seen), sorted(allowed_paths), "the backend saw exactly the allowed requests")
        res.check(not set(seen) & (set(denied_paths) - set(allowed_paths)),
                  "no refused request reached the backend")
        s = t.sluice.stats()
        res.eq(s["allowed"], len(allowed_paths), "allowed counter = 200s")
        res.eq(s["rejected"] + s["blocked"], len(denied_paths), "rejected + blocked = refusals")
        res.eq(s["blocked"], 1, "blocked")
        res.eq(s["shadow_rejected"], 2, "shadow_rejected")
        res.check(s["absorbed"] >= 1, "client FINs after a 429 were acknowledged")
        res.eq(t.sluice.stop(), 0, "clean shutdown")
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
