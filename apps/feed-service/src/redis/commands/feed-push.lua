-- Pushes one post into one feed if the feed is live: ZADD (same member, same score: no change),
-- trim to the cap, and give a feed the live key's expiry if it has none. One script call per
-- follower keeps the guard and the write atomic, and pipelines like a plain command.
--
-- KEYS[1] f:<user>, KEYS[2] live:<user>; ARGV[1] the cap, then score, member pairs.
-- Returns 1 when written, 0 when the feed is not live.
local ttl = redis.call('PTTL', KEYS[2])
if ttl < 0 then return 0 end
local cap = tonumber(ARGV[1])
for i = 2, #ARGV, 2 do redis.call('ZADD', KEYS[1], ARGV[i], ARGV[i + 1]) end
local n = redis.call('ZCARD', KEYS[1])
if n > cap then redis.call('ZREMRANGEBYRANK', KEYS[1], 0, n - cap - 1) end
if redis.call('PTTL', KEYS[1]) == -1 then redis.call('PEXPIRE', KEYS[1], ttl) end
return 1
