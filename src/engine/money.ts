import { hash } from 'node:crypto';
import { compensationFor, compensationRef, replaceFailedRollback } from '../duties/compensation';
import { afterInlineAttempt, inlineCallWindowMs, isRefusedForGood, LEASE_MARGIN_MS, refusedUnsent } from '../duties/settlement';
import { exactDecimal } from '../lib/money';
import { walletSessionFields } from '../store/sessions';
import type { ClaimResult } from '../store/transactions';
import type { NewTransaction, TransactionKind, TransactionRecord } from '../store/types';
import { encodeRequest, type CreditFields, type DebitFields, type WalletOutcome } from '../wallet/protocol';
import { UNRECORDED_REFUSAL, storedAnswer } from './records';
import { amountIssue, betBody, fieldIssues, settleBody } from './schemas';
import { NO_CONTEXT, errors, failed, type Answer, type EngineConfig, type EngineDeps, type EngineError, type RequestContext } from './types';

/**
 * bet → debit, win → credit, refund → rollback. One claim in Redis decides idempotency, the
 * session state and the round rules atomically before any wallet call; the inline attempt's
 * outcome is read by the shared settlement (src/duties/settlement.ts).
 */

export function currencyDigits(config: EngineConfig, currency: string): number {
  return config.CURRENCY_DIGITS[currency] ?? config.DEFAULT_CURRENCY_DIGITS;
}


interface Parsed {
  kind: TransactionKind;
  roundId: string;
  transactionId: string;
  betTransactionId: string | null;
  amount: string;
  roundClosed: boolean;
}

/**
 * Idempotency key material (contract 5.1): what the engine sent — the route's kind and the parsed
 * fields with defaults applied, the amount as an exact decimal — and the wallet token it is for. Not
 * the session: a repeat through a relaunched session of the token is the same request.
 */
function bodyHash(tokenRef: string, p: Parsed, exactAmount: string): string {
  const canonical = JSON.stringify([p.kind, tokenRef, p.roundId, p.transactionId, p.betTransactionId, exactAmount, p.roundClosed]);
  return hash('sha256', canonical, 'base64url');
}

function claimRefusal(result: Exclude<ClaimResult, { kind: 'claimed' | 'deferred' | 'duplicate' }>): Answer {
  switch (result.kind) {
    case 'conflict':
      return failed(errors.conflict());
    case 'session_not_found':
      return failed(errors.sessionNotFound());
    case 'session_ended':
      return failed(errors.sessionEnded());
    case 'round_closed':
      return failed(errors.roundClosed());
    case 'round_has_bet':
      return failed(errors.roundHasBet());
    case 'bet_not_found':
      return failed(errors.betNotFound());
    case 'bet_already_refunded':
      return failed(errors.betAlreadyRefunded());
    case 'amount_mismatch':
      return failed(errors.validation([{ field: 'amount', message: "must equal the bet's amount" }]));
    case 'currency_mismatch':
      return failed(errors.currencyMismatch());
    case 'in_progress':
      return failed(errors.betInProgress());
    case 'bet_not_open':
      return failed(errors.betNotOpen());
  }
}

export interface MoneyCalls {
  bet(sessionId: string, body: unknown, context?: RequestContext): Promise<Answer>;
  win(sessionId: string, body: unknown, context?: RequestContext): Promise<Answer>;
  refund(sessionId: string, body: unknown, context?: RequestContext): Promise<Answer>;
}

export function createMoneyCalls(deps: EngineDeps): MoneyCalls {
  const { wallet, sessions, transactions, duties, durability, config, clock, logger, breaker, cap } = deps;
  const multiBet = new Set(config.MULTI_BET_GAMES);
  /** A compensation begun here is its job's to send; the sweeper takes it over only after this. */
  const compensationLeaseMs = config.WALLET_TIMEOUT_MS + LEASE_MARGIN_MS;

  /** The answer once the writes it relies on are durable (contract 9); else 503 NOT_DURABLE, safe to repeat. */
  async function whenDurable(answer: Answer, shard: number): Promise<Answer> {
    return (await durability.confirm(shard)) ? answer : failed(errors.notDurable());
  }

  /**
   * A stored answer: what it promises (a 200, a 202, a refusal with its compensation queued) may
   * have been written by another process, so the WAIT must cover what was read.
   */
  async function storedDurable(record: TransactionRecord, balance: string): Promise<Answer> {
    const answer = storedAnswer(record, balance);
    if (answer.state === 'failed' && record.compensationId === null) return answer;
    return (await durability.confirmRead(transactions.shardOf(record))) ? answer : failed(errors.notDurable());
  }

  async function betAmountText(betId: string, exactAmount: string, shard: number, given: string): Promise<string> {
    const bet = await transactions.get(betId, shard);
    return bet !== undefined && bet.kind === 'debit' && exactDecimal(bet.amount) === exactAmount ? bet.amount : given;
  }

  async function run(sessionId: string, p: Parsed, context: RequestContext): Promise<Answer> {
    // The session's fixed fields only (usually from memory): whether it is still there and open,
    // and its balance, come from the claim below, atomically with the claim itself.
    const session = await sessions.profile(sessionId);
    if (session === undefined) return answerWithoutSession(sessionId, p);

    const digits = currencyDigits(config, session.currency);
    const issue = amountIssue(p.amount, digits, p.kind === 'debit');
    if (issue !== undefined) return failed(errors.validation([issue]));
    const exactAmount = exactDecimal(p.amount);
    // The player's shard holds the record, its round and its job: what the answer waits for.
    const shard = transactions.shardOf(session);

    // multi_bet games: every bet is its own wallet round, named by the bet's id; a win or refund
    // goes to the wallet round of the bet it references.
    const multi = multiBet.has(session.gameId);
    const walletRoundId = multi ? (p.kind === 'debit' ? p.transactionId : (p.betTransactionId as string)) : p.roundId;

    // Added onto the fresh session fields, in the wire's order (a spread with keys after it is
    // node 20's slow path).
    // A refund goes to the wallet with its bet's amount text, byte for byte (the claim holds the two
    // equal as decimals, so `10` refunds a `10.00` bet, which the wallet is sent as `10.00`).
    const wireAmount = p.kind === 'rollback' ? await betAmountText(p.betTransactionId as string, exactAmount, shard, p.amount) : p.amount;
    const base = Object.assign(walletSessionFields(session, config.PROVIDER_ID), { amount: wireAmount, round_id: walletRoundId, transaction_id: p.transactionId, round_closed: p.roundClosed });
    const walletBody =
      p.kind === 'debit'
        ? encodeRequest('debit', base satisfies DebitFields)
        : encodeRequest(p.kind, Object.assign(base, { reference_transaction_id: p.betTransactionId as string }) satisfies CreditFields);

    const now = clock();
    const record: NewTransaction = {
      transactionId: p.transactionId,
      kind: p.kind,
      sessionId,
      tokenRef: session.tokenRef,
      playerId: session.playerId,
      siteId: session.siteId,
      roundId: p.roundId,
      walletRoundId,
      amount: p.amount,
      currency: session.currency,
      roundClosed: p.roundClosed,
      referenceTransactionId: p.betTransactionId,
      bodyHash: bodyHash(session.tokenRef, p, exactAmount),
      walletOperation: p.kind,
      walletBody,
      isCompensation: false,
      createdAt: now,
    };
    // One round trip: idempotency, session state, round rules, the record, and the session's
    // sliding expiry (renewed here rather than beside the wallet call).
    const claim = await transactions.claim({
      record,
      exactAmount,
      leaseUntil: now + inlineCallWindowMs(config),
      sessionTtlSeconds: sessions.ttlSeconds,
      engineRequestId: context.requestId,
    });
    if (claim.kind === 'duplicate') return storedDurable(claim.record, claim.sessionBalance ?? claim.record.balance ?? '0');
    if (claim.kind === 'deferred') {
      // It closes a round whose earlier credits/rollbacks still retry: a worker sends it once they
      // settled (sent now, it would close the round under them). Durably queued, then 202.
      await duties.enqueueRetry(record, 0);
      return whenDurable({ state: 'pending', transactionId: p.transactionId, balance: claim.sessionBalance, currency: session.currency }, shard);
    }
    if (claim.kind !== 'claimed') return claimRefusal(claim);
    const lastBalance = claim.sessionBalance;
    const pending: Answer = { state: 'pending', transactionId: p.transactionId, balance: lastBalance, currency: session.currency };
    // The wallet is down (one read of the breaker decides for this call): nothing is sent inline.
    if (!breaker.allowsCalls()) {
      // A bet: the player is told at once and nothing is taken. Refused only once claimed: a repeat
      // of a bet whose first attempt is still in doubt (its gateway died mid-call) must meet that
      // record, not this refusal (the outage soak found such bets applied and answered 503).
      // A win or refund: acknowledged and queued; its retries wait for the breaker and spend none
      // of their budget meanwhile.
      breaker.refused(p.kind === 'debit' ? 'debit' : 'inline');
      return notSent(record, errors.walletDown(), lastBalance, pending, shard);
    }
    // Write-ahead: the claim is what tells the sweeper this call may be at the wallet, so it must
    // survive a failover before money moves. Lost with the primary while the call was out, the
    // settle would find nothing and the money the wallet moved would belong to no record.
    if (!(await durability.confirmStore(shard))) {
      // A bet refused here is claimed afresh by its repeat: "safe to repeat" (contract 9).
      const held = await holdBack(record, errors.notDurable(), true);
      return held === 'moved' ? reread(record, lastBalance) : failed(errors.notDurable());
    }

    // This process's share of the wallet's max_in_flight is in use: as with the breaker open.
    if (!cap.tryTake(p.kind === 'debit' ? 'debit' : 'inline')) return notSent(record, errors.walletBusy(), lastBalance, pending, shard);
    let outcome: WalletOutcome;
    try {
      outcome = await wallet.send(p.kind, walletBody, context);
    } finally {
      cap.give();
    }
    // A refund whose bet the wallet refused for good meanwhile has nothing to reverse.
    const betRefused = p.kind === 'rollback' && outcome.kind !== 'ok' && isRefusedForGood(await transactions.get(p.betTransactionId as string, shard));
    const next = afterInlineAttempt({ record, outcome, unit: config.RETRY_DELAY_UNIT, now: clock(), betRefused });

    switch (next.kind) {
      case 'settle': {
        const refusedRefund = next.update.state === 'failed' && p.kind === 'rollback';
        // For a refused refund, nextCheckAt is when the sweeper looks at a debit it stood in for, in
        // case the hand-over below is lost with this process (settle-15).
        const update = refusedRefund ? { ...next.update, nextCheckAt: clock() + LEASE_MARGIN_MS } : next.update;
        if (!(await transactions.settle(record, update))) return reread(record, lastBalance);
        // A refund refused for good that a debit's compensation was linked to meanwhile: the debit's
        // own compensation takes over now (the refund's job would make it only after the refund's
        // deadline). The debit holds its token until then, so `end` waits.
        if (refusedRefund) {
          await replaceFailedRollback({ store: transactions, enqueue: (ref) => duties.enqueueRetry(ref, 0), now: clock, leaseMs: compensationLeaseMs }, record);
        }
        const { state, balance, error } = next.update;
        if (state === 'succeeded') return whenDurable({ state, transactionId: p.transactionId, balance: balance ?? lastBalance, currency: session.currency }, shard);
        // A refusal with nothing queued behind it: lost, a repeat is claimed and refused afresh.
        return failed(error ?? UNRECORDED_REFUSAL);
      }
      case 'retry':
        // Settle first so the record says pending with its attempt; then the job, durably; then 202.
        if (!(await transactions.settle(record, next.update))) return reread(record, lastBalance);
        await duties.enqueueRetry(record, next.delayMs);
        return whenDurable(pending, shard);
      case 'compensate': {
        const started = await transactions.beginCompensation({
          debit: record,
          error: next.error,
          ...next.progress,
          compensation: compensationFor(record, clock()),
          leaseUntil: clock() + compensationLeaseMs,
        });
        if (started.kind === 'not_pending') return reread(record, lastBalance);
        await duties.enqueueRetry(compensationRef(record, started.compensationId), 0);
        logger.warn({ transaction_id: p.transactionId, compensation_id: started.compensationId, wallet_code: next.error.walletCode }, 'debit refused; compensation queued');
        return whenDurable(failed(next.error), shard);
      }
    }
  }

  /** A claimed call not sent inline (holdBack) and its answer: a bet's `refusal`, or 202 queued. */
  async function notSent(record: NewTransaction, refusal: EngineError, lastBalance: string, pending: Answer, shard: number): Promise<Answer> {
    const held = await holdBack(record, refusal, false);
    if (held === 'moved') return reread(record, lastBalance);
    return held === 'refused' ? failed(refusal) : whenDurable(pending, shard);
  }

  /**
   * A claimed call not sent inline: a bet is refused with `refusal` (nothing reached the wallet, so
   * nothing is compensated; `reclaimable`: its repeat is claimed afresh); a win or refund is queued
   * for a worker, acknowledged work it stays.
   * 'moved' when another process (the sweeper) moved the record first.
   */
  async function holdBack(record: NewTransaction, refusal: EngineError, reclaimable: boolean): Promise<'refused' | 'queued' | 'moved'> {
    if (record.kind === 'debit') return (await transactions.settle(record, { ...refusedUnsent(refusal), reclaimable })) ? 'refused' : 'moved';
    if (!(await transactions.settle(record, { state: 'pending', expect: ['pending'], queued: true }))) return 'moved';
    await duties.enqueueRetry(record, 0);
    return 'queued';
  }

  /** Someone else (the sweeper) moved the record while this attempt ran: answer what it says now. */
  async function reread(record: NewTransaction, balance: string): Promise<Answer> {
    const current = await transactions.get(record.transactionId, transactions.shardOf(record));
    return current === undefined ? failed(errors.transactionNotFound()) : storedDurable(current, balance);
  }

  /**
   * An expired session can still be asked about a transaction it made: a repeat with the same body
   * gets the stored answer (records outlive sessions).
   */
  async function answerWithoutSession(sessionId: string, p: Parsed): Promise<Answer> {
    // The session id names its shard even once the session expired.
    const shard = transactions.layout.shardOfId(sessionId);
    const existing = shard === undefined ? undefined : await transactions.get(p.transactionId, shard);
    // A bet refused unsent as not durable is no answer: a repeat would be claimed afresh, and is
    // refused as any new bet of a session that is gone.
    if (existing === undefined || existing.reclaimable || existing.sessionId !== sessionId || existing.kind !== p.kind) return failed(errors.sessionNotFound());
    const digits = currencyDigits(config, existing.currency);
    if (amountIssue(p.amount, digits, false) !== undefined) return failed(errors.sessionNotFound());
    if (existing.bodyHash !== bodyHash(existing.tokenRef, p, exactDecimal(p.amount))) return failed(errors.conflict());
    return storedDurable(existing, existing.balance ?? '0');
  }

  return {
    bet(sessionId, body, context = NO_CONTEXT) {
      const parsed = betBody.safeParse(body);
      if (!parsed.success) return Promise.resolve(failed(errors.validation(fieldIssues(parsed.error))));
      const b = parsed.data;
      return run(sessionId, { kind: 'debit', roundId: b.round_id, transactionId: b.transaction_id, betTransactionId: null, amount: b.amount, roundClosed: b.round_closed ?? false }, context);
    },
    win(sessionId, body, context = NO_CONTEXT) {
      return settleLike('credit', sessionId, body, context);
    },
    refund(sessionId, body, context = NO_CONTEXT) {
      return settleLike('rollback', sessionId, body, context);
    },
  };

  function settleLike(kind: 'credit' | 'rollback', sessionId: string, body: unknown, context: RequestContext): Promise<Answer> {
    const parsed = settleBody.safeParse(body);
    if (!parsed.success) return Promise.resolve(failed(errors.validation(fieldIssues(parsed.error))));
    const b = parsed.data;
    return run(sessionId, {
      kind,
      roundId: b.round_id,
      transactionId: b.transaction_id,
      betTransactionId: b.bet_transaction_id,
      amount: b.amount,
      roundClosed: b.round_closed ?? true,
    }, context);
  }
}
