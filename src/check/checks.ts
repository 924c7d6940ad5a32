import { addAmounts, sameAmount } from '../lib/money';
import { Code, codeInfo, codeName } from '../wallet/codes';
import { encodeRequest, type CreditFields, type DebitFields, type StatusFields, type TransactionAction, type WalletSuccess } from '../wallet/protocol';
import { describeOutcome, shownOf, shownOfEvent, type Answer, type ClientRole, type Probe, type Shown } from './probe';

/**
 * The checks of contract section 15, in its order. Each judges the wallet's answers as the gateway
 * reads them (the gateway's client and schemas), and compares balances as exact decimals.
 *
 * Required or warn-only: a check is required when the gateway's money handling depends on the
 * behaviour. Three are warn-only, because the gateway guards them on its own side or reads past
 * them: a second debit in a round and calls in a closed round (the gateway refuses both itself,
 * contract 5.2, before any wallet call), and the HTTP status agreeing with the code (the gateway
 * judges a refusal by the body's code and only logs a disagreeing status).
 */
export interface Finding {
  readonly verdict: 'pass' | 'fail' | 'warn';
  /** The answer the line shows the code, request_id and HTTP status of. */
  readonly shown?: Shown | undefined;
  readonly detail: string;
  /** What the check expected, on a fail or warn. */
  readonly expected?: string;
}

export interface CheckDefinition {
  readonly name: string;
  readonly title: string;
  readonly required: boolean;
  run(probe: Probe, state: CheckState): Promise<Finding>;
}

/** What the checks learn as they go, for the checks after them. */
export interface CheckState {
  /** The balance the wallet last reported. */
  balance: string | undefined;
  /** The balance authenticate reported, before anything moved. */
  startBalance: string | undefined;
  /** The balance terminate reported, after everything moved back. */
  endBalance: string | undefined;
  /** The debit of the first round, once applied. */
  debit: DebitFields | undefined;
  /** Transactions the wallet applied, for the status check; `reversed` for a debit rolled back since. */
  applied: { action: TransactionAction; fields: DebitFields; reversed?: boolean }[];
  /** The first round, once a credit closed it. */
  closedRound: string | undefined;
  terminated: boolean;
}

export function newCheckState(): CheckState {
  return { balance: undefined, startBalance: undefined, endBalance: undefined, debit: undefined, applied: [], closedRound: undefined, terminated: false };
}

const pass = (detail: string, shown?: Answer | Shown): Finding => ({ verdict: 'pass', detail, shown: shown && toShown(shown) });
const fail = (detail: string, expected: string, shown?: Answer | Shown): Finding => ({ verdict: 'fail', detail, expected, shown: shown && toShown(shown) });
const warn = (detail: string, expected: string, shown: Answer): Finding => ({ verdict: 'warn', detail, expected, shown: toShown(shown) });
const toShown = (shown: Answer | Shown): Shown => ('outcome' in shown ? shownOf(shown) : shown);
const notRun = (why: string): Finding => ({ verdict: 'fail', detail: `not run: ${why}`, expected: 'the checks before it to pass' });

type Success = Answer & { outcome: { kind: 'ok'; response: WalletSuccess } };
const succeeded = (answer: Answer): answer is Success => answer.outcome.kind === 'ok';
const balanceOf = (answer: Success): string => answer.outcome.response.balance;

/** A line's detail with what undoing the call did, if anything, appended. */
const withUndo = (detail: string, undone: string | undefined): string => (undone === undefined ? detail : `${detail}; ${undone}`);

/** A request the wallet must refuse for its credentials; run with the authenticate of the test token. */
function refusedCredentials(role: ClientRole, what: string): CheckDefinition['run'] {
  return async (probe) => {
    const answer = await probe.call('authenticate', probe.session, role);
    const { outcome } = answer;
    if (outcome.kind === 'rejected') return pass(describeOutcome(outcome), answer);
    const expected = `a refusal (status false) of a request with ${what}`;
    const status = answer.event?.httpStatus ?? null;
    if (outcome.kind === 'unknown' && status !== null && status >= 400 && status < 500) {
      return warn(`refused on HTTP ${status}, but not in the protocol's failure shape: ${describeOutcome(outcome)}`, expected, answer);
    }
    return fail(describeOutcome(outcome), expected, answer);
  };
}

/** Whether a debit (sign -1) or credit (+1) answered the balance before it moved by exactly the amount; keeps the new balance. */
function moves(probe: Probe, state: CheckState, answer: Answer, sign: 1 | -1): { ok: boolean; detail: string; expected: string } {
  const before = state.balance as string;
  const expectedBalance = addAmounts(before, probe.amount, sign);
  const expected = `success with balance ${expectedBalance} (${before} ${sign < 0 ? '-' : '+'} ${probe.amount}, exactly)`;
  if (!succeeded(answer)) return { ok: false, detail: describeOutcome(answer.outcome), expected };
  const after = balanceOf(answer);
  state.balance = after;
  const ok = sameAmount(after, expectedBalance);
  return { ok, detail: ok ? `balance ${before} -> ${after}` : `balance ${before} -> ${after}: moved by ${addAmounts(after, before, -1)}`, expected };
}

export const CHECKS: readonly CheckDefinition[] = [
  {
    name: 'health-check',
    title: 'the health check answers 204, with the Host header',
    required: true,
    async run(probe) {
      const { healthy, detail, event } = await probe.health();
      const said = `${detail} (Host ${probe.hostHeader})`;
      return healthy ? pass(said, shownOfEvent(event)) : fail(said, `HTTP 204 to POST /api/health-check with Host ${probe.hostHeader}`, shownOfEvent(event));
    },
  },
  { name: 'wrong-basic', title: 'a wrong Basic password is refused', required: true, run: refusedCredentials('wrong-basic', 'a wrong Basic password') },
  { name: 'wrong-signature', title: 'a wrong X-Request-Signature is refused', required: true, run: refusedCredentials('wrong-signature', 'a wrong signature') },
  {
    name: 'authenticate',
    title: 'authenticate answers every field of the success shape, ids exact',
    required: true,
    async run(probe, state) {
      const answer = await probe.call('authenticate', probe.session);
      const expected = 'success (status true, code 1, empty message) echoing token, player_id, site_id and provider_id exactly';
      if (!succeeded(answer)) return fail(describeOutcome(answer.outcome), expected, answer);
      const r = answer.outcome.response;
      state.balance = r.balance;
      state.startBalance = r.balance;
      const echoed = `player_id ${r.player_id}, site_id ${r.site_id}, provider_id ${r.provider_id}, game_id ${r.game_id}, balance ${r.balance}`;
      if (r.message !== '') return warn(`${echoed}; message ${JSON.stringify(r.message)}`, expected, answer);
      return pass(echoed, answer);
    },
  },
  {
    name: 'balance',
    title: 'balance answers the balance authenticate gave',
    required: true,
    async run(probe, state) {
      if (state.balance === undefined) return notRun('authenticate failed');
      const answer = await probe.call('balance', probe.session);
      const expected = `success with balance ${state.balance}`;
      if (!succeeded(answer)) return fail(describeOutcome(answer.outcome), expected, answer);
      const balance = balanceOf(answer);
      const same = sameAmount(balance, state.balance);
      state.balance = balance;
      return same ? pass(`balance ${balance}`, answer) : fail(`balance ${balance}`, expected, answer);
    },
  },
  {
    name: 'debit',
    title: 'a debit lowers the balance by exactly its amount',
    required: true,
    async run(probe, state) {
      if (state.balance === undefined) return notRun('authenticate failed');
      const fields = probe.debitFields(probe.ids.id('r1'), probe.ids.id('d1'), false);
      const answer = await probe.send('debit', encodeRequest('debit', fields));
      const { ok, detail, expected } = moves(probe, state, answer, -1);
      if (succeeded(answer)) {
        state.debit = fields;
        state.applied.push({ action: 'debit', fields });
      }
      if (ok) return pass(detail, answer);
      return fail(withUndo(detail, succeeded(answer) ? undefined : await probe.undo('debit', fields, answer, true)), expected, answer);
    },
  },
  {
    name: 'debit-repeat',
    title: 'the same debit repeated answers success and moves nothing',
    required: true,
    async run(probe, state) {
      const debit = state.debit;
      if (debit === undefined || state.balance === undefined) return notRun('the debit failed');
      const before = state.balance;
      const answer = await probe.send('debit', encodeRequest('debit', debit));
      const now = await probe.call('balance', probe.session);
      const expected = `success, and the balance still ${before}: the gateway resends a body whose answer was lost and takes a success as applied once`;
      const balance = succeeded(now) ? balanceOf(now) : undefined;
      if (balance !== undefined) state.balance = balance;
      if (balance !== undefined && !sameAmount(balance, before)) {
        const moved = addAmounts(balance, before, -1);
        // Applied twice: a credit against the same debit gives the second stake back.
        const give = probe.creditFields(debit.round_id, probe.ids.id('c1x'), debit.transaction_id, false);
        const back = await probe.call('credit', give);
        if (succeeded(back)) state.balance = balanceOf(back);
        return fail(`the repeat moved the balance by ${moved} (${before} -> ${balance}); given back with credit ${give.transaction_id}: ${describeOutcome(back.outcome)}`, expected, answer);
      }
      if (!succeeded(answer)) return fail(`repeat ${describeOutcome(answer.outcome)}`, expected, answer);
      if (balance === undefined) return fail(`repeat answered success; balance afterwards ${describeOutcome(now.outcome)}`, expected, now);
      if (!sameAmount(balanceOf(answer), before)) return fail(`the repeat answered balance ${balanceOf(answer)} (the balance is ${balance})`, expected, answer);
      return pass(`success, balance still ${balance}`, answer);
    },
  },
  {
    name: 'second-debit',
    title: 'a second debit in the round is refused',
    required: false,
    async run(probe, state) {
      const first = state.debit;
      if (first === undefined) return notRun('the debit failed');
      const fields = probe.debitFields(first.round_id, probe.ids.id('d1b'), false);
      const answer = await probe.call('debit', fields);
      // Given back at once, in the round still open, so the credit after it finds the round as it was.
      const undone = await probe.undo('debit', fields, answer, false);
      if (answer.outcome.kind === 'rejected') return pass(withUndo(describeOutcome(answer.outcome), undone), answer);
      return fail(withUndo(describeOutcome(answer.outcome), undone), `a refusal: round ${first.round_id} already has debit ${first.transaction_id}`, answer);
    },
  },
  {
    name: 'credit',
    title: 'a credit raises the balance by exactly its amount (closing the round)',
    required: true,
    async run(probe, state) {
      const debit = state.debit;
      if (debit === undefined || state.balance === undefined) return notRun('the debit failed');
      const fields = probe.creditFields(debit.round_id, probe.ids.id('c1'), debit.transaction_id, true);
      const answer = await probe.call('credit', fields);
      const { ok, detail, expected } = moves(probe, state, answer, 1);
      if (succeeded(answer)) {
        state.applied.push({ action: 'credit', fields });
        state.closedRound = debit.round_id;
      }
      if (ok) return pass(detail, answer);
      if (succeeded(answer)) return fail(detail, expected, answer);
      // The stake is still out: roll the debit back.
      const back = await probe.call('rollback', probe.creditFields(debit.round_id, probe.ids.id('rb1'), debit.transaction_id, true));
      return fail(`${detail}; the debit rolled back instead: ${describeOutcome(back.outcome)}`, expected, answer);
    },
  },
  {
    name: 'rollback',
    title: 'a rollback of a separate debit restores the balance',
    required: true,
    async run(probe, state) {
      if (state.balance === undefined) return notRun('authenticate failed');
      const before = state.balance;
      const debit = probe.debitFields(probe.ids.id('r2'), probe.ids.id('d2'), false);
      const placed = await probe.call('debit', debit);
      if (!succeeded(placed)) {
        const undone = await probe.undo('debit', debit, placed, true);
        return fail(withUndo(`the debit to roll back: ${describeOutcome(placed.outcome)}`, undone), 'the debit to succeed', placed);
      }
      state.balance = balanceOf(placed);
      state.applied.push({ action: 'debit', fields: debit });
      const fields: CreditFields = probe.creditFields(debit.round_id, probe.ids.id('rb2'), debit.transaction_id, true);
      const answer = await probe.call('rollback', fields);
      const expected = `success with balance ${before} (as before the debit)`;
      if (!succeeded(answer)) {
        // The stake is still out: a credit against the debit gives it back.
        const back = await probe.call('credit', probe.creditFields(debit.round_id, probe.ids.id('c2'), debit.transaction_id, true));
        return fail(`${describeOutcome(answer.outcome)}; the stake given back with a credit instead: ${describeOutcome(back.outcome)}`, expected, answer);
      }
      state.balance = balanceOf(answer);
      state.applied.push({ action: 'rollback', fields });
      const placedEntry = state.applied.find((t) => t.fields === debit);
      if (placedEntry !== undefined) placedEntry.reversed = true;
      const detail = `balance ${before} -> ${balanceOf(placed)} -> ${state.balance}`;
      return sameAmount(state.balance, before) ? pass(detail, answer) : fail(detail, expected, answer);
    },
  },
  {
    name: 'status',
    title: 'status confirms each transaction applied',
    required: true,
    async run(probe, state) {
      if (state.applied.length === 0) return notRun('no transaction was applied');
      // The spec does not say what status tells of a debit rolled back since, and the gateway never
      // relies on it: a refusal there is a warning, anywhere else a failure.
      const failures: { said: string; answer: Answer }[] = [];
      const doubts: { said: string; answer: Answer }[] = [];
      let last: Answer | undefined;
      const nameOf = (action: TransactionAction, reversed: boolean | undefined): string => `${action}${reversed === true ? ' (rolled back)' : ''}`;
      for (const { action, fields, reversed } of state.applied) {
        const answer = await probe.call('status', statusFields(fields, action));
        last = answer;
        if (!succeeded(answer)) (reversed === true ? doubts : failures).push({ said: `${nameOf(action, reversed)} ${fields.transaction_id}: ${describeOutcome(answer.outcome)}`, answer });
      }
      const names = state.applied.map(({ action, reversed }) => nameOf(action, reversed)).join(', ');
      const expected = `success for each applied transaction (${names})`;
      const said = [...failures, ...doubts].map((f) => f.said).join('; ');
      if (failures[0] !== undefined) return fail(said, expected, failures[0].answer);
      if (doubts[0] !== undefined) return warn(said, expected, doubts[0].answer);
      return pass(`success for ${names}`, last);
    },
  },
  {
    name: 'status-unknown',
    title: 'status of a transaction never sent answers code 34',
    required: true,
    async run(probe, state) {
      if (state.balance === undefined) return notRun('authenticate failed');
      const never = probe.debitFields(probe.ids.id('r0'), probe.ids.id('none'), false);
      const answer = await probe.call('status', statusFields(never, 'debit'));
      const expected = `a refusal with code ${Code.TransactionNotFound} (${codeName(Code.TransactionNotFound)}): the gateway concludes "never applied" from that code alone`;
      const { outcome } = answer;
      if (outcome.kind === 'rejected' && outcome.code === Code.TransactionNotFound) return pass(describeOutcome(outcome), answer);
      if (outcome.kind === 'rejected') {
        return warn(`${describeOutcome(outcome)}: a debit in doubt would wait for an operator`, expected, answer);
      }
      return fail(
        outcome.kind === 'ok' ? 'success for a transaction never sent: the gateway would take a lost call as applied' : describeOutcome(outcome),
        expected,
        answer,
      );
    },
  },
  {
    name: 'closed-round',
    title: 'a closed round refuses a further debit, credit and rollback',
    required: false,
    async run(probe, state) {
      const debit = state.debit;
      const round = state.closedRound;
      if (debit === undefined || round === undefined) return notRun('no round was closed (the credit failed)');
      const attempts = [
        { op: 'debit' as const, fields: probe.debitFields(round, probe.ids.id('d3'), false) },
        { op: 'credit' as const, fields: probe.creditFields(round, probe.ids.id('c3'), debit.transaction_id, true) },
        { op: 'rollback' as const, fields: probe.creditFields(round, probe.ids.id('rb3'), debit.transaction_id, true) },
      ];
      const said: string[] = [];
      let accepted = false;
      let shown: Answer | undefined;
      for (const { op, fields } of attempts) {
        const answer = op === 'debit' ? await probe.call(op, fields) : await probe.call(op, fields as CreditFields);
        const refused = answer.outcome.kind === 'rejected';
        if (!refused && !accepted) shown = answer;
        accepted ||= !refused;
        shown ??= answer;
        said.push(withUndo(`${op} ${describeOutcome(answer.outcome)}`, await probe.undo(op, fields, answer, true)));
      }
      return accepted ? fail(said.join('; '), `three refusals: round ${round} was closed by credit`, shown) : pass(said.join('; '), shown);
    },
  },
  {
    name: 'http-status',
    title: "every answer's HTTP status agrees with its code",
    required: false,
    async run(probe) {
      const answered = probe.events.filter(({ event }) => event.operation !== 'health-check' && event.outcome !== 'unknown');
      const disagreeing = answered.filter(({ event }) => expectedStatus(event.code as number, event.httpStatus as number) !== undefined);
      if (disagreeing.length === 0) return pass(`${answered.length} answers`);
      const lines = disagreeing.map(({ check, event }) => `${check} ${event.operation}: code ${event.code} on HTTP ${event.httpStatus}`);
      const expected = disagreeing.map(({ event }) => `code ${event.code}: ${expectedStatus(event.code as number, event.httpStatus as number)}`).join('; ');
      return fail(lines.join('; '), expected, shownOfEvent(disagreeing[0]?.event));
    },
  },
  {
    name: 'terminate',
    title: 'terminate answers success',
    required: true,
    async run(probe, state) {
      if (state.balance === undefined) return notRun('authenticate failed');
      const answer = await probe.call('terminate', probe.session);
      if (!succeeded(answer)) return fail(describeOutcome(answer.outcome), 'success (status true, code 1) with the balance', answer);
      state.terminated = true;
      state.endBalance = balanceOf(answer);
      return pass(`balance ${state.endBalance}`, answer);
    },
  },
  {
    name: 'balance-after-terminate',
    title: 'balance on the terminated token is refused',
    required: true,
    async run(probe, state) {
      if (!state.terminated) return notRun('terminate failed');
      const answer = await probe.call('balance', probe.session);
      if (answer.outcome.kind === 'rejected') return pass(describeOutcome(answer.outcome), answer);
      return fail(describeOutcome(answer.outcome), 'a refusal: the token was terminated', answer);
    },
  },
];

function statusFields(fields: DebitFields, action: TransactionAction): StatusFields {
  return {
    token: fields.token,
    player_id: fields.player_id,
    site_id: fields.site_id,
    provider_id: fields.provider_id,
    game_id: fields.game_id,
    currency: fields.currency,
    amount: fields.amount,
    round_id: fields.round_id,
    transaction_id: fields.transaction_id,
    action,
  };
}

/**
 * undefined when the status fits the code, else what was expected: 200 with a success; the spec's
 * status for a code of its table; an error status (4xx, 5xx) for a code the spec leaves open.
 */
export function expectedStatus(code: number, httpStatus: number): string | undefined {
  if (code === Code.Success) return httpStatus === 200 ? undefined : 'HTTP 200';
  const info = codeInfo(code);
  if (info?.spec) return httpStatus === info.httpStatus ? undefined : `HTTP ${info.httpStatus} (the spec's status for it)`;
  return httpStatus >= 400 && httpStatus < 600 ? undefined : 'an error status (4xx or 5xx)';
}
