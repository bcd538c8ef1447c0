-- RL.SLIDE for Redis: sliding window counter, Cloudflare style (docs/algorithms.md).
--   EVALSHA <sha> 1 <key> <limit> <window_s> [<cost>=1]
-- Reply, as RL.SLIDE: {limited, limit, remaining, retry_after_ms, reset_after_ms}.
--
-- One small hash per key (w = index of the current window, c = its count, p = the
-- previous window's count), so the script touches only KEYS[1]. Windows are aligned to
-- the Unix epoch; with e the time elapsed in the current window (microseconds, server
-- TIME), the estimate is p * (W - e) / W + c, and a request is admitted iff
-- p * (W - e) + c * W < (limit - cost + 1) * W. Lua numbers are doubles: the products are
-- exact while they stay below 2^53 (limits up to 10^6 with windows up to a day).
local limit, window, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3] or 1)
if not (limit and window and cost) or limit < 0 or window <= 0 or cost < 0 then
  return redis.error_reply('ERR usage: slide.lua <key> <limit> <window_s> [<cost>]')
end
local key = KEYS[1]
local t = redis.call('TIME')
local now = t[1] * 1000000 + t[2]                          -- us
local W = window * 1000000
local cur = math.floor(now / W)
local e = now - cur * W
local h = redis.call('HMGET', key, 'w', 'c', 'p')
local w, c, p = tonumber(h[1]), tonumber(h[2]) or 0, tonumber(h[3]) or 0
if w == nil or w < cur - 1 then
  c, p = 0, 0
elseif w == cur - 1 then
  c, p = 0, c
end

local ceil = math.ceil
if p * (W - e) + c * W < (limit - cost + 1) * W then
  if cost > 0 then
    c = c + cost
    redis.call('HSET', key, 'w', cur, 'c', c, 'p', p)
    redis.call('PEXPIREAT', key, (cur + 2) * W / 1000)
  end
  local reset = 0
  if c > 0 then reset = ceil(((cur + 2) * W - now) / 1000) elseif p > 0 then reset = ceil(((cur + 1) * W - now) / 1000) end
  return {0, limit, math.max(0, ceil((limit * W - p * (W - e) - c * W) / W)), -1, reset}
end

-- Rejected: the earliest microsecond at which the same request would be admitted,
-- still in this window if the previous one's weight fades enough, else in the next one
-- (where p becomes c and c becomes 0).
local retry = -1
if cost <= limit then
  local room = (limit - cost + 1 - c) * W
  local at
  if room > 0 and p > 0 then
    local e1 = math.floor(W - room / p) + 1
    if e1 < W then at = cur * W + e1 end
  end
  if not at then
    local e2 = 0
    if c > 0 then e2 = math.max(0, math.floor(W - (limit - cost + 1) * W / c) + 1) end
    at = (cur + 1) * W + e2
  end
  retry = ceil((at - now) / 1000)
end
local reset = 0
if c > 0 then reset = ceil(((cur + 2) * W - now) / 1000) elseif p > 0 then reset = ceil(((cur + 1) * W - now) / 1000) end
return {1, limit, math.max(0, ceil((limit * W - p * (W - e) - c * W) / W)), retry, reset}
