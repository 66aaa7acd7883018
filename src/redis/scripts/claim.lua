-- ARGV: max, lease, max attempts, misfire threshold, on missed ('fire',
-- 'dead', 'discard', 'spread'), spread window (microseconds but max and
-- attempts), the claim's token, 1 if this is a retry, replay time to live
-- (ms); then jobs to ack first, as (id, fence, token) triples (see
-- `ack_jobs`). KEYS[7]: this claim's replay record (msgpack of the
-- (id, fence) pairs it delivered, then of its counts: dead-lettered,
-- discarded, spread), kept if it changed anything.
-- Looks at no more than `max` jobs whose time has come, oldest first:
-- waiting ones are delivered (or, if later than the threshold, follow the
-- misfire policy); leased ones whose lease ran out are delivered again, or
-- dead-lettered once they had `max attempts`. A retry after a lost reply
-- gets the jobs the first attempt delivered, still held, without spending
-- another attempt, leased anew from now (the first lease may have run out
-- while the retry came).
-- Returns {now, next or -1, dead-lettered, discarded, spread,
--          acks answered, answer, ..., id, payload, attempt, fence, due,
--          id, ...}.
-- Numbers are read where they are used (a `tonumber` is a strtod) and
-- passed to commands as the text they came as (a number is a printf).
local on_missed = ARGV[5]
local threshold = on_missed ~= 'fire' and tonumber(ARGV[4])
local token = ARGV[7]
local now, now_text = clock()
batch.now_text = now_text
local dead, discarded, spread = 0, 0, 0
local acked = {}

local function next_due()
  local at = head()
  return at or -1
end

-- The reply's head: the counts, then the acks' answers.
local function reply_head(next_at)
  local h = {now, next_at, dead, discarded, spread, #acked}
  for _, a in ipairs(acked) do h[#h + 1] = a end
  return h
end

if ARGV[8] == '1' then
  local saved = redis.call('GET', KEYS[7])
  if saved then
    local held, counts = cmsgpack.unpack(saved)
    -- What the first attempt counted, for the caller's metrics.
    if counts then dead, discarded, spread = counts[1], counts[2], counts[3] end
    local ids = {}
    for i = 1, #held, 2 do ids[#ids + 1] = held[i] end
    read(ids)
    acked = ack_jobs(10, now)
    -- Leased anew: the consumer that gets them now must hold them a whole
    -- lease, or a rival's claim takes them as leases that ran out.
    local until_text = num(now + tonumber(ARGV[2]))
    local jobs = {}
    for i = 1, #held, 2 do
      local r = batch.recs[held[i]]
      if r and r.s == 'l' and r.fence == held[i + 1] then
        push(batch.zadd, until_text, r.seq .. held[i])
        push(jobs, held[i], payload(r))
        push(jobs, r.attempt, r.fence)
        push(jobs, r.due)
      end
    end
    flush()
    local head_out = reply_head(next_due())
    for _, item in ipairs(jobs) do push(head_out, item) end
    return head_out
  end
end

-- The k-th of n missed jobs goes to start + window * k / n; n is counted
-- when a plan starts, and later calls carry the plan on.
local function spread_out(member)
  local plan = redis.call('HMGET', KEYS[6], 'start', 'window', 'total', 'done')
  local start, width, total, done = tonumber(plan[1]), tonumber(plan[2]), tonumber(plan[3]), tonumber(plan[4])
  if not start or done >= total then
    start, width, done = now, tonumber(ARGV[6]), 0
    total = redis.call('ZCOUNT', KEYS[1], '-inf', '(' .. num(now - threshold))
    if total < 1 then total = 1 end
  end
  local at = start + math.floor(width * done / total)
  if at < now then at = now end
  push(batch.zadd, at, member)
  redis.call('HSET', KEYS[6], 'start', num(start), 'window', num(width), 'total', total, 'done', done + 1)
  spread = spread + 1
  return at
end

-- Only what is due is read: the head of a long queue costs nothing.
-- Scores only where the misfire policy reads them (not under 'fire').
local first, stride
if threshold then
  first = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now_text, 'WITHSCORES', 'LIMIT', '0', ARGV[1])
  stride = 2
else
  first = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now_text, 'LIMIT', '0', ARGV[1])
  stride = 1
end
local n = #first / stride
local ids = {}
for i = 1, n do ids[i] = string.sub(first[stride * i - stride + 1], 9) end
-- One read for the jobs to claim and the jobs to ack. The acks go first,
-- so a job acked here is not claimed again.
local acks = (#ARGV - 9) / 3
for k = 1, acks do ids[n + k] = ARGV[7 + 3 * k] end
local raw = {}
if #ids > 0 then raw = redis.call('HMGET', KEYS[2], unpack(ids)) end
for k = 1, acks do
  local id = ids[n + k]
  if batch.recs[id] == nil then batch.raw[id] = raw[n + k] or false end
end
acked = ack_jobs(10, now)
local reply = reply_head(-1)
local delivered = {}
local until_lease = now + tonumber(ARGV[2])
-- As text once: a Lua number passed to a command is printf'd each time.
local until_text = num(until_lease)
-- A job this call delivered on the fast path (below).
local DELIVERED = true

-- Delivers a job: the next fence and attempt, leased until `until_lease`.
local function deliver(id, member, body, attempt, fence, due)
  push(batch.zadd, until_text, member)
  push(reply, id, body)
  push(reply, attempt, fence)
  push(reply, due)
  push(delivered, id, fence)
end

local byte, sub, pack, unpack_at = string.byte, string.sub, struct.pack, struct.unpack
for i = 1, n do
  local member, id = first[stride * i - stride + 1], ids[i]
  local score = threshold and tonumber(first[2 * i])
  local r = batch.recs[id]
  if r == nil and raw[i] then
    -- The common case, without building a record table: a waiting job
    -- that is on time (or whose misfire policy is to fire) is delivered,
    -- its header rewritten in front of the same payload.
    -- The header's fields are read and rewritten where they lie (see
    -- common.lua): state 1, fence and attempt 2-9, due 10-17, seq 18-25.
    local rec = raw[i]
    if byte(rec, 1) == 119 and sub(rec, 18, 25) == sub(member, 1, 8)
        and (not threshold or now - score <= threshold) then
      local fence, attempt, due = unpack_at('>I4I4d', rec, 2)
      fence, attempt = fence + 1, attempt + 1
      local body = sub(rec, HEADER_LEN + 1)
      push(batch.hset_list, id,
        'l' .. pack('>I4I4', fence, attempt) .. sub(rec, 10, 33) .. token .. body)
      batch.recs[id] = DELIVERED
      deliver(id, member, body, attempt, fence, due)
    else
      r = parse(rec)
      batch.recs[id] = r
    end
  elseif r == nil then
    r = false
    batch.recs[id] = false
  end
  if r == DELIVERED or r == nil then
    -- Handled above (a second member of a job delivered here stays for
    -- a later claim to drop).
  elseif not (r and (r.s == 'w' or r.s == 'l') and (r.seq .. id) == member) then
    -- A member left behind by nothing we know: drop it.
    push(batch.zrem, member)
  elseif r.s == 'l' and r.attempt >= tonumber(ARGV[3]) then
    r.s, r.last = 'x', token
    put(id, r)
    push(batch.zrem, member)
    push(batch.dead_add, now, member)
    dead = dead + 1
  elseif r.s == 'w' and threshold and now - score > threshold then
    if on_missed == 'dead' then
      r.s, r.last = 'x', token
      put(id, r)
      push(batch.zrem, member)
      push(batch.dead_add, now, member)
      dead = dead + 1
    elseif on_missed == 'discard' then
      push(batch.zrem, member)
      finish(id, r, 'g', token, now)
      discarded = discarded + 1
    else
      spread_out(member)
    end
  else
    r.s, r.last = 'l', token
    r.fence, r.attempt = r.fence + 1, r.attempt + 1
    put(id, r)
    deliver(id, member, payload(r), r.attempt, r.fence, r.due)
  end
end
flush()
if #delivered > 0 or dead + discarded + spread > 0 then
  local counts = {dead, discarded, spread}
  redis.call('SET', KEYS[7], cmsgpack.pack(delivered, counts), 'PX', ARGV[9])
end
-- Read after the changes: the earliest of what is left, leases included;
-- at or before now if more was due than `max`.
reply[2], reply[3], reply[4], reply[5] = next_due(), dead, discarded, spread
return reply
