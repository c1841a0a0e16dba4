/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The two scripts the Redis store runs, with Redis TIME as the clock.
 * reserve: KEYS[1]; ARGV algo, count, period_ms, burst, want, need, force,
 *   span_ms, ahead_ms -> {granted, retry_ms, reset_ms, remaining}. granted
 *   is want, or the most available at or above need, or 0 (refused).
 *   ahead_ms > 0 (token bucket; a key whose demand is above its limit):
 *   want units that are not there yet are granted as a reservation when
 *   the bucket would have them within ahead_ms; granted with retry_ms
 *   > 0: the last unit good then, the others one interval of the rate
 *   apart before it (refused beyond ahead_ms, retry_ms then being when
 *   the want would fit). The bucket goes into debt by them, so
 *   a reservation is a grant at the moment its units would have been
 *   there: the limit holds, the holders queue in the store instead of
 *   asking again and again, and a hot key costs one call per lease. force = 1
 * is a charge: units a node already admitted while the store was slow or out.
 * They are taken whatever is left, into debt (a bucket below zero, a window
 * above its quota) that later grants wait out, so that every admitted unit is
 * counted once here, however it was decided. span (ms, token bucket): the units
 * were admitted over the span just past (an outage). A bucket nobody could draw
 * on meanwhile refilled to its cap and lost the rest (fields l, lt: the refill
 * lost at the last capped refill, and when); the part of it that accrued within
 * the span pays for the charged units first, as if each had been taken when it
 * was admitted. Otherwise the outage's admissions would count twice: once as
 * units, once as refill lost. A bucket used at over half its burst is kept 10 s
 * past full (others 1 s), so that an outage of that long still finds its refill
 * lost. refund: the same KEYS and ARGV with ARGV[5] = units given back.
 * Algorithms 0 and 1 (token bucket, GCRA) share the bucket conformance
 * here; 2 fixed window; 3 sliding window counter; 4 sliding log (ZSET).
 * Every key carries a TTL so idle state evaporates.
 * A rule edit hands out nothing: a bucket remembers the burst it was
 * filled to (field b) and a window the quota it was read under (KEY:W:q,
 * KEY:q for the log). What was used stays used: a lowered burst or quota
 * binds at once, a raised one is charged as used at its first call and
 * comes back by refill, with the next window, or as the log slides.
 */
#ifndef SLUICE_STORE_LUA_H
#define SLUICE_STORE_LUA_H

static const char SL_LUA_RESERVE[] =
	"local t = redis.call('TIME')\n"
	"local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / "
	"1000)\n"
	"local algo, count, period = tonumber(ARGV[1]), tonumber(ARGV[2]), "
	"tonumber(ARGV[3])\n"
	"local burst, want, need = tonumber(ARGV[4]), tonumber(ARGV[5]), "
	"tonumber(ARGV[6])\n"
	"local force = ARGV[7] == '1'\n"
	"local span = tonumber(ARGV[8] or '0')\n"
	"local ahead = tonumber(ARGV[9] or '0')\n"
	"local k = KEYS[1]\n"
	"local function requota(kq, kp, ttl)\n"
	"  local q = tonumber(redis.call('GET', kq) or '0')\n"
	"  if q == count then return 0 end\n"
	"  redis.call('SET', kq, count, 'PX', ttl)\n"
	"  if q == 0 and kp then q = tonumber(redis.call('GET', kp) or '0') "
	"end\n"
	"  if q > 0 and count > q then return count - q end\n"
	"  return 0\n"
	"end\n"
	"if algo <= 1 then\n"
	"  local s = redis.call('HMGET', k, 't', 'ts', 'b', 'l', 'lt')\n"
	"  local tok = tonumber(s[1]) or burst\n"
	"  local ts = tonumber(s[2]) or now\n"
	"  local was = tonumber(s[3]) or burst\n"
	"  local lost, lost_ts = tonumber(s[4]) or 0, tonumber(s[5]) or 0\n"
	"  if now > ts then\n"
	"    local r = tok + (now - ts) * count / period\n"
	"    if r > was then lost = r - was; lost_ts = now end\n"
	"    tok = math.min(was, r); ts = now\n"
	"  end\n"
	"  if was > burst then tok = tok - (was - burst) end\n"
	"  tok = math.min(burst, tok)\n"
	"  local g = 0\n"
	"  local wait = 0\n"
	"  if force or tok >= want then g = want elseif tok >= need then g = "
	"math.floor(tok) end\n"
	"  local late = 0\n"
	"  if g == 0 and ahead > 0 and want <= burst then\n"
	"    wait = math.ceil((want - tok) * period / count)\n"
	"    if wait <= ahead then g = want else late = wait - ahead; wait = 0 "
	"end\n"
	"  end\n"
	"  tok = tok - g\n"
	"  if force and span > 0 and lost > 0 and lost_ts > now - span then\n"
	"    local back = math.min(g, lost, (lost_ts - now + span) * count / "
	"period)\n"
	"    tok = math.min(burst, tok + back); lost = lost - back\n"
	"  end\n"
	"  redis.call('HSET', k, 't', tostring(tok), 'ts', ts, 'b', burst, "
	"'l', tostring(lost), 'lt', lost_ts)\n"
	"  local full = math.ceil((burst - tok) * period / count)\n"
	"  local keep = 1000\n"
	"  if tok < burst / 2 then keep = 10000 end\n"
	"  redis.call('PEXPIRE', k, full + keep)\n"
	"  local retry = wait\n"
	"  if g == 0 then retry = math.ceil((need - tok) * period / count) "
	"end\n"
	"  if g == 0 and late > 0 then retry = late end\n"
	"  return {g, retry, full, math.floor(tok)}\n"
	"elseif algo == 2 then\n"
	"  local w = math.floor(now / period)\n"
	"  local kw = k .. ':' .. w\n"
	"  local n = tonumber(redis.call('GET', kw) or '0')\n"
	"  local add = requota(kw .. ':q', k .. ':' .. (w - 1) .. ':q', 2 * "
	"period + 1000)\n"
	"  if add > 0 then n = n + add; redis.call('INCRBY', kw, add); "
	"redis.call('PEXPIRE', kw, period + 1000) end\n"
	"  local g = 0\n"
	"  if force or n + want <= count then g = want elseif n + need <= "
	"count then g = count - n end\n"
	"  if g > 0 then redis.call('INCRBY', kw, g); redis.call('PEXPIRE', "
	"kw, period + 1000) end\n"
	"  local left = (w + 1) * period - now\n"
	"  local retry = 0\n"
	"  if g == 0 then retry = left end\n"
	"  return {g, retry, left, math.max(0, count - n - g)}\n"
	"elseif algo == 3 then\n"
	"  local w = math.floor(now / period)\n"
	"  local cur = tonumber(redis.call('GET', k .. ':' .. w) or '0')\n"
	"  local add = requota(k .. ':' .. w .. ':q', k .. ':' .. (w - 1) .. "
	"':q', 2 * period + 1000)\n"
	"  if add > 0 then cur = cur + add; redis.call('INCRBY', k .. ':' .. "
	"w, add); redis.call('PEXPIRE', k .. ':' .. w, 2 * period + 1000) "
	"end\n"
	"  local prev = tonumber(redis.call('GET', k .. ':' .. (w - 1)) or "
	"'0')\n"
	"  local e = now - w * period\n"
	"  local est = prev * (period - e) / period + cur\n"
	"  local g = 0\n"
	"  if force or est + want <= count then g = want elseif est + need <= "
	"count then g = math.floor(count - est) end\n"
	"  if g > 0 then redis.call('INCRBY', k .. ':' .. w, g); "
	"redis.call('PEXPIRE', k .. ':' .. w, 2 * period + 1000) end\n"
	"  local retry = 0\n"
	"  if g == 0 then\n"
	"    if prev > 0 and cur + need <= count then\n"
	"      retry = math.ceil(period - (count - cur - need) * period / prev "
	"- e)\n"
	"    else retry = period - e + period end\n"
	"    if retry < 1 then retry = 1 end\n"
	"  end\n"
	"  return {g, retry, period - e + period, math.max(0, math.floor(count "
	"- est - g))}\n"
	"else\n"
	"  local add = requota(k .. ':q', nil, period + 1000)\n"
	"  if add > 0 then\n"
	"    local seq = redis.call('INCR', k .. ':seq')\n"
	"    redis.call('PEXPIRE', k .. ':seq', period + 1000)\n"
	"    for i = 1, add do redis.call('ZADD', k, now, seq .. ':r' .. i) "
	"end\n"
	"    redis.call('PEXPIRE', k, period + 1000)\n"
	"  end\n"
	"  redis.call('ZREMRANGEBYSCORE', k, '-inf', now - period)\n"
	"  local n = redis.call('ZCARD', k)\n"
	"  local g = 0\n"
	"  if force then g = need elseif n + want <= count then g = want "
	"elseif n + need <= count then g = need end\n"
	"  if g > 0 then\n"
	"    local seq = redis.call('INCR', k .. ':seq')\n"
	"    redis.call('PEXPIRE', k .. ':seq', period + 1000)\n"
	"    for i = 1, g do redis.call('ZADD', k, now, seq .. ':' .. i) "
	"end\n"
	"    redis.call('PEXPIRE', k, period + 1000)\n"
	"    return {g, 0, period, math.max(0, count - n - g)}\n"
	"  end\n"
	"  local old = redis.call('ZRANGE', k, n + need - count - 1, n + need "
	"- count - 1, 'WITHSCORES')\n"
	"  local retry = tonumber(old[2]) + period - now\n"
	"  if retry < 1 then retry = 1 end\n"
	"  return {0, retry, retry, 0}\n"
	"end\n";

static const char SL_LUA_REFUND[] =
	"local t = redis.call('TIME')\n"
	"local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / "
	"1000)\n"
	"local algo, count, period = tonumber(ARGV[1]), tonumber(ARGV[2]), "
	"tonumber(ARGV[3])\n"
	"local burst, units = tonumber(ARGV[4]), tonumber(ARGV[5])\n"
	"local k = KEYS[1]\n"
	"if algo <= 1 then\n"
	"  local s = redis.call('HMGET', k, 't')\n"
	"  if s[1] then redis.call('HSET', k, 't', tostring(math.min(burst, "
	"tonumber(s[1]) + units))) end\n"
	"elseif algo <= 3 then\n"
	"  local kw = k .. ':' .. math.floor(now / period)\n"
	"  local n = tonumber(redis.call('GET', kw) or '0')\n"
	"  if n > 0 then redis.call('DECRBY', kw, math.min(n, units)) end\n"
	"end\n"
	"return 1\n";

#endif
