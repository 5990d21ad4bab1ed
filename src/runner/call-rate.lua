-- keys: calls
-- args: max_per_window window_ms call_id
-- Counts one call of one caller (an external initiator, or the operator's token) in a sliding window
-- by Redis's clock (TIME), so runs-endpoint hosts whose clocks disagree count the same. Answers
-- {0, 0} taken, or {1, ms} refused: the window is full, and its oldest call leaves it in ms.
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local bound, window = tonumber(max_per_window), tonumber(window_ms)
redis.call('ZREMRANGEBYSCORE', calls_key, '-inf', now - window)
if redis.call('ZCARD', calls_key) >= bound then
  local oldest = redis.call('ZRANGE', calls_key, 0, 0, 'WITHSCORES')
  return { 1, math.max(1, tonumber(oldest[2]) + window - now) }
end
redis.call('ZADD', calls_key, now, call_id)
redis.call('PEXPIRE', calls_key, window)
return { 0, 0 }
