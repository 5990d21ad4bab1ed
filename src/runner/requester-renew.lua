-- keys: runs
-- args: run_id lease_ms
-- Extends a live run's lease to a lease from now by Redis's clock, and its key's life with it; a slot
-- already taken back (its lease ran out and another admission dropped it) stays given up.
if not redis.call('ZSCORE', runs_key, run_id) then return 0 end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local lease = tonumber(lease_ms)
redis.call('ZADD', runs_key, 'XX', now + lease, run_id)
if redis.call('PTTL', runs_key) < lease then redis.call('PEXPIRE', runs_key, lease) end
return 1
