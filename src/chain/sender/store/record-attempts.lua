-- keys: owner counter inflight
-- args: fence job_base address ttl
-- Records the first signed attempt of each job of a batch (ARGV after the named ones: job id, nonce,
-- attempt JSON, transaction JSON, per job), before any of them is broadcast, and only while `fence`
-- owns the key: a process that lost the key records nothing, so two owners never both send a nonce.
-- Answers {-1} when the fence does not own the key; else one entry per job recorded in order, 1 when
-- recorded and 0 for the first job that has a record already (bound to a transaction by an earlier
-- run): the jobs after it are not recorded, and their nonces are signed again by the caller.
-- Answers {-2}, recording nothing, when the batch starts below the key's next nonce: its nonces were
-- handed out since it was signed (a batch its owner signed before a resync, reaching Redis after the
-- batch signed since: an answer lost while Redis was away). Recorded, it would put a second
-- transaction at those nonces; the caller signs it again from the key's next nonce.
if redis.call('GET', owner_key) ~= fence then return {-1} end
local first_nonce = tonumber(ARGV[6])
if first_nonce < tonumber(redis.call('GET', counter_key) or '0') then return {-2} end
local answers = {}
local next_nonce = -1
for at = 5, #ARGV, 4 do
  local job_id, nonce = ARGV[at], tonumber(ARGV[at + 1])
  local job_key = job_base .. job_id
  if redis.call('EXISTS', job_key) == 1 then
    answers[#answers + 1] = 0
    break
  end
  redis.call('HSET', job_key, 'from', address, 'nonce', nonce, 'attempts', ARGV[at + 2], 'tx', ARGV[at + 3])
  redis.call('EXPIRE', job_key, tonumber(ttl))
  redis.call('ZADD', inflight_key, nonce, job_id)
  next_nonce = nonce + 1
  answers[#answers + 1] = 1
end
if next_nonce >= 0 then
  redis.call('SET', counter_key, next_nonce)
end
return answers
