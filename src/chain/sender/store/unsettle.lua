-- keys: inflight mined job
-- args: job_id nonce address
-- A job's mined transaction a reorg took away: in flight again. Its result goes (a run of the job
-- waits for the transaction again), it leaves the index of mined transactions and is back in the
-- key's in-flight index (a new owner of the key watches it). A record Redis lost meanwhile is not
-- made again, and one Redis now binds to another key or nonce is left as it is (settle.lua).
redis.call('ZREM', mined_key, job_id)
local bound = redis.call('HMGET', job_key, 'from', 'nonce')
if bound[1] ~= address or tonumber(bound[2]) ~= tonumber(nonce) then return 0 end
redis.call('HDEL', job_key, 'result')
redis.call('ZADD', inflight_key, tonumber(nonce), job_id)
return 1
