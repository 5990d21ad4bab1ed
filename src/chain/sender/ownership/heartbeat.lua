-- keys: members
-- args: process lease_ms
-- Keeps this process among the chain's live senders until a lease from now by Redis's clock, drops
-- those whose time passed, and answers how many are live (each takes about its share of the keys).
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
redis.call('ZADD', members_key, now + tonumber(lease_ms), process)
redis.call('ZREMRANGEBYSCORE', members_key, '-inf', now)
redis.call('PEXPIRE', members_key, tonumber(lease_ms) * 2)
return redis.call('ZCARD', members_key)
