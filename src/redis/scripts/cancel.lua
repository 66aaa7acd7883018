-- ARGV: id. Returns {'cancelled', payload}, {'in_flight'}, {'acked'},
-- {'ended', how} or {'unknown'}.
local id = ARGV[1]
local meta = redis.call('HGET', KEYS[2], id)
if not meta then
  local how = redis.call('HGET', KEYS[5], id)
  if how == 'a' then return {'acked'} end
  if how then return {'ended', how} end
  return {'unknown'}
end
local state, _, _, member = parse(meta)
if state == 'l' then
  return {'in_flight'}
end
local payload = redis.call('HGET', KEYS[3], id) or ''
redis.call('ZREM', KEYS[1], member)
redis.call('ZREM', KEYS[4], member)
ended(id, 'c')
return {'cancelled', payload}
