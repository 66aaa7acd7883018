-- KEYS: the queue's job schedulers. ARGV: key, version, new horizon.
-- Moves the horizon up to the new one if the record is still the version
-- (never back: makers that race each move it to their last run, so it
-- always covers every run made for the version, which is what a change
-- or removal cancels). Answers 1 if it moved; 0 if it was there already
-- (another maker went as far); -1 if the scheduler changed or went
-- meanwhile (the caller's runs are stale).
local record = redis.call('HGET', KEYS[1], ARGV[1])
if not record then return -1 end
local v, h, spec = string.match(record, '^(%d+)\n(%-?%d+)\n(.*)$')
if v ~= ARGV[2] then return -1 end
if tonumber(h) >= tonumber(ARGV[3]) then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], v .. '\n' .. ARGV[3] .. '\n' .. spec)
return 1
