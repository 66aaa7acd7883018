-- ARGV: id. One job as its record says, for tools: {state, attempts,
-- fence, due, score (in `due` while it waits or is leased, in `dead` once
-- dead-lettered; '' once it ended), payload}, or nil if the id is unknown
-- or its record was forgotten after the retention. One HGET and at most
-- one ZSCORE.
local id = ARGV[1]
local rec = redis.call('HGET', KEYS[2], id)
if not rec then return false end
local s, fence, attempt, due, seq = struct.unpack(HEADER, rec)
local at = false
if s == 'w' or s == 'l' then
  at = redis.call('ZSCORE', KEYS[1], seq .. id)
elseif s == 'x' then
  at = redis.call('ZSCORE', KEYS[3], seq .. id)
end
return {s, attempt, fence, due, at and tonumber(at) or '', string.sub(rec, HEADER_LEN + 1)}
