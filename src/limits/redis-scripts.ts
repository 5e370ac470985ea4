import { createHash } from 'node:crypto';

/**
 * One Lua script per Counters operation: Redis runs a script atomically, so each check-and-count is
 * one step however many processes share the key. Each script touches only KEYS[1], so on Redis
 * Cluster it runs in that key's slot. Every number crosses the boundary as a string formatted with
 * %.17g, which round-trips a double exactly: the answers equal MemoryCounters' to the last bit
 * (Lua's tostring and Redis's integer replies would round or truncate).
 *
 * Times are the caller's `now` (ms since the epoch), never Redis's clock, so a script answers what
 * MemoryCounters would answer for the same calls. Keys expire by relative PEXPIRE (the remaining
 * life plus EXPIRY_SLACK_MS): memory is reclaimed even when the processes' clocks disagree slightly
 * with Redis's, and the script's own comparison decides whether a value is still live.
 */

export interface LuaScript {
  readonly source: string;
  readonly sha1: string;
}

export const EXPIRY_SLACK_MS = 1_000;

const PRELUDE = `
local function s(x) return string.format('%.17g', x) end
local function ttl(k, ms) redis.call('PEXPIRE', k, math.max(1, math.ceil(ms)) + ${EXPIRY_SLACK_MS}) end
local k = KEYS[1]
local now = tonumber(ARGV[1])
`;

function script(body: string): LuaScript {
  const source = PRELUDE + body;
  return { source, sha1: createHash('sha1').update(source).digest('hex') };
}

/**
 * ARGV: now, windowMs, member → {count, resetAt}. Fields c (count), r (window end), w (the length it
 * was opened with), m (the member whose clock opened it). The member that opened a window ends it at
 * most its length after now (rules/clock-steps.ts windowEnd: its clock stepped back); another
 * member's window is left as it is (their clocks may disagree by a little).
 */
export const HIT = script(`
local win = tonumber(ARGV[2])
local v = redis.call('HMGET', k, 'c', 'r', 'w', 'm')
local c = tonumber(v[1])
local r = tonumber(v[2])
if c == nil or r == nil or now >= r then
  c = 1
  r = now + win
  redis.call('HSET', k, 'c', 1, 'r', s(r), 'w', s(win), 'm', ARGV[3])
  ttl(k, win)
else
  local opened = tonumber(v[3])
  if v[4] == ARGV[3] and opened ~= nil and r > now + opened then
    r = now + opened
    redis.call('HSET', k, 'r', s(r))
    ttl(k, opened)
  end
  c = redis.call('HINCRBY', k, 'c', 1)
end
return {s(c), s(r)}
`);

/** ARGV: now, value, expiresAt → the value held after. Fields v (value), e (expiry). */
export const SEED = script(`
local v = redis.call('HMGET', k, 'v', 'e')
if v[1] and now < tonumber(v[2]) then return v[1] end
local e = tonumber(ARGV[3])
redis.call('HSET', k, 'v', s(tonumber(ARGV[2])), 'e', s(e))
ttl(k, e - now)
return s(tonumber(ARGV[2]))
`);

/** ARGV: now, by, expiresAt → the sum. */
export const ADD = script(`
local by = tonumber(ARGV[2])
local v = redis.call('HMGET', k, 'v', 'e')
if v[1] and now < tonumber(v[2]) then
  local n = tonumber(v[1]) + by
  redis.call('HSET', k, 'v', s(n))
  return s(n)
end
local e = tonumber(ARGV[3])
redis.call('HSET', k, 'v', s(by), 'e', s(e))
ttl(k, e - now)
return s(by)
`);

/** ARGV: now, amount, limit, expiresAt → {1|0, total}. */
export const RESERVE = script(`
local amount = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local v = redis.call('HMGET', k, 'v', 'e')
local live = v[1] and now < tonumber(v[2])
local cur = 0
if live then cur = tonumber(v[1]) end
local sum = cur + amount
if sum > limit then return {0, s(cur)} end
if live then
  redis.call('HSET', k, 'v', s(sum))
else
  local e = tonumber(ARGV[4])
  redis.call('HSET', k, 'v', s(sum), 'e', s(e))
  ttl(k, e - now)
end
return {1, s(sum)}
`);

/** ARGV: now, baseMs, maxMs, resetAfterMs → {blocked 1|0, waitMs}. Fields a (attempts), l (last), u (until). */
export const STRIKE = script(`
local base = tonumber(ARGV[2])
local max = tonumber(ARGV[3])
local reset = tonumber(ARGV[4])
local v = redis.call('HMGET', k, 'a', 'l', 'u')
local a = tonumber(v[1])
local l = tonumber(v[2])
local u = tonumber(v[3])
if a == nil or l == nil or u == nil or now - l >= reset then
  a = 0
  u = now
end
local blocked = 0
if now < u then blocked = 1 end
a = a + 1
local wait = math.min(base * 2 ^ math.min(a - 1, 52), max)
redis.call('HSET', k, 'a', a, 'l', s(now), 'u', s(now + wait))
ttl(k, reset)
return {blocked, s(wait)}
`);

/**
 * ARGV: now, intervalMs, trigger 1|0, member → alerts covered. Fields p (pending), s (sent at;
 * absent = never), sm (the member whose clock sent it). A send time the member's own clock wrote in
 * its future reads as now (rules/clock-steps.ts sentAtSeen), here and in FLUSH.
 */
export const COALESCE = script(`
local interval = tonumber(ARGV[2])
local v = redis.call('HMGET', k, 'p', 's', 'sm')
local p = (tonumber(v[1]) or 0) + 1
local sent = tonumber(v[2])
ttl(k, 10 * interval)
if sent ~= nil and sent > now and v[3] == ARGV[4] then
  sent = now
  redis.call('HSET', k, 's', s(now))
end
if ARGV[3] ~= '1' or (sent ~= nil and now - sent < interval) then
  redis.call('HSET', k, 'p', p)
  return '0'
end
redis.call('HSET', k, 'p', 0, 's', s(now), 'sm', ARGV[4])
return s(p)
`);

/** ARGV: now, intervalMs, member → alerts covered by the trailing alert. */
export const FLUSH = script(`
local interval = tonumber(ARGV[2])
local v = redis.call('HMGET', k, 'p', 's', 'sm')
local p = tonumber(v[1]) or 0
local sent = tonumber(v[2])
if p == 0 or sent == nil then return '0' end
if sent > now and v[3] == ARGV[3] then
  redis.call('HSET', k, 's', s(now))
  return '0'
end
if now - sent < interval then return '0' end
redis.call('HSET', k, 'p', 0, 's', s(now), 'sm', ARGV[3])
return s(p)
`);

/**
 * ARGV: now, expiresAt, max distinct, the part as JSON {n, r, o, i, c, f, l} (origins already
 * JSON-encoded strings, so `null` is a value) → 1. mergeSummaryParts' rule, field by field: n
 * (attempts), r:<reason>, o:<origin> and i:<ip> (each holding its rank among the distinct values, so
 * the first ones can be listed first: a large hash does not keep insertion order), oc / ic (distinct
 * held), cap, f (first), l (last), e (expiry).
 */
export const POOL_SUMMARY = script(`
local e = tonumber(ARGV[2])
local max = tonumber(ARGV[3])
local p = cjson.decode(ARGV[4])
local held = tonumber(redis.call('HGET', k, 'e'))
if held ~= nil and now >= held then redis.call('DEL', k) end
redis.call('HINCRBY', k, 'n', p.n)
for reason, n in pairs(p.r) do redis.call('HINCRBY', k, 'r:' .. reason, n) end
local function unite(prefix, countField, values)
  local count = tonumber(redis.call('HGET', k, countField)) or 0
  for _, v in ipairs(values) do
    if redis.call('HEXISTS', k, prefix .. v) == 0 then
      if count >= max then redis.call('HSET', k, 'cap', 1)
      else
        redis.call('HSET', k, prefix .. v, count)
        count = count + 1
      end
    end
  end
  redis.call('HSET', k, countField, count)
end
unite('o:', 'oc', p.o)
unite('i:', 'ic', p.i)
if p.c then redis.call('HSET', k, 'cap', 1) end
local f = redis.call('HGET', k, 'f')
if not f or p.f < f then redis.call('HSET', k, 'f', p.f) end
local l = redis.call('HGET', k, 'l')
if not l or p.l > l then redis.call('HSET', k, 'l', p.l) end
redis.call('HSET', k, 'e', s(e))
ttl(k, e - now)
return 1
`);

/** ARGV: now → the pooled hash's fields and values, flat (empty when absent or expired); removes it. */
export const TAKE_SUMMARY = script(`
local v = redis.call('HGETALL', k)
redis.call('DEL', k)
local held = nil
for j = 1, #v, 2 do if v[j] == 'e' then held = tonumber(v[j + 1]) end end
if held == nil or now >= held then return {} end
return v
`);
