-- A hit in one round trip: nil unless ready:<user> exists, else the page's ids and scores from the
-- cursor's score down, their bodies and the feed's size. Body keys are built from ARGV (the prefix
-- is not applied to them): fine on a single Redis, which is what this service uses.
--
-- KEYS[1] ready:<user>, KEYS[2] f:<user>; ARGV[1] the highest score ('+inf' or the cursor's),
-- ARGV[2] how many ids, ARGV[3] the body keys' prefix (the client's keyPrefix .. 'p:').
-- Returns {ids and scores, bodies ('' where missing), ZCARD} or nil.
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
local r = redis.call('ZRANGE', KEYS[2], ARGV[1], '-inf', 'BYSCORE', 'REV', 'LIMIT', 0, tonumber(ARGV[2]), 'WITHSCORES')
local bodies = {}
if #r > 0 then
  local keys = {}
  for i = 1, #r, 2 do keys[#keys + 1] = ARGV[3] .. r[i] end
  bodies = redis.call('MGET', unpack(keys))
  for i = 1, #bodies do if not bodies[i] then bodies[i] = '' end end
end
return {r, bodies, redis.call('ZCARD', KEYS[2])}
