-- keys: inflight mined job
-- args: job_id nonce address
-- A job whose nonce another transaction took: it leaves the key's indexes, and its record goes while
-- Redis binds it to the key at `nonce`, so a retry starts over (and simulates first). A record another
-- key's run made since Redis lost this one is that key's to keep.
redis.call('ZREM', inflight_key, job_id)
redis.call('ZREM', mined_key, job_id)
local bound = redis.call('HMGET', job_key, 'from', 'nonce')
if bound[1] ~= address or tonumber(bound[2]) ~= tonumber(nonce) then return 0 end
redis.call('DEL', job_key)
return 1
