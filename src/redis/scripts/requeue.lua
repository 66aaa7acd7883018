-- ARGV: id, token, 1 if a retry, answer time to live (ms), wake channel.
-- KEYS[7]: this call's answer. Moves a dead-lettered job back to waiting,
-- due now, with a fresh set of attempts; its fence keeps growing, so a
-- delivery from before cannot ack the next one. Returns 1, or 0 if it
-- was not dead-lettered.
if ARGV[3] == '1' then
  local answer = redis.call('GET', KEYS[7])
  if answer then return tonumber(answer) end
end
local id = ARGV[1]
read({id})
local r = batch.recs[id]
local answer = 0
if r and r.s == 'x' then
  local now = clock()
  local member = r.seq .. id
  r.s, r.attempt, r.last, r.due = 'w', 0, ARGV[2], now
  put(id, r)
  push(batch.dead_rem, member)
  push(batch.zadd, now, member)
  local before = head()
  hint(ARGV[5], now, before) -- before the writes (schedule.lua says why)
  flush()
  answer = 1
end
redis.call('SET', KEYS[7], answer, 'PX', ARGV[4])
return answer
