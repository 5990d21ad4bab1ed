-- keys: owner counter
-- args: fence next_nonce
-- The key's next nonce becomes the greater of the stored one and `next_nonce` (never lower: a nonce
-- tracker that steps back hands a nonce out twice), while `fence` owns the key. Answers the next nonce,
-- or -1 when the fence does not own the key.
if redis.call('GET', owner_key) ~= fence then return -1 end
local stored = tonumber(redis.call('GET', counter_key) or '-1')
local next = math.max(stored, tonumber(next_nonce))
redis.call('SET', counter_key, next)
return next
