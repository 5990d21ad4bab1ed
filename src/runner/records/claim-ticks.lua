-- keys: ticks by_job
-- args: job_id ttl_ms oldest
-- Claims a cron job's ticks for one queue job, in one atomic step. ARGV past the named ones are the
-- candidate ticks, ascending (epoch ms). A queue job taken again (its runner died, or it is retried)
-- finds the ticks it claimed before. Otherwise it claims every candidate after the job's last
-- claimed tick that no other queue job claimed (ZADD NX), and only the last candidate when there is
-- no claimed tick at or after `oldest` (no runner ran for a while: a missed tick is not made up).
-- Answers the claimed ticks as a JSON array (empty: a duplicate firing).
local prior = redis.call('GET', by_job_key)
if prior then return prior end
local newest = redis.call('ZREVRANGE', ticks_key, 0, 0, 'WITHSCORES')
local last = tonumber(newest[2])
local first = 4
if not last or last < tonumber(oldest) then first = #ARGV end
local claimed = {}
for i = first, #ARGV do
  local tick = tonumber(ARGV[i])
  if (not last or tick > last) and redis.call('ZADD', ticks_key, 'NX', tick, ARGV[i]) == 1 then
    table.insert(claimed, tick)
  end
end
redis.call('ZREMRANGEBYSCORE', ticks_key, '-inf', tonumber(oldest) - tonumber(ttl_ms))
redis.call('PEXPIRE', ticks_key, tonumber(ttl_ms))
local answer = '[]'
if #claimed > 0 then answer = cjson.encode(claimed) end
redis.call('SET', by_job_key, answer, 'PX', tonumber(ttl_ms))
return answer
