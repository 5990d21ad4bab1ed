-- keys: tick by_job
-- args: job_id tick ttl_ms
-- Claims a cron job's tick for one queue job, in one atomic step: the first queue job to claim a
-- tick owns it, and a queue job taken again (its runner died, or it is retried) finds the tick it
-- claimed before. Answers the tick this queue job runs, or false when another one owns the tick.
local prior = redis.call('GET', by_job_key)
if prior then return prior end
if redis.call('SET', tick_key, job_id, 'NX', 'PX', tonumber(ttl_ms)) then
  redis.call('SET', by_job_key, tick, 'PX', tonumber(ttl_ms))
  return tick
end
return false
