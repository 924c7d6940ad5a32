import type { RedisClient } from '../store/redis';
import type { WalletSettings } from '../config/env';
import type { Logger } from '../observability/logger';
import type { Metrics } from '../observability/metrics';
import { walletCallObserver } from '../observability/wallet-calls';
import { createBreakerStore, type BreakerState, type BreakerStore, type BreakerView } from '../store/breaker';
import type { Keys } from '../store/keys';
import { createWalletClient, walletSigner } from '../wallet/client';
import type { WalletCallEvent, WalletClient, WalletOutcome } from '../wallet/protocol';
import { BREAKER_POLICY, OutcomeWindow, isOutageSignal, type BreakerPolicy } from './breaker-policy';
import { createInFlightCap, type InFlightCap } from './in-flight-cap';

/**
 * The wallet circuit breaker as one process sees it (contract 5.3 keeps its 10 retries; the breaker
 * stops wasting them on an outage). The state is shared through Redis, so every gateway and worker
 * agrees; each process keeps a cached copy (refreshed every REFRESH_MS) so the hot path asks no
 * Redis while the breaker is closed, its own sliding window of wallet calls, and takes part in the
 * health checks (one process at a time, by lease).
 */
export type RetryGate =
  | { readonly kind: 'go' | 'trial' }
  /**
   * `breaker`: it is not closed, the whole queue waits for the probe. `verdict`: it is closed, but
   * this one send's last try failed as an outage would and no health check passed since: it waits
   * for the breaker's verdict (a passed check, or the breaker open) instead of spending its budget.
   */
  | { readonly kind: 'wait'; readonly ms: number; readonly for: 'breaker' | 'verdict' };

export interface WalletBreaker {
  state(): BreakerState;
  /** Closed: the gateway may call the wallet inline. Otherwise bets are refused and wins queued. */
  allowsCalls(): boolean;
  /** Every wallet call's outcome, from the wallet client's onCall. */
  observe(event: WalletCallEvent): void;
  /**
   * Before a background wallet call: go (closed), a trial (half-open; retries only), or wait (no
   * budget spent). `failedAt`: when the call's last try failed as an outage would (unknown outcome,
   * an `outage` code); it then goes only once a health check passed after that.
   */
  gate(asker: 'retry' | 'terminate', failedAt?: number): Promise<RetryGate>;
  /** When a health check last passed, as this process saw the shared state (0: none). */
  healthOkAt(): number;
  /** The outcome of a trial the gate granted, for one transaction. */
  trialDone(transactionId: string, event: Pick<WalletCallEvent, 'outcome' | 'code'>): Promise<void>;
  /** A trial the gate granted was not made (nothing to ask with): its slot goes back. */
  trialUnused(): Promise<void>;
  /** A call not made because the breaker is not closed (metrics). */
  refused(call: string): void;
  /** Starts the refresh and health-check loop; `health` is the wallet client's health check. */
  start(wallet: Pick<WalletClient, 'healthCheck'>): void;
  close(): Promise<void>;
}

/** How often the shared state is read again. */
export const REFRESH_MS = 500;
/** A waiting retry looks again at least this soon (the probe may come earlier than planned). */
const MIN_WAIT_MS = 500;
/** A send waiting for a verdict has this process ask the health check, at most this often. */
const VERDICT_ASK_MS = 500;
const STATE_VALUE: Record<BreakerState, number> = { closed: 0, half_open: 1, open: 2 };

export interface WalletBreakerDeps {
  readonly store: BreakerStore;
  /**
   * Whether this process's own calls feed the window: a gateway's are first attempts, a fair
   * sample of the wallet; a worker's are retries of calls that already failed, and would make any
   * busy retry queue look like an outage (the soak showed it). Workers still take part in the
   * health checks and the trials.
   */
  readonly observeCalls: boolean;
  readonly logger: Logger;
  readonly metrics?: Metrics;
  readonly policy?: BreakerPolicy;
  readonly now?: () => number;
}

export function createWalletBreaker(deps: WalletBreakerDeps): WalletBreaker {
  const { store, logger, metrics } = deps;
  const policy = deps.policy ?? BREAKER_POLICY;
  const now = deps.now ?? Date.now;
  const window = new OutcomeWindow(policy);
  let view: BreakerView = { state: 'closed', probeAt: null, openedAt: null, healthOkAt: null };
  let timer: NodeJS.Timeout | undefined;
  let ticking: Promise<void> | undefined;
  let lastHealthAt = 0;
  let opening = false;
  /** The wallet's health check, once started. */
  let health: Pick<WalletClient, 'healthCheck'> | undefined;
  /** The health check this process asks for sends waiting on a verdict: one at a time, all of them wait on it. */
  let asking: Promise<void> | undefined;

  function adopt(next: BreakerView, changedHere: boolean, why?: string): void {
    if (next.state !== view.state) {
      const fields = { breaker: next.state, was: view.state, probe_at: next.probeAt, reason: why };
      if (changedHere) {
        metrics?.walletBreakerTransitions.inc({ to: next.state });
        logger[next.state === 'closed' ? 'info' : 'warn'](fields, `wallet circuit breaker ${next.state.replace('_', '-')}`);
      } else {
        logger.info(fields, 'wallet circuit breaker state seen');
      }
      if (next.state === 'closed') window.clear();
    }
    view = next;
    metrics?.walletBreakerState.set(STATE_VALUE[next.state]);
    metrics?.walletBreakerOpenSeconds.set(next.openedAt === null ? 0 : Math.max(0, (now() - next.openedAt) / 1000));
  }

  async function report(event: Parameters<BreakerStore['report']>[0], why?: string, subject?: string, at = now()) {
    const t = await store.report(event, at, why, subject);
    adopt(t, t.changed, why);
    return t;
  }

  /** One health check, reported to the shared state; a pass counts from when it was asked (news after any failure before it). */
  async function checkHealth(wallet: Pick<WalletClient, 'healthCheck'>): Promise<void> {
    const at = now();
    lastHealthAt = at;
    const { healthy } = await wallet.healthCheck();
    await report(healthy ? 'health_ok' : 'health_fail', healthy ? undefined : 'health check failed', undefined, healthy ? at : now());
  }

  async function tick(wallet: Pick<WalletClient, 'healthCheck'>): Promise<void> {
    try {
      adopt(await store.read(), false);
      const at = now();
      const recent = window.verdict(at);
      const suspect = view.state === 'closed' && recent.failures >= policy.suspectFailures && recent.subjects >= 2;
      const due =
        view.state === 'open'
          ? view.probeAt !== null && at >= view.probeAt
          : at - lastHealthAt >= (suspect ? policy.suspectHealthIntervalMs : policy.healthIntervalMs);
      // An open breaker whose probe is due asks every second (one process, by lease): the work it
      // holds drains as soon as the wallet is back, not up to a closed breaker's interval later.
      const leaseMs = view.state === 'open' ? policy.suspectHealthIntervalMs : policy.healthIntervalMs - REFRESH_MS;
      if (!due || (!suspect && !(await store.takeHealthLease(leaseMs)))) return;
      await checkHealth(wallet);
    } catch (err) {
      logger.warn({ err }, 'wallet circuit breaker: refresh failed');
    }
  }

  return {
    state: () => view.state,
    allowsCalls: () => view.state === 'closed',

    observe(event) {
      if (!deps.observeCalls || event.operation === 'health-check' || view.state !== 'closed') return;
      window.record(now(), isOutageSignal(event), event.transactionId ?? event.operation);
      const verdict = window.verdict(now());
      if (!verdict.open || opening) return;
      opening = true;
      const why = `${verdict.failures} of ${verdict.calls} wallet calls failed across ${verdict.subjects} transactions in ${policy.windowMs} ms`;
      report('open', why)
        .catch((err: unknown) => logger.warn({ err }, 'wallet circuit breaker: could not open'))
        .finally(() => {
          opening = false;
        });
    },

    async gate(asker, failedAt) {
      const unanswered = () => view.state === 'closed' && failedAt !== undefined && (view.healthOkAt ?? 0) <= failedAt;
      if (unanswered()) {
        // The breaker's verdict on that failure: a health check asked now. A pass lets the send go
        // (the failure was the transaction's own); failing ones open the breaker within seconds.
        if (health !== undefined && (asking !== undefined || now() - lastHealthAt >= VERDICT_ASK_MS)) {
          asking ??= checkHealth(health)
            .catch((err: unknown) => logger.warn({ err }, 'wallet circuit breaker: health check failed to run'))
            .finally(() => {
              asking = undefined;
            });
          await asking;
        }
        if (unanswered()) return { kind: 'wait', ms: MIN_WAIT_MS, for: 'verdict' };
      }
      if (view.state === 'closed') return { kind: 'go' };
      if (view.state === 'open') return { kind: 'wait', ms: Math.max(MIN_WAIT_MS, (view.probeAt ?? now()) - now()), for: 'breaker' };
      if (asker === 'terminate') return { kind: 'wait', ms: MIN_WAIT_MS, for: 'breaker' };
      const t = await report('trial');
      return t.trial === 'wait' ? { kind: 'wait', ms: MIN_WAIT_MS, for: 'breaker' } : { kind: t.trial };
    },

    healthOkAt: () => view.healthOkAt ?? 0,

    async trialDone(transactionId, event) {
      if (isOutageSignal(event)) await report('trial_fail', 'trials of different transactions failed', transactionId);
      else await report('trial_ok');
    },

    async trialUnused() {
      await report('trial_unused');
    },

    refused(call) {
      metrics?.walletBreakerRefused.inc({ call });
    },

    start(wallet) {
      health = wallet;
      timer ??= setInterval(() => {
        ticking ??= tick(wallet).finally(() => {
          ticking = undefined;
        });
      }, REFRESH_MS);
      timer.unref();
    },

    async close() {
      if (timer !== undefined) clearInterval(timer);
      await ticking;
    },
  };
}

export interface GuardedWalletDeps {
  readonly settings: WalletSettings;
  /** The wallet's id in the registry (its spans name it). */
  readonly walletId: string;
  /** The wallet's max_in_flight (contract 11), shared out over the processes serving it. */
  readonly maxInFlight: number;
  /** The gateway: its first attempts feed the breaker's window (see WalletBreakerDeps). */
  readonly observeCalls: boolean;
  readonly redis: RedisClient;
  readonly keys: Keys;
  readonly logger: Logger;
  readonly metrics: Metrics;
  /** A wallet client of the caller's (tests); default the undici client built from the settings. */
  readonly wallet?: WalletClient;
  readonly now?: () => number;
}

/**
 * The wallet client a process calls through, as the gateway and the worker both wire it: every
 * call logged and counted, and seen by the process's circuit breaker, which is started on it.
 * Close the breaker and the cap, then the client.
 */
export function openGuardedWallet(deps: GuardedWalletDeps): { readonly wallet: WalletClient; readonly breaker: WalletBreaker; readonly cap: InFlightCap } {
  const { settings, logger, metrics } = deps;
  const breaker = createWalletBreaker({
    store: createBreakerStore(deps.redis, deps.keys, BREAKER_POLICY),
    logger: logger.child({ component: 'breaker' }),
    metrics,
    observeCalls: deps.observeCalls,
    now: deps.now,
  });
  const observe = walletCallObserver(logger.child({ component: 'wallet' }), metrics);
  const client =
    deps.wallet ??
    createWalletClient({
      settings,
      signer: walletSigner(settings),
      walletId: deps.walletId,
      onCall: (event) => {
        observe(event);
        breaker.observe(event);
      },
    });
  breaker.start(client);
  // Calls this process has open at the wallet: published with its presence for the operators' wallet list.
  let inFlight = 0;
  const cap = createInFlightCap({
    redis: deps.redis,
    keys: { presence: deps.keys.inFlightPresence(), calls: deps.keys.inFlightCalls() },
    maxInFlight: deps.maxInFlight,
    openCalls: () => inFlight,
    metrics,
    now: deps.now,
    onError: (err) => logger.warn({ err }, 'max_in_flight presence not renewed'),
  });
  cap.start();
  const counted = async (call: () => Promise<WalletOutcome>): Promise<WalletOutcome> => {
    inFlight += 1;
    try {
      return await call();
    } finally {
      inFlight -= 1;
    }
  };
  const wallet: WalletClient = {
    call: (op, fields, context) => counted(() => client.call(op, fields, context)),
    send: (op, body, context) => counted(() => client.send(op, body, context)),
    healthCheck: () => client.healthCheck(),
    close: () => client.close(),
  };
  return { wallet, breaker, cap };
}

