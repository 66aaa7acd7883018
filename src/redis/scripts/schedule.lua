-- ARGV: wake channel, then per job: id, token (8 bytes), 'a' (at) or 'i'
-- (in), microseconds, payload. Per job, returns 1 and the due time if this
-- call created it (a retry of the call that did gets the same answer), or
-- 0 and the state of the job that holds the id.
local channel = ARGV[1]
local n = (#ARGV - 1) / 5
local ids = {}
for i = 1, n do ids[i] = ARGV[5 * i - 3] end
local got = redis.call('HMGET', KEYS[2], unpack(ids))
local out, fresh, records, scores = {}, {}, {}, {}
-- Counted, not `#t`: Lua's length is a search, and this loop runs per job.
local nr = 0
local now, first, base
for i = 1, n do
  local at = 5 * i - 3
  local id, rec = ids[i], got[i]
  if fresh[id] then
    out[2 * i - 1], out[2 * i] = 0, 'w'
  elseif rec then
    local s, _, _, due, _, made = struct.unpack(HEADER, rec)
    if made == ARGV[at + 1] then
      out[2 * i - 1], out[2 * i] = 1, due
    else
      out[2 * i - 1], out[2 * i] = 0, s
    end
  else
    -- The score as the client's text when the time is absolute: turning
    -- a Lua number back into text costs a printf per job.
    local score = ARGV[at + 3]
    local due = tonumber(score)
    if ARGV[at + 2] == 'i' then
      now = now or clock()
      due = now + due
      score = due
    end
    -- Sequence numbers for the whole call, taken once (the ids that
    -- exist leave gaps, which order nothing).
    if base == nil then base = redis.call('INCRBY', KEYS[5], n) - n end
    local seq = struct.pack('>I8', base + i)
    local token = ARGV[at + 1]
    fresh[id] = true
    nr = nr + 2
    records[nr - 1], records[nr] = id, struct.pack(HEADER, 'w', 0, 0, due, seq, token, token) .. ARGV[at + 4]
    scores[nr - 1], scores[nr] = score, seq .. id
    out[2 * i - 1], out[2 * i] = 1, due
    if first == nil or due < first then first = due end
  end
end
if base then
  -- The head before the writes: a hint only for an earlier job.
  local before = head()
  redis.call('HSET', KEYS[2], unpack(records))
  redis.call('ZADD', KEYS[1], unpack(scores))
  hint(channel, first, before)
end
return out
