-- keys: claim
-- args: owner
-- Lets a dev stack's claim of its queue prefix go, only while it is that stack's.
if redis.call('GET', claim_key) == owner then return redis.call('DEL', claim_key) end
return 0
