-- keys: owner
-- args: fence
-- Lets go of a key this fence holds (a process closing, or handing a surplus key to a newcomer).
if redis.call('GET', owner_key) ~= fence then return 0 end
redis.call('DEL', owner_key)
return 1
