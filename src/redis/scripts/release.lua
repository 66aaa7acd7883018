-- ARGV: wake channel, then per job: id, fence. Hands back jobs a claim
-- took for a fetch that had gone by the time they arrived: each still
-- held under its fence waits again at its due time, and the delivery is
-- not counted as an attempt. Returns how many were handed back.
local n = (#ARGV - 1) / 2
local ids = {}
for i = 1, n do ids[i] = ARGV[2 + (i - 1) * 2] end
read(ids)
local back, first = 0, nil
for i = 1, n do
  local id, fence = ids[i], tonumber(ARGV[3 + (i - 1) * 2])
  local r = batch.recs[id]
  if r and r.s == 'l' and r.fence == fence then
    r.s, r.attempt = 'w', r.attempt - 1
    put(id, r)
    push(batch.zadd, r.due, r.seq .. id)
    if first == nil or r.due < first then first = r.due end
    back = back + 1
  end
end
if back > 0 then
  local before = head()
  flush()
  hint(ARGV[1], first, before)
end
return back
