-- keys: inflight mined job
-- args: job_id result mined_in final_below address nonce
-- A job's transaction is final (mined deep enough, or its nonce went to another transaction): its
-- result is kept with its record, for a retried run anywhere to read, and it leaves the key's
-- in-flight index. A record Redis lost meanwhile is not made again, and neither is one Redis now
-- binds to another key or nonce: a run of the job sent after Redis lost the record went out from
-- there, and what this transaction did is not that record's result.
-- A mined one (`mined_in` its block, else '') enters the key's index of mined transactions that a
-- reorg could still take away, scored by that block, for whoever owns the key next to watch; the
-- ones mined below `final_below` (CHAIN_FINALITY_DEPTH deep) leave it.
redis.call('ZREM', inflight_key, job_id)
local bound = redis.call('HMGET', job_key, 'from', 'nonce')
if bound[1] == address and tonumber(bound[2]) == tonumber(nonce) then
  redis.call('HSET', job_key, 'result', result)
  if mined_in ~= '' then redis.call('ZADD', mined_key, tonumber(mined_in), job_id) end
end
if final_below ~= '' then redis.call('ZREMRANGEBYSCORE', mined_key, '-inf', '(' .. final_below) end
return 1
