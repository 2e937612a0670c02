-- One post into many feeds (a fan-out chunk) in one call. The loop runs in Redis (about a
-- millisecond for a thousand feeds), so a chunk costs the service one small command instead of
-- building and parsing a pipeline of a thousand, which is what lets a small post's fan-out run
-- beside a large one without waiting for the event loop (docs/FEED.md "Lanes").
--
-- KEYS[1] the small-lane marker (lane:small), then f:<user>, live:<user> pairs (numberOfKeys is
-- passed per call). ARGV[1] score, ARGV[2] post id, ARGV[3] the cap, ARGV[4] = 1: yield to the
-- small lane, i.e. write nothing and return -1 while a small-lane holder's deadline is in the
-- future (checked atomically with the write). Returns the number of live feeds written.
if ARGV[4] == '1' then
  local t = redis.call('TIME')
  if redis.call('ZCOUNT', KEYS[1], '(' .. (t[1] * 1000 + math.floor(t[2] / 1000)), '+inf') > 0 then return -1 end
end
local cap = tonumber(ARGV[3])
local written = 0
for i = 2, #KEYS, 2 do
  local ttl = redis.call('PTTL', KEYS[i + 1])
  if ttl > 0 then
    redis.call('ZADD', KEYS[i], ARGV[1], ARGV[2])
    local n = redis.call('ZCARD', KEYS[i])
    if n > cap then redis.call('ZREMRANGEBYRANK', KEYS[i], 0, n - cap - 1) end
    if redis.call('PTTL', KEYS[i]) == -1 then redis.call('PEXPIRE', KEYS[i], ttl) end
    written = written + 1
  end
end
return written
