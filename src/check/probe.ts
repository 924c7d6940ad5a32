import { randomBytes } from 'node:crypto';
import type { WalletSettings } from '../config/env';
import { codeName, mustCompensateDebit } from '../wallet/codes';
import { walletSigner } from '../wallet/client';
import {
  type CreditFields,
  type DebitFields,
  type Operation,
  type RequestFields,
  type SessionFields,
  type WalletCallEvent,
  type WalletClient,
  type WalletOutcome,
} from '../wallet/protocol';
import { basicAuthHeader, type RequestSigner } from '../wallet/signer';
import type { RunIds } from './run-ids';

/**
 * How a check talks to the wallet: through the gateway's own client, signer and answer schemas, so
 * an answer is judged exactly as the gateway would read it. The deliberately wrong requests go
 * through the same client with altered credentials (a random Basic password, a random signing
 * key), never hand-made HTTP. Every call's event is kept for the HTTP status check.
 */
export type OpenClient = (options: { settings: WalletSettings; signer: RequestSigner; onCall: (event: WalletCallEvent) => void }) => WalletClient;

export type ClientRole = 'wallet' | 'wrong-basic' | 'wrong-signature';

/** One wallet answer: the outcome as the gateway reads it, and the call's event (HTTP status, request id). */
export interface Answer {
  readonly outcome: WalletOutcome;
  readonly event: WalletCallEvent | undefined;
}

/** What a check line shows of an answer. */
export interface Shown {
  readonly code: number | null;
  readonly requestId: string | null;
  readonly httpStatus: number | null;
}

export function shownOfEvent(event: WalletCallEvent | undefined): Shown {
  return { code: event?.code ?? null, requestId: event?.walletRequestId ?? null, httpStatus: event?.httpStatus ?? null };
}

export function shownOf(answer: Answer): Shown {
  const { outcome } = answer;
  const requestId = outcome.kind === 'ok' ? outcome.response.request_id : outcome.kind === 'rejected' ? (outcome.walletRequestId ?? null) : null;
  return { ...shownOfEvent(answer.event), requestId };
}

export interface Probe {
  readonly session: SessionFields;
  readonly amount: string;
  /** The Host header the health check carries. */
  readonly hostHeader: string;
  readonly ids: RunIds;
  /** Every call event so far, in order, with the check that made it. */
  readonly events: readonly { readonly check: string; readonly event: WalletCallEvent }[];
  /** The check the next calls belong to. */
  setCheck(name: string): void;
  health(): Promise<{ healthy: boolean; detail: string; event: WalletCallEvent | undefined }>;
  call<Op extends Operation>(op: Op, fields: RequestFields[Op], role?: ClientRole): Promise<Answer>;
  /** Sends an encoded body unchanged (the repeat of a debit is the same bytes). */
  send(op: Operation, body: string): Promise<Answer>;
  debitFields(roundId: string, transactionId: string, roundClosed: boolean): DebitFields;
  creditFields(roundId: string, transactionId: string, referenceId: string, roundClosed: boolean): CreditFields;
  /**
   * Gives back what a call the check did not want may have moved, as the gateway would: a debit
   * applied, in doubt or refused with a code of the rollback duty is rolled back; a credit or
   * rollback applied is taken back with a debit in a round of its own. Returns what it did.
   */
  undo(op: 'debit' | 'credit' | 'rollback', fields: DebitFields, answer: Answer, roundClosed: boolean): Promise<string | undefined>;
  close(): Promise<void>;
}

export interface ProbeOptions {
  readonly settings: WalletSettings;
  readonly providerId: string;
  readonly player: { readonly token: string; readonly playerId: string; readonly siteId: string; readonly currency: string; readonly gameId: string };
  readonly amount: string;
  readonly ids: RunIds;
  readonly openClient: OpenClient;
}

/** A random credential of the same kind: never the real one, never derived from it. */
function wrongSecret(real: string): string {
  const made = randomBytes(24).toString('hex');
  return made === real ? `${made}0` : made;
}

export function openProbe(options: ProbeOptions): Probe {
  const { settings, ids, amount } = options;
  const events: { check: string; event: WalletCallEvent }[] = [];
  let check = '';
  let last: WalletCallEvent | undefined;
  const onCall = (event: WalletCallEvent): void => {
    last = event;
    events.push({ check, event });
  };
  const wrongBasic = { ...settings, WALLET_BASIC_PASSWORD: wrongSecret(settings.WALLET_BASIC_PASSWORD) };
  const wrongKey = { ...settings, WALLET_SIGNING_SECRET: wrongSecret(settings.WALLET_SIGNING_SECRET) };
  const clients: Record<ClientRole, WalletClient> = {
    wallet: options.openClient({ settings, signer: walletSigner(settings), onCall }),
    'wrong-basic': options.openClient({ settings: wrongBasic, signer: walletSigner(settings), onCall }),
    'wrong-signature': options.openClient({ settings, signer: walletSigner(wrongKey), onCall }),
  };
  const session: SessionFields = {
    token: options.player.token,
    player_id: options.player.playerId,
    site_id: options.player.siteId,
    provider_id: options.providerId,
    game_id: options.player.gameId,
    currency: options.player.currency,
  };

  // The client keeps the token out of what a wallet says; these are the other secrets it might echo.
  const secrets = [settings.WALLET_BASIC_PASSWORD, settings.WALLET_SIGNING_SECRET, basicAuthHeader(settings.WALLET_BASIC_USER, settings.WALLET_BASIC_PASSWORD).slice('Basic '.length)];
  const scrub = (text: string): string => secrets.reduce((out, secret) => out.split(secret).join('[secret]'), text);

  async function answered(pending: Promise<WalletOutcome>): Promise<Answer> {
    last = undefined;
    const outcome = await pending;
    const event = last;
    if (outcome.kind === 'rejected') return { outcome: { ...outcome, message: scrub(outcome.message) }, event };
    if (outcome.kind === 'ok') return { outcome: { ...outcome, response: { ...outcome.response, message: scrub(outcome.response.message) } }, event };
    return { outcome, event };
  }

  const debitFields = (roundId: string, transactionId: string, roundClosed: boolean): DebitFields => ({
    ...session,
    amount,
    round_id: roundId,
    transaction_id: transactionId,
    round_closed: roundClosed,
  });
  let undone = 0;

  const probe: Probe = {
    session,
    amount,
    hostHeader: settings.walletHostHeader,
    ids,
    events,
    setCheck(name) {
      check = name;
    },
    async health() {
      last = undefined;
      const result = await clients.wallet.healthCheck();
      return { ...result, event: last };
    },
    call: (op, fields, role = 'wallet') => answered(clients[role].call(op, fields)),
    send: (op, body) => answered(clients.wallet.send(op, body)),
    debitFields,
    creditFields: (roundId, transactionId, referenceId, roundClosed) => ({
      ...debitFields(roundId, transactionId, roundClosed),
      reference_transaction_id: referenceId,
    }),
    async undo(op, fields, answer, roundClosed) {
      const { outcome } = answer;
      undone += 1;
      if (op === 'debit') {
        const inDoubt = outcome.kind === 'unknown' || (outcome.kind === 'rejected' && mustCompensateDebit(outcome.code));
        if (outcome.kind !== 'ok' && !inDoubt) return undefined;
        const rollback = probe.creditFields(fields.round_id, ids.id(`u${undone}`), fields.transaction_id, roundClosed);
        return `rolled back: ${describeOutcome((await probe.call('rollback', rollback)).outcome)}`;
      }
      if (outcome.kind !== 'ok') return undefined;
      const debit = debitFields(ids.id(`ur${undone}`), ids.id(`u${undone}`), true);
      return `taken back with debit ${debit.transaction_id}: ${describeOutcome((await probe.call('debit', debit)).outcome)}`;
    },
    async close() {
      await Promise.all(Object.values(clients).map((client) => client.close()));
    },
  };
  return probe;
}

/** What an answer says, in a few words (no token: the client scrubs it from messages). */
export function describeOutcome(outcome: WalletOutcome): string {
  switch (outcome.kind) {
    case 'ok':
      return `success, balance ${outcome.response.balance}`;
    case 'rejected':
      return `refused with code ${outcome.code} ${codeName(outcome.code)} on HTTP ${outcome.httpStatus}${outcome.message === '' ? '' : ` (${outcome.message})`}`;
    case 'unknown':
      return `no usable answer (${outcome.reason}: ${outcome.detail})`;
  }
}
