-- keys: run index
-- args: patch ttl run_id kept mode trim
-- Merges `patch` into the stored run, as `mode` says:
--   unless-final  unless the stored run is final (a late retry or a second process cannot undo it),
--                 or of another round (its cancelExpiration differs: the write is the round before's);
--   if-absent     creates the run when there is none; a run that exists is kept as it is, or, when
--                 the request was made again with another cancelExpiration (a reorg moved it to
--                 another block, so the fulfilment that matches it changed), opened in a new round;
--   chain         even when final: the chain's word settles a run (the reconciler).
-- Answers a summary: the record with its task outputs is kilobytes, and every run writes it several
-- times. A run enters the index of recent runs once, when it is created (the index orders runs by
-- when they were received); its later writes cost one SET each. The index is trimmed to `kept` by one
-- create in 64 (`trim` = '1'), not by each.
-- A write that moves the run to a state stamps it (`times`) by Redis's clock, as the index is: the
-- reconciler compares those stamps with Redis's time, whichever hosts wrote and read them (a runner
-- whose clock ran 45 s ahead once kept a record from the reconciler for 45 s).
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local function summary(run)
  return cjson.encode({ requestId = run.requestId, state = run.state, job = run.job, txHash = run.txHash, reason = run.reason, round = run.round })
end

local function new_round(record, made)
  record.round = (tonumber(record.round) or 0) + 1
  record.state = 'received'
  record.reason = 'made again in block ' .. tostring(made.blockNumber) .. ' (a reorg moved the request): run again'
  record.blockNumber = made.blockNumber
  record.requestTxHash = made.requestTxHash
  record.cancelExpiration = made.cancelExpiration
  record.txHash = nil
  record.failure = nil
  record.quarantined = nil
  record.times.received = now
end

local function merge(record, patch)
  local tasks_from = tonumber(patch.tasksFrom)
  patch.tasksFrom = nil
  for k, v in pairs(patch) do
    if k == 'times' then
      for state, at in pairs(v) do record.times[state] = at end
    elseif k == 'tasks' and tasks_from then
      local tasks = {}
      if type(record.tasks) == 'table' then
        for i = 1, math.min(#record.tasks, tasks_from) do tasks[i] = record.tasks[i] end
      end
      for _, task in ipairs(v) do tasks[#tasks + 1] = task end
      record.tasks = tasks
    else
      record[k] = v
    end
  end
end

local current = redis.call('GET', run_key)
local record
if current then
  record = cjson.decode(current)
  local final = { fulfilled = true, errored = true, refused = true, cancelled = true }
  if mode == 'if-absent' then
    local made = cjson.decode(patch)
    if made.cancelExpiration == nil or record.cancelExpiration == nil or made.cancelExpiration == record.cancelExpiration then
      return summary(record)
    end
    new_round(record, made)
  elseif final[record.state] and mode ~= 'chain' then
    return summary(record)
  else
    local change = cjson.decode(patch)
    -- A write of the round before (its request made again with another cancelExpiration) is not
    -- this round's: the run it would move is not the one it ran.
    if mode ~= 'chain' and change.cancelExpiration ~= nil and record.cancelExpiration ~= nil
        and change.cancelExpiration ~= record.cancelExpiration then
      return summary(record)
    end
    merge(record, change)
    if change.state ~= nil then record.times[change.state] = now end
  end
  redis.call('SET', run_key, cjson.encode(record), 'EX', tonumber(ttl))
else
  -- Redis lost the run (a flush, a failover) while it ran: the write makes it again, whole (every
  -- write of a run carries the request), and where it stands unsaid is where it began.
  record = cjson.decode(patch)
  record.tasksFrom = nil
  if record.state == nil then record.state = 'received' end
  if type(record.times) ~= 'table' then record.times = {} end
  record.times[record.state] = now
  redis.call('SET', run_key, cjson.encode(record), 'EX', tonumber(ttl))
  redis.call('ZADD', index_key, now, run_id)
  if trim == '1' then redis.call('ZREMRANGEBYRANK', index_key, 0, -tonumber(kept) - 1) end
end
return summary(record)
