-- RL.ALL of three limits for Redis, all or nothing: a token bucket, a fixed window and a
-- sliding window counter, as bucket.lua, fixed.lua and slide.lua decide them, at one TIME.
--   EVALSHA <sha> 3 <bucket key> <fixed key> <slide key>
--        <capacity> <rate> <period_s> <fixed limit> <fixed window_s> <slide limit> <slide window_s>
-- Reply: {limited, index of the refusing limit or 0}. Every limit is checked first; only if
-- all admit are the three written (a cost of 1 each). This is the script a Redis user writes
-- today for "10 a second and 1,000 a day and 50,000 a minute per tenant".
local cap, rate, period = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local flimit, fwin = tonumber(ARGV[4]), tonumber(ARGV[5])
local slimit, swin = tonumber(ARGV[6]), tonumber(ARGV[7])
if not (cap and rate and period and flimit and fwin and slimit and swin) then
  return redis.error_reply('ERR usage: all3.lua <3 keys> <capacity> <rate> <period_s> <limit> <window_s> <limit> <window_s>')
end
local t = redis.call('TIME')
local now = t[1] * 1000000 + t[2]                          -- us

-- The bucket (KEYS[1]).
local per_us = rate / (period * 1000000)
local h = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens, ts = tonumber(h[1]), tonumber(h[2])
if tokens == nil or ts == nil then tokens = cap elseif now > ts then tokens = math.min(cap, tokens + (now - ts) * per_us) end
if tokens < 1 then return {1, 1} end

-- The fixed window (KEYS[2]).
local fw = fwin * 1000000
local fends = (math.floor(now / fw) + 1) * fw
local count = tonumber(redis.call('GET', KEYS[2]) or '0')
if count + 1 > flimit then return {1, 2} end

-- The sliding window counter (KEYS[3]).
local W = swin * 1000000
local cur = math.floor(now / W)
local e = now - cur * W
local s = redis.call('HMGET', KEYS[3], 'w', 'c', 'p')
local w, c, p = tonumber(s[1]), tonumber(s[2]) or 0, tonumber(s[3]) or 0
if w == nil or w < cur - 1 then c, p = 0, 0 elseif w == cur - 1 then c, p = 0, c end
if not (p * (W - e) + c * W < slimit * W) then return {1, 3} end

-- All admit: charge the three.
tokens = tokens - 1
redis.call('HSET', KEYS[1], 'tokens', tokens, 'ts', now)
redis.call('PEXPIRE', KEYS[1], math.ceil((cap - tokens) / per_us / 1000))
if redis.call('INCRBY', KEYS[2], 1) == 1 then redis.call('PEXPIREAT', KEYS[2], fends / 1000 - 1) end
redis.call('HSET', KEYS[3], 'w', cur, 'c', c + 1, 'p', p)
redis.call('PEXPIREAT', KEYS[3], (cur + 2) * W / 1000)
return {0, 0}
