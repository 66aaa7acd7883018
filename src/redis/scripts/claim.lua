-- ARGV: max, lease, max attempts, misfire threshold, on missed ('fire',
-- 'dead', 'discard', 'spread'), spread window, retention (microseconds)
-- Looks at no more than `max` jobs whose time has come, oldest first:
-- waiting ones are delivered (or, if later than the threshold, follow the
-- misfire policy); leased ones whose lease ran out are delivered again, or
-- dead-lettered after `max attempts`.
-- Returns {now, next or -1, dead-lettered, discarded, spread,
--          id, payload, attempt, due, id, payload, ...}.
local max = tonumber(ARGV[1])
local lease = tonumber(ARGV[2])
local max_attempts = tonumber(ARGV[3])
local threshold = tonumber(ARGV[4])
local on_missed = ARGV[5]
local window = tonumber(ARGV[6])
local retention = tonumber(ARGV[7])
local out = {}
local dead, discarded, spread = 0, 0, 0

local function deliver(id, attempt, due, member)
  attempt = attempt + 1
  store(id, 'l', attempt, due, member)
  redis.call('ZADD', KEYS[1], num(now + lease), member)
  out[#out + 1] = id
  out[#out + 1] = redis.call('HGET', KEYS[3], id) or ''
  out[#out + 1] = attempt
  out[#out + 1] = due
end

local function dead_letter(id, attempt, due, member)
  to_dead(id, attempt, due, member)
  dead = dead + 1
end

-- The k-th of n missed jobs goes to start + window * k / n; n is counted
-- when a plan starts, and later calls carry the plan on.
local function spread_out(member)
  local plan = redis.call('HMGET', KEYS[8], 'start', 'window', 'total', 'done')
  local start, width, total, done = tonumber(plan[1]), tonumber(plan[2]), tonumber(plan[3]), tonumber(plan[4])
  if not start or done >= total then
    start, width, done = now, window, 0
    total = redis.call('ZCOUNT', KEYS[1], '-inf', '(' .. num(now - threshold))
    if total < 1 then total = 1 end
  end
  local at = start + math.floor(width * done / total)
  if at < now then at = now end
  redis.call('ZADD', KEYS[1], num(at), member)
  redis.call('HSET', KEYS[8], 'start', num(start), 'window', num(width), 'total', total, 'done', done + 1)
  spread = spread + 1
end

local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', num(now), 'WITHSCORES', 'LIMIT', 0, max)
for i = 1, #due, 2 do
  local member = due[i]
  local score = tonumber(due[i + 1])
  local id = string.sub(member, 17)
  local meta = redis.call('HGET', KEYS[2], id)
  if not meta then
    redis.call('ZREM', KEYS[1], member)
  else
    local state, attempt, jdue = parse(meta)
    if state == 'l' then
      if attempt >= max_attempts then
        dead_letter(id, attempt, jdue, member)
      else
        deliver(id, attempt, jdue, member)
      end
    elseif now - score > threshold and on_missed ~= 'fire' then
      if on_missed == 'dead' then
        dead_letter(id, attempt, jdue, member)
      elseif on_missed == 'discard' then
        redis.call('ZREM', KEYS[1], member)
        ended(id, 'g')
        discarded = discarded + 1
      else
        spread_out(member)
      end
    else
      deliver(id, attempt, jdue, member)
    end
  end
end

local old = redis.call('ZRANGEBYSCORE', KEYS[6], '-inf', num(now - retention), 'LIMIT', 0, 100)
for _, id in ipairs(old) do
  redis.call('HDEL', KEYS[5], id)
  redis.call('ZREM', KEYS[6], id)
end

local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local nxt = -1
if first[2] then nxt = tonumber(first[2]) end
local head = {now, nxt, dead, discarded, spread}
for _, v in ipairs(out) do head[#head + 1] = v end
return head
