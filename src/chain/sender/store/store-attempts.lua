-- keys: owner job
-- args: fence attempts address nonce
-- Replaces a job's signed attempts (a bump adds one at the same nonce, a filler signs its own) while
-- `fence` owns the key and Redis binds the job to the key at `nonce`: 1, or 0 otherwise (nothing is
-- broadcast then). A record Redis lost, or one another key's run made since, is not this key's.
if redis.call('GET', owner_key) ~= fence then return 0 end
local bound = redis.call('HMGET', job_key, 'from', 'nonce')
if bound[1] ~= address or tonumber(bound[2]) ~= tonumber(nonce) then return 0 end
redis.call('HSET', job_key, 'attempts', attempts)
return 1
