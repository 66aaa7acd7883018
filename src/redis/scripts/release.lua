-- ARGV: wake channel, '1' if the queue has a misfire policy other than
-- firing, then per job: id, fence; KEYS[7], if given: the replay record
-- of a claim given up on, whose jobs go back too. Hands back jobs a claim
-- took for a fetch that had gone by the time they arrived (or for a claim
-- given up on): each still held under its fence waits again, and the
-- delivery is not counted as an attempt. Under the plain policy a job
-- waits at its due time, keeping its place; under another it waits at
-- now, since the claim found it on time and a due time from before (a
-- redelivery's, after its lease ran out) must not make the next claim
-- take it for a missed job. Returns {how many were handed back, then the
-- given-up claim's counts: dead-lettered, discarded, spread} (its jobs
-- went to the dead letters, were discarded or spread in Redis, though its
-- caller never read its answer; 0s without one).
local n = (#ARGV - 2) / 2
local ids, fences = {}, {}
for i = 1, n do
  ids[i], fences[i] = ARGV[3 + (i - 1) * 2], tonumber(ARGV[4 + (i - 1) * 2])
end
local counts = {0, 0, 0}
if KEYS[7] then
  -- A claim given up on: the jobs it leased, from its replay record.
  local saved = redis.call('GET', KEYS[7])
  if saved then
    local held, c = cmsgpack.unpack(saved)
    if c then counts = c end
    for i = 1, #held, 2 do
      n = n + 1
      ids[n], fences[n] = held[i], held[i + 1]
    end
    redis.call('DEL', KEYS[7])
  end
end
read(ids)
local back, first, now = 0, nil, nil
for i = 1, n do
  local id, fence = ids[i], fences[i]
  local r = batch.recs[id]
  if r and r.s == 'l' and r.fence == fence then
    r.s, r.attempt = 'w', r.attempt - 1
    put(id, r)
    local at = r.due
    if ARGV[2] == '1' then
      if now == nil then now = clock() end
      if at < now then at = now end
    end
    push(batch.zadd, num(at), r.seq .. id)
    if first == nil or at < first then first = at end
    back = back + 1
  end
end
if back > 0 then
  local before = head()
  hint(ARGV[1], first, before) -- before the writes (schedule.lua says why)
  flush()
end
return {back, counts[1], counts[2], counts[3]}
