-- keys: owner
-- args: fence lease_ms
-- Extends the lease while this fence holds it: 1, or 0 when the key is not ours any more (it expired
-- and another process took it, or Redis lost it).
if redis.call('GET', owner_key) ~= fence then return 0 end
redis.call('PEXPIRE', owner_key, tonumber(lease_ms))
return 1
