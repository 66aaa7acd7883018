-- ARGV: id, 'a' (at) or 'i' (in), microseconds, token, 1 if a retry,
-- answer time to live (ms), wake channel. KEYS[7]: this call's answer.
-- Moves a waiting job, ordered among equal due times as if scheduled now.
-- Returns the new due time, or -1 if the job is not waiting.
if ARGV[5] == '1' then
  local answer = redis.call('GET', KEYS[7])
  if answer then return tonumber(answer) end
end
local id = ARGV[1]
read({id})
local r = batch.recs[id]
local answer = -1
if r and r.s == 'w' then
  local due = tonumber(ARGV[3])
  local now = nil
  if ARGV[2] == 'i' then
    now = clock()
    due = now + due
  end
  push(batch.zrem, r.seq .. id)
  -- A new place in line, at the same priority (the rank byte stays).
  r.seq = string.sub(r.seq, 1, 1) .. struct.pack('>I7', redis.call('INCR', KEYS[5]))
  r.due, r.last = due, ARGV[4]
  put(id, r)
  push(batch.zadd, due, r.seq .. id)
  local before = head()
  hint(ARGV[7], due, before) -- before the writes (schedule.lua says why)
  flush()
  answer = due
end
redis.call('SET', KEYS[7], answer, 'PX', ARGV[6])
return answer
