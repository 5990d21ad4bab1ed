-- keys: runs started
-- args: max_runs max_per_window run_id lease_ms window_ms
-- Takes a slot for run `run_id` of one requester, atomically, by Redis's clock (TIME): leases end and
-- starts leave the window by it, so runner hosts whose clocks disagree count the same. Drops expired
-- leases and starts older than the window, refuses at either bound (a run that holds a slot or a start
-- already, a redelivery, is not counted twice), else records the run's start and its lease.
-- Answers {0, 0} admitted, {1, n} busy (n runs in progress), {2, n} rate limited (n started).
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local runs_bound, window_bound = tonumber(max_runs), tonumber(max_per_window)
local lease, window = tonumber(lease_ms), tonumber(window_ms)
if runs_bound > 0 and not redis.call('ZSCORE', runs_key, run_id) then
  redis.call('ZREMRANGEBYSCORE', runs_key, '-inf', now)
  local running = redis.call('ZCARD', runs_key)
  if running >= runs_bound then return { 1, running } end
end
if window_bound > 0 and not redis.call('ZSCORE', started_key, run_id) then
  redis.call('ZREMRANGEBYSCORE', started_key, '-inf', now - window)
  local started = redis.call('ZCARD', started_key)
  if started >= window_bound then return { 2, started } end
  redis.call('ZADD', started_key, now, run_id)
  redis.call('PEXPIRE', started_key, window)
end
if runs_bound > 0 then
  redis.call('ZADD', runs_key, now + lease, run_id)
  -- The key lives as long as its longest lease (runners may hold leases of different lengths).
  if redis.call('PTTL', runs_key) < lease then redis.call('PEXPIRE', runs_key, lease) end
end
return { 0, 0 }
