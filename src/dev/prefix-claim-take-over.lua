-- keys: claim
-- args: dead_owner owner lease_ms
-- Takes over the claim a stack whose process is gone left, only while it is still that stack's.
if redis.call('GET', claim_key) == dead_owner then
  return redis.call('SET', claim_key, owner, 'PX', lease_ms)
end
return false
