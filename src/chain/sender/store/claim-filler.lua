-- keys: owner inflight filler holder
-- args: fence nonce filler_id holder_id address ttl
-- Hands `nonce` to a filler transaction, while `fence` owns the key. With a holder (the job whose
-- transaction can never be mined), only while that job still holds the nonce: its record goes, so
-- a retry of the job starts over (and simulates first); a record another key's run made since Redis
-- lost the holder's is that key's to keep. Answers 1 when the nonce is the filler's.
if redis.call('GET', owner_key) ~= fence then return 0 end
if holder_id ~= '' then
  local held = redis.call('ZSCORE', inflight_key, holder_id)
  if not held or tonumber(held) ~= tonumber(nonce) then return 0 end
  redis.call('ZREM', inflight_key, holder_id)
  local bound = redis.call('HMGET', holder_key, 'from', 'nonce')
  if bound[1] == address and tonumber(bound[2]) == tonumber(nonce) then
    redis.call('DEL', holder_key)
  end
end
if redis.call('ZADD', inflight_key, 'NX', nonce, filler_id) == 0 then return 0 end
redis.call('DEL', filler_key)
redis.call('HSET', filler_key, 'from', address, 'nonce', nonce, 'attempts', '[]')
redis.call('EXPIRE', filler_key, tonumber(ttl))
return 1
