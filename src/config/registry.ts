import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { ConfigError } from '../lib/config-error';
import { LosslessNumber, parseJson } from '../lib/json';
import { u64 } from '../lib/schemas';

/**
 * The registry of wallets and engines (contract 11): the wallets this deployment calls, each with
 * its own credentials, signer, provider id and limits, and the engines that may act on them. Read
 * once at start from WALLETS_FILE, or, without it, from the single-wallet variables (wallet
 * `default`, engine `default`). Secrets are resolved here and never leave in an error: every
 * message names the field path, never a value.
 */

export const DEFAULT_WALLET_ID = 'default';
/** Wallet and engine ids (contract 11): they also name Redis keys, session ids and series labels. */
export const REGISTRY_ID = /^[a-z0-9-]{1,32}$/;
export const DEFAULT_MAX_IN_FLIGHT = 256;

export type SignatureAlgo = 'sha256' | 'sha512';
export type SignatureEncoding = 'hex' | 'base64';
export type RetryDelayUnit = 'ms' | 's';

/** What the wallet client is built from (src/wallet/client.ts), per wallet. */
export interface WalletSettings {
  readonly WALLET_BASE_URL: string;
  readonly WALLET_BASIC_USER: string;
  readonly WALLET_BASIC_PASSWORD: string;
  readonly WALLET_SIGNING_SECRET: string;
  readonly WALLET_SIGNATURE_ALGO: SignatureAlgo;
  readonly WALLET_SIGNATURE_ENCODING: SignatureEncoding;
  readonly WALLET_TIMEOUT_MS: number;
  readonly WALLET_CONNECTIONS: number;
  readonly WALLET_HTTP2: boolean;
  readonly WALLET_TLS_INSECURE: boolean;
  readonly walletHostHeader: string;
}

export interface WalletEntry {
  readonly id: string;
  readonly client: WalletSettings;
  readonly providerId: string;
  readonly retryDelayUnit: RetryDelayUnit;
  /** Fraction digits per currency; a currency not listed has DEFAULT_CURRENCY_DIGITS. */
  readonly currencyDigits: Readonly<Record<string, number>>;
  readonly maxInFlight: number;
}

export interface EngineEntry {
  readonly id: string;
  /** One key, or two during a rotation. */
  readonly keys: readonly string[];
  /** The wallets it may act on. */
  readonly wallets: readonly string[];
}

/**
 * A wallet's rules under the names of the single-wallet variables, for the code that reads them from
 * a configuration (`{ ...config, ...walletRules(entry) }`).
 */
export interface WalletRules {
  readonly PROVIDER_ID: string;
  readonly WALLET_TIMEOUT_MS: number;
  readonly RETRY_DELAY_UNIT: RetryDelayUnit;
  readonly CURRENCY_DIGITS: Readonly<Record<string, number>>;
}

export function walletRules(entry: WalletEntry): WalletRules {
  return { PROVIDER_ID: entry.providerId, WALLET_TIMEOUT_MS: entry.client.WALLET_TIMEOUT_MS, RETRY_DELAY_UNIT: entry.retryDelayUnit, CURRENCY_DIGITS: entry.currencyDigits };
}

export interface Registry {
  readonly wallets: readonly WalletEntry[];
  readonly engines: readonly EngineEntry[];
  wallet(id: string): WalletEntry | undefined;
}

/**
 * The wallet whose queues hold the deployment's upkeep schedulers and whose records the operators'
 * pages show: `default`, else the registry's first.
 */
export function homeWalletId(registry: Registry): string {
  return registry.wallet(DEFAULT_WALLET_ID) === undefined ? registry.wallets[0]!.id : DEFAULT_WALLET_ID;
}

export function registryOf(wallets: readonly WalletEntry[], engines: readonly EngineEntry[]): Registry {
  const byId = new Map(wallets.map((w) => [w.id, w]));
  return Object.freeze({ wallets: Object.freeze([...wallets]), engines: Object.freeze([...engines]), wallet: (id: string) => byId.get(id) });
}

/**
 * "host[:port] of the base URL, as written there" — not the URL parser's normalised form, and
 * without a `user:password@` (credentials are no part of a Host header).
 */
export function hostOf(baseUrl: string): string {
  const authority = baseUrl.replace(/^https?:\/\//, '').split(/[/?#]/)[0] ?? '';
  return authority.slice(authority.lastIndexOf('@') + 1);
}

/** The deployment-wide transport settings every wallet client shares (variables, not file fields). */
export type TransportSettings = Pick<WalletSettings, 'WALLET_CONNECTIONS' | 'WALLET_HTTP2' | 'WALLET_TLS_INSECURE'>;

/** What the file's optional fields default to: the single-wallet variables' defaults. */
export interface RegistryDefaults extends TransportSettings {
  readonly currencyDigits: Readonly<Record<string, number>>;
  readonly maxTimeoutMs: number;
}

type Env = Readonly<Record<string, string | undefined>>;

/** A number of the file, read losslessly (parseJson) and taken as a plain number where it is small. */
const fileNumber = (schema: z.ZodNumber) => z.preprocess((v) => (v instanceof LosslessNumber ? Number(v.value) : v), schema);

const id = z.string().regex(REGISTRY_ID, 'must be 1–32 characters of a-z, 0-9 and -');

/**
 * A secret: the value itself, `{ "env": NAME }` or `{ "file": PATH }`. Resolved while parsing, so an
 * unset variable or an unreadable file is an issue at the field's path; the messages never hold the
 * value (the variable's name and the path are configuration, not secrets).
 */
function secretSchema(env: Env, readFile: (path: string) => string) {
  return z.unknown().transform((input, ctx): string => {
    const refuse = (message: string): never => {
      ctx.addIssue({ code: 'custom', message });
      return z.NEVER;
    };
    const checked = (value: string, where: string): string => (value === '' || /\s/.test(value) ? refuse(`${where} must be non-empty, without whitespace`) : value);
    if (input === undefined) return refuse('required');
    if (typeof input === 'string') return checked(input, 'the value');
    const ref = input !== null && typeof input === 'object' && !Array.isArray(input) ? (input as Record<string, unknown>) : undefined;
    const keys = ref === undefined ? [] : Object.keys(ref);
    if (ref !== undefined && keys.length === 1 && keys[0] === 'env') {
      const name = ref.env;
      if (typeof name !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) return refuse('"env" must be a variable name');
      const value = env[name];
      return value === undefined || value === '' ? refuse(`the variable ${name} is not set`) : checked(value, `the variable ${name}`);
    }
    if (ref !== undefined && keys.length === 1 && keys[0] === 'file') {
      const path = ref.file;
      if (typeof path !== 'string' || path === '') return refuse('"file" must be a path');
      let text: string;
      try {
        text = readFile(path);
      } catch (err) {
        return refuse(`the file cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
      }
      // A trailing newline is how editors and `echo` end such a file; it is not part of the secret.
      return checked(text.replace(/\r?\n$/, ''), 'the file');
    }
    return refuse('must be a string, { "env": NAME } or { "file": PATH }');
  });
}

function fileSchema(env: Env, defaults: RegistryDefaults, readFile: (path: string) => string) {
  const secret = secretSchema(env, readFile);
  const wallet = z
    .strictObject({
      id,
      base_url: z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }).transform((u) => u.replace(/\/+$/, '')),
      basic_user: z.string().min(1, 'must not be empty'),
      basic_password: secret,
      signing_secret: secret,
      signature_algo: z.enum(['sha256', 'sha512']).default('sha256'),
      signature_encoding: z.enum(['hex', 'base64']).default('hex'),
      provider_id: u64,
      timeout_ms: fileNumber(z.number().int().positive().max(defaults.maxTimeoutMs, `must be at most ${defaults.maxTimeoutMs}`)).default(5000),
      retry_delay_unit: z.enum(['ms', 's']).default('ms'),
      host_header: z.string().min(1).optional(),
      currency_digits: z.record(z.string().regex(/^[A-Z0-9]{2,10}$/, 'a currency is 2–10 of A-Z, 0-9'), fileNumber(z.number().int().min(0).max(8))).optional(),
      max_in_flight: fileNumber(z.number().int().positive()).default(DEFAULT_MAX_IN_FLIGHT),
    })
    .transform((w): WalletEntry => Object.freeze({
      id: w.id,
      client: Object.freeze({
        WALLET_BASE_URL: w.base_url,
        WALLET_BASIC_USER: w.basic_user,
        WALLET_BASIC_PASSWORD: w.basic_password,
        WALLET_SIGNING_SECRET: w.signing_secret,
        WALLET_SIGNATURE_ALGO: w.signature_algo,
        WALLET_SIGNATURE_ENCODING: w.signature_encoding,
        WALLET_TIMEOUT_MS: w.timeout_ms,
        WALLET_CONNECTIONS: defaults.WALLET_CONNECTIONS,
        WALLET_HTTP2: defaults.WALLET_HTTP2,
        WALLET_TLS_INSECURE: defaults.WALLET_TLS_INSECURE,
        walletHostHeader: w.host_header ?? hostOf(w.base_url),
      }),
      providerId: w.provider_id,
      retryDelayUnit: w.retry_delay_unit,
      currencyDigits: Object.freeze({ ...(w.currency_digits ?? defaults.currencyDigits) }),
      maxInFlight: w.max_in_flight,
    }));
  const engine = z.strictObject({
    id,
    keys: z.array(secret).min(1, 'needs one key').max(2, 'at most two keys (a rotation)'),
    wallets: z.array(id).min(1, 'needs at least one wallet'),
  });
  return z
    .strictObject({ wallets: z.array(wallet).min(1, 'needs at least one wallet'), engines: z.array(engine).default([]) })
    .superRefine((file, ctx) => {
      const firstOf = new Map<string, number>();
      file.wallets.forEach((w, i) => {
        if (firstOf.has(w.id)) ctx.addIssue({ code: 'custom', path: ['wallets', i, 'id'], message: `repeats the id of wallets[${firstOf.get(w.id)}]` });
        else firstOf.set(w.id, i);
      });
      const engineIds = new Map<string, number>();
      const keyOwner = new Map<string, string>();
      file.engines.forEach((e, i) => {
        if (engineIds.has(e.id)) ctx.addIssue({ code: 'custom', path: ['engines', i, 'id'], message: `repeats the id of engines[${engineIds.get(e.id)}]` });
        else engineIds.set(e.id, i);
        e.wallets.forEach((w, j) => {
          if (!firstOf.has(w)) ctx.addIssue({ code: 'custom', path: ['engines', i, 'wallets', j], message: 'names no wallet of the file' });
        });
        e.keys.forEach((key, j) => {
          // Which engine a request comes from is told by its key alone.
          const owner = keyOwner.get(key);
          if (owner !== undefined) ctx.addIssue({ code: 'custom', path: ['engines', i, 'keys', j], message: `is the same key as ${owner}` });
          else keyOwner.set(key, `engines[${i}].keys[${j}]`);
        });
      });
    });
}

/** `wallets[0].basic_password` */
function pathText(path: readonly PropertyKey[]): string {
  return path.map((p, i) => (typeof p === 'number' ? `[${p}]` : `${i === 0 ? '' : '.'}${String(p)}`)).join('') || '(the file)';
}

/**
 * Reads and validates the registry file whole. Throws ConfigError naming every offending field
 * (`WALLETS_FILE wallets[1].signing_secret: …`); no value of the file reaches the message, nor does
 * the JSON parser's own message (it quotes the text around a syntax error).
 */
export function loadRegistryFile(path: string, env: Env, defaults: RegistryDefaults, readFile: (path: string) => string = (p) => readFileSync(p, 'utf8')): Registry {
  let text: string;
  try {
    text = readFile(path);
  } catch (err) {
    throw new ConfigError(`invalid configuration:\n  WALLETS_FILE: cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  let json: unknown;
  try {
    json = parseJson(text);
  } catch {
    throw new ConfigError('invalid configuration:\n  WALLETS_FILE: is not valid JSON');
  }
  const parsed = fileSchema(env, defaults, readFile).safeParse(json);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => `  WALLETS_FILE ${pathText(issue.path)}: ${issue.message}`);
    throw new ConfigError(`invalid configuration:\n${lines.join('\n')}`);
  }
  return registryOf(parsed.data.wallets, parsed.data.engines);
}
