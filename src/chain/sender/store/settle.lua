-- keys: inflight mined job
-- args: job_id result mined_in final_below
-- A job's transaction is final (mined deep enough, or its nonce went to another transaction): its
-- result is kept with its record, for a retried run anywhere to read, and it leaves the key's
-- in-flight index. A record Redis lost meanwhile is not made again.
-- A mined one (`mined_in` its block, else '') enters the key's index of mined transactions that a
-- reorg could still take away, scored by that block, for whoever owns the key next to watch; the
-- ones mined below `final_below` (CHAIN_FINALITY_DEPTH deep) leave it.
redis.call('ZREM', inflight_key, job_id)
if redis.call('EXISTS', job_key) == 1 then
  redis.call('HSET', job_key, 'result', result)
  if mined_in ~= '' then redis.call('ZADD', mined_key, tonumber(mined_in), job_id) end
end
if final_below ~= '' then redis.call('ZREMRANGEBYSCORE', mined_key, '-inf', '(' .. final_below) end
return 1
