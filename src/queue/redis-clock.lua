-- keys: slot
-- args:
-- Redis's clock, read on the node that holds the installation's keys: in a Redis Cluster the key
-- (never read) routes the call to the slot of QUEUE_PREFIX's hash tag, where the queues live.
local time = redis.call('TIME')
return { tonumber(time[1]), tonumber(time[2]) }
