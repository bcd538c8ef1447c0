-- RL.FIXED for Redis: fixed window counter (docs/algorithms.md), the INCR pattern.
--   EVALSHA <sha> 1 <key> <limit> <window_s> [<cost>=1]
-- Reply, as RL.FIXED: {limited, limit, remaining, retry_after_ms, reset_after_ms}.
--
-- One integer string per key. Windows are aligned to the Unix epoch: the key expires at
-- the last millisecond of its window, so a key that exists always holds the current
-- window's count. An admission is INCRBY (plus PEXPIREAT when it creates the key); a
-- rejection takes its cost back, so it changes nothing. Time is the server's TIME, in
-- microseconds, so windows are aligned to the millisecond rather than the nanosecond.
local limit, window, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3] or 1)
if not (limit and window and cost) or limit < 0 or window <= 0 or cost < 0 then
  return redis.error_reply('ERR usage: fixed.lua <key> <limit> <window_s> [<cost>]')
end
local key = KEYS[1]
local t = redis.call('TIME')
local now = t[1] * 1000000 + t[2]                          -- us
local win = window * 1000000
local ends = (math.floor(now / win) + 1) * win             -- end of the current window, us
local reset = math.ceil((ends - now) / 1000)               -- ms

local count
if cost == 0 then
  count = tonumber(redis.call('GET', key) or '0')          -- a peek writes nothing
else
  count = redis.call('INCRBY', key, cost)
  if count > limit then
    if count == cost then redis.call('DEL', key) else redis.call('DECRBY', key, cost) end
    count = count - cost
    local retry = -1
    if cost <= limit then retry = reset end
    return {1, limit, math.max(limit - count, 0), retry, reset}
  end
  if count == cost then redis.call('PEXPIREAT', key, ends / 1000 - 1) end
end
if count == 0 then reset = 0 end
return {0, limit, limit - count, -1, reset}
