-- keys: owner epoch
-- args: process lease_ms
-- Takes a free key for this process: answers the fence (process:n, n counting every acquisition of
-- the key, so no two owners ever hold the same fence), or false while another process holds it. The
-- lease expires by Redis's clock (PX), never by a host's.
if redis.call('EXISTS', owner_key) == 1 then return false end
local fence = process .. ':' .. redis.call('INCR', epoch_key)
redis.call('SET', owner_key, fence, 'PX', tonumber(lease_ms))
return fence
