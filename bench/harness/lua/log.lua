-- RL.LOG for Redis: sliding window log (docs/algorithms.md), one sorted set per key.
--   EVALSHA <sha> 1 <key> <limit> <window_s> [<cost>=1]
-- Reply, as RL.LOG: {limited, limit, remaining, retry_after_ms, reset_after_ms}.
--
-- One member per admitted unit, scored by its admission time in microseconds (server
-- TIME); an entry counts during [t, t + window). Each call first drops the entries at or
-- before now - window, then admits iff count + cost <= limit. The member name is
-- "<time>.<n>" with n the set's size when it was added plus its index, unique even within
-- one microsecond. The key expires one window after its newest entry.
local limit, window, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3] or 1)
if not (limit and window and cost) or limit < 0 or window <= 0 or cost < 0 then
  return redis.error_reply('ERR usage: log.lua <key> <limit> <window_s> [<cost>]')
end
local key = KEYS[1]
local t = redis.call('TIME')
local now = t[1] * 1000000 + t[2]                          -- us
local win = window * 1000000
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - win)
local n = redis.call('ZCARD', key)

if n + cost <= limit then
  if cost > 0 then
    local add = {}
    for i = 1, cost do
      add[#add + 1] = now
      add[#add + 1] = string.format('%d.%d', now, n + i)
    end
    redis.call('ZADD', key, unpack(add))
    redis.call('PEXPIRE', key, window * 1000)
    return {0, limit, limit - n - cost, -1, window * 1000}
  end
  local reset = 0
  if n > 0 then
    local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
    reset = math.ceil((tonumber(newest[2]) + win - now) / 1000)
  end
  return {0, limit, limit - n, -1, reset}
end

-- Rejected: the request fits once the entry at index n + cost - limit - 1 (oldest first)
-- has left the window.
local retry = -1
if cost <= limit then
  local e = redis.call('ZRANGE', key, n + cost - limit - 1, n + cost - limit - 1, 'WITHSCORES')
  retry = math.ceil((tonumber(e[2]) + win - now) / 1000)
end
local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
local reset = 0
if newest[2] then reset = math.ceil((tonumber(newest[2]) + win - now) / 1000) end
return {1, limit, math.max(limit - n, 0), retry, reset}
