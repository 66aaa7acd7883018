-- The records layer, for the scripts that change jobs in general ways
-- (the hot loops of schedule and cancel work on the bytes instead): a
-- record parsed into a table, and changes batched into a few commands.

local function parse(rec)
  local s, fence, attempt, due, seq, made, last = struct.unpack(HEADER, rec)
  return { s = s, fence = fence, attempt = attempt, due = due, seq = seq,
    made = made, last = last, rec = rec }
end

-- The payload of a parsed record (copied only when asked for).
local function payload(r)
  if r.payload == nil then r.payload = string.sub(r.rec, HEADER_LEN + 1) end
  return r.payload
end

local function pack(r)
  return struct.pack(HEADER, r.s, r.fence, r.attempt, r.due, r.seq, r.made, r.last) .. payload(r)
end

local function ended_state(s)
  return s == 'a' or s == 'c' or s == 'g'
end

-- Records read with one HMGET, and changes written back with one HSET,
-- one ZADD and one ZREM per key at the end of a script: a batch of jobs
-- costs the same few commands as one.
-- `raw` holds records as read (false: none), parsed into `recs` only
-- when a general path needs them.
local batch = { recs = {}, raw = {}, hset = {}, hset_list = {}, zadd = {},
  zrem = {}, dead_add = {}, dead_rem = {}, ended = {} }

-- Reads the records of `ids` not read yet into `batch.raw`, with one HMGET.
local function fetch(ids)
  local missing, n = {}, 0
  for _, id in ipairs(ids) do
    if batch.recs[id] == nil and batch.raw[id] == nil then
      n = n + 1
      missing[n] = id
    end
  end
  if n == 0 then return end
  local got = redis.call('HMGET', KEYS[2], unpack(missing))
  for i = 1, n do batch.raw[missing[i]] = got[i] or false end
end

local function read(ids)
  fetch(ids)
  for _, id in ipairs(ids) do
    if batch.recs[id] == nil then
      local rec = batch.raw[id]
      batch.recs[id] = rec and parse(rec) or false
    end
  end
end

local function put(id, r)
  batch.recs[id] = r
  batch.hset[id] = r
end


-- Marks `id` ended at `now` (see `ends`).
local function ended_at(id, now)
  if batch.now_text == nil then batch.now_text = num(now) end
  push(batch.ended, batch.now_text, id)
end

-- Ends a job: its payload goes, its record stays for the retention.
local function finish(id, r, how, token, now)
  r.s, r.last, r.payload = how, token, ''
  put(id, r)
  ended_at(id, now)
end

local function flush()
  local args = batch.hset_list
  for id, r in pairs(batch.hset) do push(args, id, pack(r)) end
  if #args > 0 then redis.call('HSET', KEYS[2], unpack(args)) end
  if #batch.zrem > 0 then redis.call('ZREM', KEYS[1], unpack(batch.zrem)) end
  if #batch.zadd > 0 then redis.call('ZADD', KEYS[1], unpack(batch.zadd)) end
  if #batch.dead_rem > 0 then redis.call('ZREM', KEYS[3], unpack(batch.dead_rem)) end
  if #batch.dead_add > 0 then redis.call('ZADD', KEYS[3], unpack(batch.dead_add)) end
  if #batch.ended > 0 then redis.call('RPUSH', KEYS[4], unpack(batch.ended)) end
end


-- Acks the jobs listed in ARGV from `from`, as (id, fence, token) triples:
-- per job 1 acked by this call (or by its first attempt, whose reply was
-- lost), 2 this delivery was acked before (a repeated ack: nothing
-- changes), or -1 the lease is lost (the job went to another delivery, or
-- it ended some other way). `now` is read only if a job is acked.
local function ack_jobs(from, now)
  local n = (#ARGV - from + 1) / 3
  local ids = {}
  for i = 1, n do ids[i] = ARGV[from + (i - 1) * 3] end
  fetch(ids)
  local out = {}
  local byte, sub = string.byte, string.sub
  for i = 1, n do
    local at = from + (i - 1) * 3
    local id, fence, token = ARGV[at], tonumber(ARGV[at + 1]), ARGV[at + 2]
    local r = batch.recs[id]
    local rec = r == nil and batch.raw[id]
    if rec and byte(rec, 1) == 108 and struct.unpack('>I4', rec, 2) == fence then
      -- The common case, on the bytes (see common.lua): a job leased to
      -- this delivery. Its record keeps the header, not the payload; the
      -- rest of the call sees the fields it may read.
      if now == nil then now, batch.now_text = clock() end
      push(batch.zrem, sub(rec, 18, 25) .. id)
      push(batch.hset_list, id, 'a' .. sub(rec, 2, 33) .. token)
      batch.recs[id] = { s = 'a', fence = fence, last = token }
      ended_at(id, now)
      out[i] = 1
    else
      if r == nil then
        r = rec and parse(rec) or false
        batch.recs[id] = r
      end
      if not r or r.fence ~= fence then
        out[i] = -1
      elseif r.s == 'l' then
        if now == nil then now, batch.now_text = clock() end
        push(batch.zrem, r.seq .. id)
        finish(id, r, 'a', token, now)
        out[i] = 1
      elseif r.s == 'a' then
        if r.last == token then out[i] = 1 else out[i] = 2 end
      else
        out[i] = -1
      end
    end
  end
  return out
end
