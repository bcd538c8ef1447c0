-- RL.BUCKET for Redis: token bucket (docs/algorithms.md), as a hash {tokens, ts}.
--   EVALSHA <sha> 1 <key> <capacity> <rate> <period_s> [<cost>=1]
-- Reply, as RL.BUCKET: {limited, capacity, remaining, retry_after_ms, reset_after_ms}.
--
-- The common Redis token bucket: tokens and the time they were counted (microseconds,
-- server TIME), refilled lazily at rate per period up to capacity. A fresh bucket is
-- full. Tokens are kept as a fraction and never floored, so a client polling faster than
-- one token interval still earns its tokens (rlserver keeps the same state as one exact
-- timestamp; here it is a double). Only an admission writes; the key expires when the
-- bucket would be full again.
local cap, rate, period, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4] or 1)
if not (cap and rate and period and cost) or cap < 0 or rate <= 0 or period <= 0 or cost < 0 then
  return redis.error_reply('ERR usage: bucket.lua <key> <capacity> <rate> <period_s> [<cost>]')
end
local key = KEYS[1]
local per_us = rate / (period * 1000000)                   -- tokens per microsecond
local t = redis.call('TIME')
local now = t[1] * 1000000 + t[2]
local h = redis.call('HMGET', key, 'tokens', 'ts')
local tokens, ts = tonumber(h[1]), tonumber(h[2])
if tokens == nil or ts == nil then
  tokens = cap
elseif now > ts then
  tokens = math.min(cap, tokens + (now - ts) * per_us)
end

local ceil = math.ceil
if tokens >= cost then
  if cost > 0 then
    tokens = tokens - cost
    local full = ceil((cap - tokens) / per_us / 1000)
    if full > 0 then
      redis.call('HSET', key, 'tokens', tokens, 'ts', now)
      redis.call('PEXPIRE', key, full)
    else
      redis.call('DEL', key)
    end
  end
  return {0, cap, math.floor(tokens), -1, ceil((cap - tokens) / per_us / 1000)}
end
local retry = -1
if cost <= cap then retry = ceil((cost - tokens) / per_us / 1000) end
return {1, cap, math.floor(tokens), retry, ceil((cap - tokens) / per_us / 1000)}
