-- keys: claim
-- args: owner lease_ms
-- Renews a dev stack's claim of its queue prefix, by Redis's clock. Answers 1 when renewed; 2 when
-- Redis had lost it (a FLUSHALL) and it is claimed again; 0 when another stack holds it.
local held = redis.call('GET', claim_key)
if held == owner then
  redis.call('PEXPIRE', claim_key, lease_ms)
  return 1
end
if held == false then
  redis.call('SET', claim_key, owner, 'PX', lease_ms)
  return 2
end
return 0
