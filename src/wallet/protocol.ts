import { z } from 'zod';
import { jsonNumber, stringifyJson } from '../lib/json';
import { decimalText, decimalTextOf, isPlainRecord, smallInt, smallIntOf, u64, u64Text, withFastPath } from '../lib/schemas';

/**
 * The wallet protocol's shapes (wallet-service-spec.md): operations, paths, request fields and the
 * success / failure answers. Ids and amounts are decimal strings here and raw JSON numbers on the wire.
 */
export const OPERATIONS = ['authenticate', 'balance', 'debit', 'credit', 'rollback', 'status', 'terminate'] as const;
export type Operation = (typeof OPERATIONS)[number];

export const OPERATION_PATH: Readonly<Record<Operation, string>> = {
  authenticate: '/api/wallet/authenticate',
  balance: '/api/wallet/balance',
  debit: '/api/wallet/debit',
  credit: '/api/wallet/credit',
  rollback: '/api/wallet/rollback',
  status: '/api/wallet/status',
  terminate: '/api/wallet/terminate',
};
export const HEALTH_CHECK_PATH = '/api/health-check';

export const MAX_ID_LENGTH = 36;

const id36 = z.string().min(1).max(MAX_ID_LENGTH);

/** Fields every wallet operation carries. */
export const sessionFieldsSchema = z.strictObject({
  token: z.string().min(1),
  player_id: u64,
  site_id: u64,
  provider_id: u64,
  game_id: z.string().min(1),
  currency: z.string().min(1),
});
export type SessionFields = z.output<typeof sessionFieldsSchema>;

export const debitFieldsSchema = sessionFieldsSchema.extend({
  amount: decimalText,
  round_id: id36,
  transaction_id: id36,
  round_closed: z.boolean(),
});
export type DebitFields = z.output<typeof debitFieldsSchema>;

/** credit and rollback share one shape. */
export const creditFieldsSchema = debitFieldsSchema.extend({ reference_transaction_id: id36 });
export type CreditFields = z.output<typeof creditFieldsSchema>;
export type RollbackFields = CreditFields;

export const TRANSACTION_ACTIONS = ['debit', 'credit', 'rollback'] as const;
export type TransactionAction = (typeof TRANSACTION_ACTIONS)[number];

export const statusFieldsSchema = sessionFieldsSchema.extend({
  amount: decimalText,
  round_id: id36,
  transaction_id: id36,
  action: z.enum(TRANSACTION_ACTIONS),
});
export type StatusFields = z.output<typeof statusFieldsSchema>;

export interface RequestFields {
  authenticate: SessionFields;
  balance: SessionFields;
  debit: DebitFields;
  credit: CreditFields;
  rollback: RollbackFields;
  status: StatusFields;
  terminate: SessionFields;
}

export const REQUEST_SCHEMAS = {
  authenticate: sessionFieldsSchema,
  balance: sessionFieldsSchema,
  debit: debitFieldsSchema,
  credit: creditFieldsSchema,
  rollback: creditFieldsSchema,
  status: statusFieldsSchema,
  terminate: sessionFieldsSchema,
} as const satisfies { [Op in Operation]: z.ZodType<RequestFields[Op]> };

const NUMERIC_FIELDS = new Set(['player_id', 'site_id', 'provider_id', 'amount']);

/** The exact request body bytes: ids and amounts as raw JSON numbers, every digit kept. */
export function encodeRequest<Op extends Operation>(_op: Op, fields: RequestFields[Op]): string {
  const wire: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fields)) {
    wire[key] = NUMERIC_FIELDS.has(key) ? jsonNumber(value as string) : value;
  }
  return stringifyJson(wire);
}

/** game_id and site_id come back as number or string; both become strings. */
const idNumberOrString = z.union([z.string().min(1), u64]).transform((v) => String(v));

const successSchema = z.object({
  status: z.literal(true),
  code: smallInt,
  message: z.string(),
  request_id: z.string(),
  token: z.string(),
  player_id: u64,
  game_id: idNumberOrString,
  site_id: idNumberOrString,
  provider_id: u64,
  balance: decimalText,
});

const idText = (value: unknown): string | undefined => (typeof value === 'string' && value.length >= 1 ? value : u64Text(value));

/** Every wallet call's answer: the schema, behind a fast path for a success that keeps every rule (withFastPath). */
export const successResponseSchema = withFastPath<z.output<typeof successSchema>>(successSchema, (input) => {
  if (!isPlainRecord(input) || input.status !== true) return undefined;
  const { message, request_id, token } = input;
  const code = smallIntOf(input.code);
  const player_id = u64Text(input.player_id);
  const game_id = idText(input.game_id);
  const site_id = idText(input.site_id);
  const provider_id = u64Text(input.provider_id);
  const balance = decimalTextOf(input.balance);
  if (typeof message !== 'string' || typeof request_id !== 'string' || typeof token !== 'string') return undefined;
  if (code === undefined || player_id === undefined || game_id === undefined || site_id === undefined || provider_id === undefined || balance === undefined) return undefined;
  return { status: true, code, message, request_id, token, player_id, game_id, site_id, provider_id, balance };
});
export type WalletSuccess = z.output<typeof successSchema>;

export const failureResponseSchema = z.object({
  status: z.literal(false),
  code: smallInt,
  message: z.string(),
  request_id: z.string().optional(),
});
export type WalletFailure = z.output<typeof failureResponseSchema>;

/**
 * What a wallet call came to. A refusal is a value, not an exception; `unknown` means the wallet
 * may or may not have applied the call (timeout, broken connection, unparseable or off-schema answer).
 */
export type WalletOutcome =
  | { readonly kind: 'ok'; readonly response: WalletSuccess; readonly httpStatus: number; readonly latencyMs: number }
  | {
      readonly kind: 'rejected';
      readonly code: number;
      readonly httpStatus: number;
      readonly message: string;
      readonly walletRequestId: string | undefined;
      readonly latencyMs: number;
    }
  | { readonly kind: 'unknown'; readonly reason: UnknownReason; readonly detail: string; readonly latencyMs: number };

export type UnknownReason = 'timeout' | 'connection' | 'unparseable' | 'schema' | 'inconsistent';

/** The code an outcome stands for in the retry history. */
export function outcomeResult(outcome: WalletOutcome): number | 'unknown' {
  switch (outcome.kind) {
    case 'ok':
      return outcome.response.code;
    case 'rejected':
      return outcome.code;
    case 'unknown':
      return 'unknown';
  }
}

/** What a call runs for, passed through to its call event (the wallet never sees it). */
export interface CallContext {
  /** The gateway request the call is made for, so the wallet-call log line can name it. */
  readonly requestId?: string;
  /** Which try of its transaction a money call is (the inline first try is 1); in the call's span. */
  readonly attempt?: number;
}

/** The wallet as the rest of the gateway sees it. */
export interface WalletClient {
  call<Op extends Operation>(op: Op, fields: RequestFields[Op], context?: CallContext): Promise<WalletOutcome>;
  /** Sends an already encoded body unchanged (retries resend the stored bytes). */
  send(op: Operation, body: string, context?: CallContext): Promise<WalletOutcome>;
  /** true when the wallet's health check answered 204. */
  healthCheck(): Promise<{ healthy: boolean; detail: string }>;
  close(): Promise<void>;
}

/** What the client reports after every wallet call (for logs and metrics; never the body or token). */
export interface WalletCallEvent {
  readonly operation: Operation | 'health-check';
  readonly outcome: WalletOutcome['kind'];
  /** The wallet's code, or null for an unknown outcome. */
  readonly code: number | null;
  readonly httpStatus: number | null;
  readonly walletRequestId: string | undefined;
  readonly latencyMs: number;
  readonly transactionId: string | undefined;
  /** CallContext.requestId of the call; undefined when none was given and for the health check. */
  readonly requestId: string | undefined;
  readonly detail: string | undefined;
}
