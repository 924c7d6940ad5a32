import fc from 'fast-check';
import { Advance, Bet, End, Kill, Launch, RunJob, Settle, Upkeep, Wallet } from './commands';
import { runSequence, withConnections } from './run';

/**
 * Sequences the money model found, shrunk, kept as they were reported: each runs the real parts
 * against the scripted wallet, its held calls released oldest first (the counterexample's order),
 * then the drain and every invariant.
 */
const oldestFirst = (): fc.Scheduler => fc.schedulerFor(Array.from({ length: 500 }, (_, i) => i + 1));

it("a refund acknowledged while its bet is at the wallet, the bet then refused for good (34): the refund ends succeeded, nothing reversed, no operator", async () => {
  await withConnections((connections) =>
    runSequence(connections, oldestFirst(), [
      new Bet(0, 0, null, false, false),
      new Settle('rollback', 0, 0, 0, false, null, false, true),
      new Wallet({ kind: 'refuse', code: 34 }),
    ]),
  );
}, 60_000);

it("a refund acknowledged while its bet is at the wallet, the bet answered 12 and never applied: the refund ends succeeded, nothing reversed, never failed", async () => {
  await withConnections((connections) =>
    runSequence(connections, oldestFirst(), [
      new Bet(0, 0, null, false, false),
      new Settle('rollback', 0, 0, 0, false, null, false, true),
      new Wallet({ kind: 'refuse', code: 12 }),
      new Launch(0, null),
    ]),
  );
}, 60_000);

it("a refund linked as its bet's compensation while its inline try was out, that gateway killed: the worker's run past the inline window counts the lost try", async () => {
  await withConnections((connections) =>
    runSequence(connections, oldestFirst(), [
      new Bet(0, 0, null, false, false),
      new Settle('rollback', 0, 0, 0, false, null, false, false),
      new Kill(1),
      // the debit applied, its answer lost: refused to the engine, compensated by the refund in the round
      new Wallet({ kind: 'drop' }),
      // the dead gateway's rollback reaches the wallet all the same
      new Wallet({ kind: 'answer' }),
      new Advance(8_000),
      new RunJob(0),
      new Wallet({ kind: 'answer' }),
    ]),
  );
}, 60_000);

it('a bet refused before it was recorded, claimed by a repeat with another amount while that answer is out: a repeat of that amount is the same body (a flaw of the model, not of the gateway)', async () => {
  await withConnections((connections) =>
    runSequence(connections, oldestFirst(), [
      new Launch(0, 0),
      new End(3),
      new Bet(5, 0, null, false, true),
      new Bet(0, 0, { of: 0, same: false }, false, true),
      new Bet(0, 0, { of: 0, same: true }, false, true),
      new Wallet({ kind: 'answer' }),
    ]),
  );
}, 60_000);

it("a refund through a session of another token of the player stands in for its bet's compensation and finds the bet never applied: the bet is watched on its own token, and both tokens are terminated", async () => {
  await withConnections((connections) =>
    runSequence(connections, oldestFirst(), [
      new Launch(0, null),
      // on the first player's first token; the drain's clock passes its caller's deadline, then the
      // wallet refuses it for good: never applied, compensated by the refund below
      new Bet(0, 0, null, false, false, true),
      // through the session of the token just launched (the same player, the same currency), while
      // the bet is at the wallet: its tries meet no bet, status finds it never applied, it is watched
      new Settle('rollback', 7, 5, 0, false, null, false, true),
      new Upkeep('sweep'),
    ]),
  );
}, 60_000);
