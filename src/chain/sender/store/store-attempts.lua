-- keys: owner job
-- args: fence attempts
-- Replaces a job's signed attempts (a bump adds one at the same nonce, a filler signs its own) while
-- `fence` owns the key and the job's record exists: 1, or 0 otherwise (nothing is broadcast then).
if redis.call('GET', owner_key) ~= fence then return 0 end
if redis.call('EXISTS', job_key) == 0 then return 0 end
redis.call('HSET', job_key, 'attempts', attempts)
return 1
