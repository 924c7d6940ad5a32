import { AsyncLocalStorage } from 'node:async_hooks';
import type { Scheduler } from 'fast-check';
import { parseJson } from '../../src/lib/json';
import { SimWallet } from '../../src/sim/wallet';
import { Code, retryClass, walletHttpStatus } from '../../src/wallet/codes';
import { REQUEST_SCHEMAS, type Operation, type RequestFields, type WalletClient, type WalletOutcome } from '../../src/wallet/protocol';

/**
 * The wallet of the money model: the simulator's own wallet rules (src/sim/wallet.ts, the spec's
 * books) behind a WalletClient that holds every call until the model lets the wallet act on it.
 * Which held call the wallet takes next is `fc.scheduler`'s choice; what the wallet does with it
 * (answer, refuse, apply and lose the answer, apply late, hang) is the model's command. HTTP is
 * left out on purpose: the wire format has its own tests, and an in-process wallet lets the
 * scheduler, not socket timing, decide every race.
 */
export type Behaviour =
  | { readonly kind: 'answer' }
  /** Refused with this code; nothing applied. */
  | { readonly kind: 'refuse'; readonly code: number }
  /** Applied, the answer lost (the caller sees a timeout). */
  | { readonly kind: 'drop' }
  /** The caller times out first; the wallet applies the call later, when the scheduler picks it again. */
  | { readonly kind: 'late' }
  /** Never applied, never answered (the caller times out). */
  | { readonly kind: 'hang' };

/** A process's unit of work (an engine call, a job run, a sweep): the wallet knows whose call it holds. */
export interface Task {
  readonly label: string;
  /** Calls of this task held at the wallet. */
  held: number;
  done: boolean;
  /** Its process died: answers to it are never delivered. */
  killed: boolean;
  /** A worker run stalled past its lock: its job may run again beside it. */
  stalled: boolean;
  /** Its calls are answered at once, not held (the common case: the wallet answers in time). */
  readonly prompt: boolean;
  /** Job id when the task is a job run. */
  readonly job?: string;
}

export interface WalletEvent {
  readonly op: Operation;
  readonly transactionId: string | undefined;
  readonly behaviour: Behaviour['kind'] | 'late-apply';
}

export const tasks = new AsyncLocalStorage<Task>();

const timeout = (detail: string): WalletOutcome => ({ kind: 'unknown', reason: 'timeout', detail, latencyMs: 0 });

export class ScriptedWallet implements WalletClient {
  readonly books: SimWallet;
  /** What the next released call meets; set by the model's command before it releases one. */
  behaviour: Behaviour = { kind: 'answer' };
  readonly events: WalletEvent[] = [];
  /** Terminates the wallet applied, per token. */
  readonly terminated = new Map<string, number>();
  private readonly open = new Map<string, number>();
  private readonly held = new Set<{ readonly task: Task; timedOut: boolean; expire: () => void }>();
  /**
   * A debit's own fate, met whenever its call is taken, whatever the command that released it
   * scripted (a bet the wallet will refuse for good, however late it takes it). A `status` of it
   * is answered as any other.
   */
  readonly fates = new Map<string, Behaviour>();
  /** Called when the wallet applied a terminate: the model checks that nothing was owed on the token. */
  onTerminate: (token: string) => void = () => undefined;

  constructor(private readonly scheduler: Scheduler, startBalance: string) {
    this.books = new SimWallet({ startBalance, currencyDigits: {} });
  }

  send(op: Operation, body: string): Promise<WalletOutcome> {
    return this.call(op, REQUEST_SCHEMAS[op].parse(parseJson(body)) as RequestFields[typeof op]);
  }

  call<Op extends Operation>(op: Op, fields: RequestFields[Op]): Promise<WalletOutcome> {
    // A launch's authenticate and a balance read move no money: answered at once.
    if (op === 'authenticate' || op === 'balance') return Promise.resolve(this.act(op, fields, { kind: 'answer' }));
    const task = tasks.getStore();
    if (task === undefined) throw new Error(`wallet ${op} outside a model task`);
    if (task.prompt) return Promise.resolve(this.act(op, fields, { kind: 'answer' }));
    task.held += 1;
    const id = (fields as { transaction_id?: string }).transaction_id;
    this.mark(id, 1);
    const label = `${op} ${id ?? fields.token.slice(0, 8)} (${task.label})`;
    return new Promise<WalletOutcome>((resolve) => {
      const held = { task, timedOut: false, expire: () => undefined as void };
      held.expire = () => {
        held.timedOut = true;
        task.held -= 1;
        this.events.push({ op, transactionId: id, behaviour: 'late' });
        if (!task.killed) resolve(timeout('the caller gave up at its deadline'));
      };
      this.held.add(held);
      void this.scheduler.schedule(Promise.resolve(), label).then(() => {
        this.held.delete(held);
        this.mark(id, -1);
        if (held.timedOut) {
          // The wallet takes up a call its caller gave up on: applied late, unless it hangs or refuses.
          const late = this.behaviourOf(op, id);
          if (late.kind === 'answer' || late.kind === 'drop' || late.kind === 'late') this.apply(op, fields);
          return;
        }
        const outcome = this.act(op, fields, this.behaviourOf(op, id));
        task.held -= 1;
        // A killed process never reads its answer: its continuation never runs.
        if (!task.killed) resolve(outcome);
      });
    });
  }

  /**
   * The clock passed the wallet deadline: every caller still waiting gives up (a timeout, as the
   * real client's deadline makes it) and the wallet may still act on the call later. A stalled
   * process is not waiting: its call stays held.
   */
  expireHeld(): void {
    for (const held of [...this.held]) if (!held.timedOut && !held.task.stalled) held.expire();
  }

  /** Whether the wallet may still act on a call with this transaction id (held, or to be applied late). */
  private behaviourOf(op: Operation, id: string | undefined): Behaviour {
    return (op === 'debit' && id !== undefined ? this.fates.get(id) : undefined) ?? this.behaviour;
  }

  mayStillApply(id: string): boolean {
    return (this.open.get(id) ?? 0) > 0;
  }

  private mark(id: string | undefined, delta: number): void {
    if (id !== undefined) this.open.set(id, (this.open.get(id) ?? 0) + delta);
  }

  healthCheck(): Promise<{ healthy: boolean; detail: string }> {
    return Promise.resolve({ healthy: true, detail: 'model wallet' });
  }

  close(): Promise<void> {
    return Promise.resolve();
  }

  private act<Op extends Operation>(op: Op, fields: RequestFields[Op], scripted: Behaviour): WalletOutcome {
    // A wallet does not lie: a code that means something (34 "not found" to a status question, a
    // final code the gateway takes as "terminated") is only scripted for money calls; a status or
    // terminate meets a plain retry code instead.
    const behaviour: Behaviour = scripted.kind === 'refuse' && (op === 'status' || op === 'terminate') && retryClass(scripted.code) !== 'retry' ? { kind: 'refuse', code: Code.InternalServiceError } : scripted;
    const id = (fields as { transaction_id?: string }).transaction_id;
    const log = (kind: WalletEvent['behaviour']): void => {
      this.events.push({ op, transactionId: id, behaviour: kind });
    };
    switch (behaviour.kind) {
      case 'refuse':
        log('refuse');
        return { kind: 'rejected', code: behaviour.code, httpStatus: walletHttpStatus(behaviour.code), message: 'scripted refusal', walletRequestId: undefined, latencyMs: 0 };
      case 'hang':
        log('hang');
        return timeout('scripted hang');
      case 'late':
        log('late');
        // The wallet takes the call up later: a task of its own for the scheduler to place.
        this.mark(id, 1);
        void this.scheduler.schedule(Promise.resolve(), `late ${op} ${id ?? ''}`).then(() => {
          this.mark(id, -1);
          this.apply(op, fields);
          log('late-apply');
        });
        return timeout('scripted late answer');
      case 'drop': {
        this.apply(op, fields);
        log('drop');
        return timeout('scripted lost answer');
      }
      case 'answer': {
        const result = this.apply(op, fields);
        log('answer');
        if (!result.ok) return { kind: 'rejected', code: result.code, httpStatus: walletHttpStatus(result.code), message: result.message, walletRequestId: undefined, latencyMs: 0 };
        return {
          kind: 'ok',
          httpStatus: 200,
          latencyMs: 0,
          response: {
            status: true,
            code: Code.Success,
            message: '',
            request_id: 'model',
            token: fields.token,
            player_id: fields.player_id,
            game_id: fields.game_id,
            site_id: fields.site_id,
            provider_id: fields.provider_id,
            balance: result.balance,
          },
        };
      }
    }
  }

  private apply<Op extends Operation>(op: Op, fields: RequestFields[Op]) {
    if (op === 'terminate') {
      const result = this.books.handle(op, fields);
      if (result.ok) {
        this.onTerminate(fields.token);
        this.terminated.set(fields.token, (this.terminated.get(fields.token) ?? 0) + 1);
      }
      return result;
    }
    return this.books.handle(op, fields);
  }
}
