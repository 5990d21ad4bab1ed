-- keys: run index
-- args: ttl run_id
-- Moves an errored run back to `received` for a replay, in one atomic step: only an errored run moves
-- (two replays at once cannot both start), and the reason it errored with is kept in `replays`.
-- Answers the summary and the number of this replay (0 when the run did not move). Stamped by
-- Redis's clock, as every write of a run is (update-run.lua).
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local current = redis.call('GET', run_key)
if not current then return nil end
local record = cjson.decode(current)
if record.state ~= 'errored' then
  return cjson.encode({ requestId = record.requestId, state = record.state, job = record.job, txHash = record.txHash, reason = record.reason, replay = 0 })
end
local replays = record.replays
if type(replays) ~= 'table' then replays = {} end
table.insert(replays, { at = now, previousReason = record.reason })
record.replays = replays
record.state = 'received'
record.quarantined = nil
record.reason = nil
record.failure = nil
record.txHash = nil
record.times.received = now
redis.call('SET', run_key, cjson.encode(record), 'EX', tonumber(ttl))
redis.call('ZADD', index_key, now, run_id)
return cjson.encode({ requestId = record.requestId, state = record.state, job = record.job, replay = #replays })
