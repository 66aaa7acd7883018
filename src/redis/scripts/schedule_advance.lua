-- KEYS: the queue's job schedulers. ARGV: key, version, horizon seen,
-- new horizon. Moves the horizon on if the record is still the version and
-- horizon the caller read. Answers 1 if it moved; 0 if another consumer
-- moved it first (the caller's runs are the same jobs); -1 if the
-- scheduler changed or went meanwhile (the caller's runs are stale).
local record = redis.call('HGET', KEYS[1], ARGV[1])
if not record then return -1 end
local v, h, spec = string.match(record, '^(%d+)\n(%-?%d+)\n(.*)$')
if v ~= ARGV[2] then return -1 end
if h ~= ARGV[3] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], v .. '\n' .. ARGV[4] .. '\n' .. spec)
return 1
