--[[
  The wallet circuit breaker, shared by every gateway and worker process: one transition, decided
  atomically from the breaker's current state (docs/background.md, "Wallet outages").

  States: closed (absent) -> open -> half_open -> closed, or half_open -> open again.
  - open:        a process's window saw an outage (closed only; ignored otherwise)
  - health_fail: a failed health check; `healthFailures` in a row open a closed breaker, one fails
                 a half-open probe
  - health_ok:   a passed health check; an open breaker whose probe is due goes half_open; a
                 half-open one that saw no failed trial for a whole trial window since it went
                 half-open closes (there may be no retry to try with, or every slot may be taken by
                 holders that send nothing: giving slots out again must not hold it half-open)
  - trial:       takes one of the half-open breaker's trial retries ('trial'), or not ('wait');
                 slots taken longer than a trial window ago are given out again (their holder may
                 have died, or found nothing to send)
  - trial_unused: a trial's holder sent nothing (its work was settled elsewhere, or had to wait):
                 the slot is given back
  - trial_ok:    a trial passed; `trialsToClose` passed trials close it
  - trial_fail:  a trial of transaction `subject` failed; failed trials of `failuresToOpen`
                 different transactions in the same half-open window open it again, the next probe
                 later (one transaction may fail again and again for reasons of its own, and a
                 wallet that is up still fails a few calls)

  Input:
    KEYS[1] breaker

    ARGV[1] event: open | health_fail | health_ok | trial | trial_unused | trial_ok | trial_fail
    ARGV[2] now (ms)
    ARGV[3] reason (for open)
    ARGV[4] health failures that open it
    ARGV[5] trial slots at a time
    ARGV[6] first probe delay (ms)
    ARGV[7] longest probe delay (ms)
    ARGV[8] trial window (ms)
    ARGV[9] passed trials that close it
    ARGV[10] different transactions whose failed trials open it again
    ARGV[11] subject: the transaction of a failed trial

  Output: {state, probe at (ms, '' unless open), opened at (ms, '' when closed), changed: 1 | 0, trial: 'trial' | 'wait' | ''}
]]
local breakerKey = KEYS[1]
local event, now, reason = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local healthFailures, trials = tonumber(ARGV[4]), tonumber(ARGV[5])
local firstProbeMs, maxProbeMs, trialWindowMs = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local trialsToClose, failuresToOpen, subject = tonumber(ARGV[9]), tonumber(ARGV[10]), ARGV[11]

local b = redis.call('HMGET', breakerKey, 'state', 'probe_at', 'opened_at', 'openings', 'health_fail', 'trials', 'trial_ok', 'since', 'trial_fail', 'quiet_since', 'failed_subjects')
local state = b[1] or 'closed'
local probeAt, openedAt = b[2] or '', b[3] or ''
local openings, healthFail = tonumber(b[4] or '0'), tonumber(b[5] or '0')
local trialsTaken, trialsOk, since, trialsFailed = tonumber(b[6] or '0'), tonumber(b[7] or '0'), tonumber(b[8] or '0'), tonumber(b[9] or '0')
-- Half-open with no failed trial since this time (the half-open start, or the last failed trial).
local quietSince = tonumber(b[10] or '0')
-- The transactions whose trials failed in this window, each between two '|'.
local failedSubjects = b[11] or '|'
local changed, trial = 0, ''

local function close()
  state, changed, openings, probeAt, openedAt = 'closed', 1, 0, '', ''
  redis.call('DEL', breakerKey)
  redis.call('HSET', breakerKey, 'state', 'closed', 'since', now)
end

local function open(why)
  openings = openings + 1
  if state == 'closed' then openedAt = tostring(now) end
  probeAt = tostring(math.floor(now + math.min(maxProbeMs, firstProbeMs * 2 ^ (openings - 1))))
  state, changed = 'open', 1
  redis.call('HSET', breakerKey, 'state', state, 'probe_at', probeAt, 'opened_at', openedAt, 'openings', openings,
    'trials', 0, 'trial_ok', 0, 'trial_fail', 0, 'failed_subjects', '|', 'reason', why, 'since', now)
end

if event == 'open' then
  if state == 'closed' then open(reason) end
elseif event == 'health_fail' then
  healthFail = healthFail + 1
  redis.call('HSET', breakerKey, 'health_fail', healthFail)
  if (state == 'closed' and healthFail >= healthFailures) or state == 'half_open' then open('health check failed') end
elseif event == 'health_ok' then
  redis.call('HSET', breakerKey, 'health_fail', 0)
  if state == 'open' and now >= tonumber(probeAt) then
    state, changed = 'half_open', 1
    redis.call('HSET', breakerKey, 'state', state, 'trials', 0, 'trial_ok', 0, 'trial_fail', 0, 'failed_subjects', '|', 'since', now, 'quiet_since', now)
  elseif state == 'half_open' and now - quietSince >= trialWindowMs then
    close()
  end
elseif event == 'trial' then
  if state == 'half_open' and trialsTaken >= trials and now - since >= trialWindowMs then
    -- Slots not reported within a window: give them out again, a new window.
    redis.call('HSET', breakerKey, 'trials', 1, 'trial_ok', 0, 'trial_fail', 0, 'failed_subjects', '|', 'since', now)
    trial = 'trial'
  elseif state == 'half_open' and trialsTaken < trials then
    redis.call('HINCRBY', breakerKey, 'trials', 1)
    trial = 'trial'
  elseif state ~= 'closed' then
    trial = 'wait'
  end
elseif event == 'trial_unused' then
  if state == 'half_open' and trialsTaken > 0 then redis.call('HINCRBY', breakerKey, 'trials', -1) end
elseif event == 'trial_ok' then
  if state == 'half_open' then
    trialsOk = trialsOk + 1
    redis.call('HSET', breakerKey, 'trial_ok', trialsOk)
    if trialsOk >= trialsToClose then close() end
  end
elseif event == 'trial_fail' then
  if state == 'half_open' then
    if not string.find(failedSubjects, '|' .. subject .. '|', 1, true) then
      trialsFailed = trialsFailed + 1
      failedSubjects = failedSubjects .. subject .. '|'
    end
    redis.call('HSET', breakerKey, 'trial_fail', trialsFailed, 'failed_subjects', failedSubjects, 'quiet_since', now)
    if trialsFailed >= failuresToOpen then open(reason) end
  end
end

if state ~= 'open' then probeAt = '' end
if state == 'closed' then openedAt = '' end
return {state, probeAt, openedAt, changed, trial}
