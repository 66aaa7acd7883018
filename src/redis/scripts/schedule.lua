-- ARGV: wake channel, then per job: id, token, 'a' (at) or 'i' (in),
-- microseconds, payload. Per job, returns 1 and the due time if this call
-- created it (a retry of the call that did gets the same answer), or 0
-- and the state of the job that holds the id.
local channel = ARGV[1]
local n = (#ARGV - 1) / 5
local ids = {}
for i = 1, n do ids[i] = ARGV[2 + (i - 1) * 5] end
read(ids)
local out, made = {}, {}
local now, first
for i = 1, n do
  local at = 2 + (i - 1) * 5
  local id, token, kind, micros = ARGV[at], ARGV[at + 1], ARGV[at + 2], tonumber(ARGV[at + 3])
  local r = batch.recs[id]
  if r then
    if r.made == token then push(out, 1, r.due) else push(out, 0, r.s) end
  else
    local due = micros
    if kind == 'i' then
      now = now or clock()
      due = now + micros
    end
    r = { s = 'w', fence = 0, attempt = 0, due = due, seq = '', made = token,
      last = token, payload = ARGV[at + 4] }
    put(id, r)
    made[#made + 1] = id
    push(out, 1, due)
    if first == nil or due < first then first = due end
  end
end
if #made > 0 then
  local last = redis.call('INCRBY', KEYS[5], #made)
  for k, id in ipairs(made) do
    local r = batch.recs[id]
    r.seq = string.format('%016x', last - #made + k)
    push(batch.zadd, num(r.due), r.seq .. id)
  end
  local before = head()
  flush()
  hint(channel, first, before)
end
return out
