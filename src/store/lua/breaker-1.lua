--[[
  The wallet circuit breaker, shared by every gateway and worker process: one transition, decided
  atomically from the breaker's current state (docs/background.md, "Wallet outages").

  States: closed (absent) -> open -> half_open -> closed, or half_open -> open again.
  - open:        a process's window saw an outage (closed only; ignored otherwise)
  - health_fail: a failed health check; `healthFailures` in a row, each at least `failGapMs` after
                 the one counted before it, open a closed breaker (retries waiting for a verdict ask
                 often: a stall of a second must not look like an outage); one fails a half-open
                 probe
  - health_ok:   a passed health check, its time kept (health_ok_at: a retry whose last try failed
                 as an outage would sends again only after one); an open breaker whose probe is due
                 goes half_open; a half-open one that saw no failed trial for a whole trial window
                 since it went half-open closes (there may be no retry to try with, or every slot may
                 be taken by holders that send nothing: giving slots out again must not hold it
                 half-open)
  - trial:       takes one of the half-open breaker's trial slots ('trial'), or not ('wait'); a
                 reported trial frees its slot; when every slot is taken and none was taken or
                 reported for a trial window, they are given out again (their holders died)
  - trial_unused: a trial's holder asked nothing (it had nothing to ask with): the slot is given
                 back
  - trial_ok:    a trial passed; `trialsToClose` passed trials close it
  - trial_fail:  a trial of transaction `subject` failed; failed trials of `failuresToOpen`
                 different transactions with no passed trial open it again, the next probe later
                 (one transaction may fail again and again for reasons of its own, and a wallet
                 that is up still fails some calls)

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
    ARGV[12] least time between two failed health checks that both count toward opening (ms)

  Output: {state, probe at (ms, '' unless open), opened at (ms, '' when closed), changed: 1 | 0, trial: 'trial' | 'wait' | '',
           last passed health check (ms, '' if none)}
]]
local breakerKey = KEYS[1]
local event, now, reason = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local healthFailures, trials = tonumber(ARGV[4]), tonumber(ARGV[5])
local firstProbeMs, maxProbeMs, trialWindowMs = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local trialsToClose, failuresToOpen, subject = tonumber(ARGV[9]), tonumber(ARGV[10]), ARGV[11]
local failGapMs = tonumber(ARGV[12])

local b = redis.call('HMGET', breakerKey, 'state', 'probe_at', 'opened_at', 'openings', 'health_fail', 'trials', 'trial_ok', 'since', 'trial_fail', 'quiet_since', 'failed_subjects', 'health_ok_at', 'health_fail_at')
local state = b[1] or 'closed'
local probeAt, openedAt = b[2] or '', b[3] or ''
local openings, healthFail = tonumber(b[4] or '0'), tonumber(b[5] or '0')
local trialsTaken, trialsOk, since, trialsFailed = tonumber(b[6] or '0'), tonumber(b[7] or '0'), tonumber(b[8] or '0'), tonumber(b[9] or '0')
-- Half-open with no failed trial since this time (the half-open start, or the last failed trial).
local quietSince = tonumber(b[10] or '0')
-- The transactions whose trials failed in this window, each between two '|'.
local failedSubjects = b[11] or '|'
local healthOkAt = b[12] or ''
local healthFailAt = tonumber(b[13] or '0')
local changed, trial = 0, ''

local function close()
  state, changed, openings, probeAt, openedAt = 'closed', 1, 0, '', ''
  redis.call('DEL', breakerKey)
  redis.call('HSET', breakerKey, 'state', 'closed', 'since', now)
  if healthOkAt ~= '' then redis.call('HSET', breakerKey, 'health_ok_at', healthOkAt) end
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
  if now - healthFailAt >= failGapMs then
    healthFail = healthFail + 1
    redis.call('HSET', breakerKey, 'health_fail', healthFail, 'health_fail_at', now)
  end
  if (state == 'closed' and healthFail >= healthFailures) or state == 'half_open' then open('health check failed') end
elseif event == 'health_ok' then
  healthOkAt = tostring(now)
  redis.call('HSET', breakerKey, 'health_fail', 0, 'health_fail_at', 0, 'health_ok_at', healthOkAt)
  if state == 'open' and now >= tonumber(probeAt) then
    state, changed = 'half_open', 1
    redis.call('HSET', breakerKey, 'state', state, 'trials', 0, 'trial_ok', 0, 'trial_fail', 0, 'failed_subjects', '|', 'since', now, 'quiet_since', now)
  elseif state == 'half_open' and now - quietSince >= trialWindowMs then
    close()
  end
elseif event == 'trial' then
  if state == 'half_open' and trialsTaken >= trials and now - since >= trialWindowMs then
    -- Every slot taken and none reported for a window: their holders died; give them out again.
    redis.call('HSET', breakerKey, 'trials', 1, 'since', now)
    trial = 'trial'
  elseif state == 'half_open' and trialsTaken < trials then
    redis.call('HSET', breakerKey, 'trials', trialsTaken + 1, 'since', now)
    trial = 'trial'
  elseif state ~= 'closed' then
    trial = 'wait'
  end
elseif state == 'half_open' and (event == 'trial_unused' or event == 'trial_ok' or event == 'trial_fail') then
  -- A reported trial frees its slot for the next one.
  redis.call('HSET', breakerKey, 'trials', math.max(0, trialsTaken - 1), 'since', now)
  if event == 'trial_ok' then
    trialsOk = trialsOk + 1
    redis.call('HSET', breakerKey, 'trial_ok', trialsOk)
    if trialsOk >= trialsToClose then close() end
  elseif event == 'trial_fail' then
    if not string.find(failedSubjects, '|' .. subject .. '|', 1, true) then
      trialsFailed = trialsFailed + 1
      failedSubjects = failedSubjects .. subject .. '|'
    end
    redis.call('HSET', breakerKey, 'trial_fail', trialsFailed, 'failed_subjects', failedSubjects, 'quiet_since', now)
    -- One passed trial shows the wallet processes money calls again: failures of some
    -- transactions after it are theirs (a health check that fails still reopens it).
    if trialsFailed >= failuresToOpen and trialsOk == 0 then open(reason) end
  end
end

if state ~= 'open' then probeAt = '' end
if state == 'closed' then openedAt = '' end
return {state, probeAt, openedAt, changed, trial, healthOkAt}
