-- keys: inflight job
-- args: job_id result
-- A job's transaction is final (mined deep enough, or its nonce went to another transaction): its
-- result is kept with its record, for a retried run anywhere to read, and it leaves the key's
-- in-flight index. A record Redis lost meanwhile is not made again.
redis.call('ZREM', inflight_key, job_id)
if redis.call('EXISTS', job_key) == 1 then redis.call('HSET', job_key, 'result', result) end
return 1
