-- CL.THROTTLE for Redis: GCRA computed as redis-cell computes it.
--   EVALSHA <sha> 1 <key> <max_burst> <count> <period_s> [<quantity>=1]
-- Reply, as CL.THROTTLE: {limited, max_burst + 1, remaining, retry_after_s, reset_after_s}.
--
-- redis-cell's algorithm (brandur/redis-cell, src/cell/mod.rs; see docs/cl-throttle.md):
-- the key is a string holding the theoretical arrival time (TAT), written only when the
-- request is allowed, with a TTL of the TAT less now in whole milliseconds (truncated);
-- times in the reply are whole seconds, plus one when at least a millisecond is left.
-- One difference: redis-cell counts nanoseconds, but a Lua number is a double and an
-- epoch in nanoseconds needs 61 bits, so this script counts microseconds (server TIME) and
-- its emission interval is truncated to the microsecond. Negative arguments (redis-cell's
-- refunds) are refused.
local burst, count, period, q = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4] or 1)
if not (burst and count and period and q) or burst < 0 or count < 0 or period < 0 or q < 0 then
  return redis.error_reply('ERR usage: gcra.lua <key> <max_burst> <count per period> <period_s> [<quantity>]')
end
local ei = 0                                               -- emission interval, us
if count > 0 then ei = math.floor(period * 1000000 / count) end
if ei == 0 then
  return redis.error_reply('Cell error: Store error: Zero rates are not supported')
end
local limit = burst + 1
local dvt = ei * limit                                     -- delay variation tolerance
local inc = ei * q

local key = KEYS[1]
local t = redis.call('TIME')
local now = t[1] * 1000000 + t[2]
local tat = tonumber(redis.call('GET', key) or now)
local new = tat + inc
if now > tat then new = now + inc end
local diff = now - (new - dvt)

local limited, retry, ttl = 0, -1000000, 0
if diff < 0 then
  limited = 1
  if inc <= dvt then retry = -diff end
  ttl = tat - now
else
  ttl = new - now
  local px = math.floor(ttl / 1000)
  if px > 0 then
    redis.call('SET', key, string.format('%d', new), 'PX', px)
  else
    redis.call('DEL', key)                                 -- redis-cell's 0 ms expiry
  end
end

local remaining = 0
local nxt = dvt - ttl
if nxt > -ei then
  remaining = nxt / ei
  if remaining >= 0 then remaining = math.floor(remaining) else remaining = math.ceil(remaining) end
end

-- redis-cell's seconds: truncated toward zero, plus one for a leftover of >= 1 ms.
local retry_s, reset_s = math.ceil(retry / 1000000), math.ceil(ttl / 1000000)
if retry >= 0 then
  retry_s = math.floor(retry / 1000000)
  if retry - retry_s * 1000000 >= 1000 then retry_s = retry_s + 1 end
end
if ttl >= 0 then
  reset_s = math.floor(ttl / 1000000)
  if ttl - reset_s * 1000000 >= 1000 then reset_s = reset_s + 1 end
end
return {limited, limit, remaining, retry_s, reset_s}
