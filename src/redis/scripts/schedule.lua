-- ARGV: wake channel, then per job: id, token (8 bytes), 'a' (at) or 'i'
-- (in), microseconds, payload. Per job, returns 1 and the due time if this
-- call created it (a retry of the call that did gets the same answer), or
-- 0 and the state of the job that holds the id.
local channel = ARGV[1]
local n = (#ARGV - 1) / 5
local ids = {}
for i = 1, n do ids[i] = ARGV[2 + (i - 1) * 5] end
local got = redis.call('HMGET', KEYS[2], unpack(ids))
local out, fresh, hset, zadd = {}, {}, {}, {}
local count, now, first = 0, nil, nil
for i = 1, n do
  local at = 2 + (i - 1) * 5
  local id, token = ARGV[at], ARGV[at + 1]
  local rec = got[i]
  if fresh[id] then
    -- The same id twice in one call: the first made it.
    out[#out + 1] = 0
    out[#out + 1] = 'w'
  elseif rec then
    local s, _, _, due, _, made = struct.unpack(HEADER, rec)
    if made == token then
      out[#out + 1] = 1
      out[#out + 1] = due
    else
      out[#out + 1] = 0
      out[#out + 1] = s
    end
  else
    local due = tonumber(ARGV[at + 3])
    if ARGV[at + 2] == 'i' then
      now = now or clock()
      due = now + due
    end
    count = count + 1
    fresh[id] = count
    hset[#hset + 1] = id
    hset[#hset + 1] = token
    hset[#hset + 1] = ARGV[at + 4]
    zadd[#zadd + 1] = due
    zadd[#zadd + 1] = id
    out[#out + 1] = 1
    out[#out + 1] = due
    if first == nil or due < first then first = due end
  end
end
if count > 0 then
  -- Records and members wait for their sequence numbers, taken together.
  local base = redis.call('INCRBY', KEYS[5], count) - count
  local records, scores = {}, {}
  for k = 1, count do
    local id, token, body = hset[3 * k - 2], hset[3 * k - 1], hset[3 * k]
    local due = zadd[2 * k - 1]
    local seq = struct.pack('>I8', base + k)
    records[#records + 1] = id
    records[#records + 1] = struct.pack(HEADER, 'w', 0, 0, due, seq, token, token) .. body
    scores[#scores + 1] = due
    scores[#scores + 1] = seq .. id
  end
  local before = head()
  redis.call('HSET', KEYS[2], unpack(records))
  redis.call('ZADD', KEYS[1], unpack(scores))
  hint(channel, first, before)
end
return out
