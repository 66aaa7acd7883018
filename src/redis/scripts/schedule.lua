-- ARGV: wake channel, '1' if every job carries a priority, then per job:
-- id, token (8 bytes), time, payload, and its rank if there are
-- priorities (one byte: 255 minus the priority). The time is the due time
-- in microseconds of the server's clock, or, with a leading '-', a delay
-- from now. The rank is the first byte of the job's sequence number, so
-- that among equal due times a higher priority comes first (the rest
-- counts up: first in, first out within a priority); 255 without one. Returns now (0 if no job was relative),
-- then a pair per job that this call did not just create: its index and
-- either its due time (a number: the first attempt of this same call
-- created it) or the state of the job that holds the id (text). Every
-- other job was created, due at its time or now plus its delay.
local channel = ARGV[1]
local w = ARGV[2] == '1' and 5 or 4
local n = (#ARGV - 2) / w
local ids = {}
for i = 1, n do ids[i] = ARGV[w * i - w + 3] end
local got = redis.call('HMGET', KEYS[2], unpack(ids))
local out, fresh, records, scores = { 0 }, {}, {}, {}
-- Counted, not `#t`: Lua's length is a search, and this loop runs per job.
local nr, no = 0, 1
local now, first, base
local delay, delay_due, delay_score
local byte, pack = string.byte, struct.pack
local W9 = 'w' .. string.rep('\0', 8)
for i = 1, n do
  local at = w * i - w + 3
  local id, rec = ids[i], got[i]
  if fresh[id] then
    out[no + 1], out[no + 2], no = i, 'w', no + 2
  elseif rec then
    local s, _, _, due, _, made = struct.unpack(HEADER, rec)
    if made == ARGV[at + 1] then
      out[no + 1], out[no + 2], no = i, due, no + 2
    else
      out[no + 1], out[no + 2], no = i, s, no + 2
    end
  else
    -- An absolute time's score is the client's text: turning a Lua number
    -- back into text costs a printf per job.
    local score = ARGV[at + 2]
    local due
    if byte(score, 1) == 45 then
      -- Jobs with the same delay share one due time and its text.
      if score ~= delay then
        if now == nil then now = clock(); out[1] = now end
        delay, delay_due = score, now - tonumber(score)
        delay_score = num(delay_due)
      end
      due, score = delay_due, delay_score
    else
      due = tonumber(score)
    end
    -- Sequence numbers for the whole call, taken once (the ids that
    -- exist leave gaps, which order nothing).
    if base == nil then base = redis.call('INCRBY', KEYS[5], n) - n end
    local token = ARGV[at + 1]
    fresh[id] = true
    nr = nr + 2
    local dseq = pack('>dBI7', due, w == 5 and byte(ARGV[at + 4]) or 255, base + i)
    records[nr - 1], records[nr] = id, W9 .. dseq .. token .. token .. ARGV[at + 3]
    scores[nr - 1], scores[nr] = score, string.sub(dseq, 9) .. id
    if first == nil or due < first then first = due end
  end
end
if base then
  -- The head before the writes: a hint only for an earlier job.
  local before = head()
  -- The hint first: a command that fails (an ACL without the channel)
  -- then stops the script before it writes, since Redis keeps a script's
  -- writes made before an error.
  hint(channel, first, before)
  redis.call('HSET', KEYS[2], unpack(records))
  redis.call('ZADD', KEYS[1], unpack(scores))
end
return out
