import { loadSoakDatabaseServer } from '../config/env';
import { freshSeed, runCommand, soakDefaults, type Sizes } from '../soak/cli';

/**
 * `npm run soak`: 2 gateways and 2 workers on Redis with AOF (fsync always); the seeded engine
 * script under the simulator's chaos plus the fault scheduler (wallet codes, applied-but-lost
 * answers, resets, slow answers, SIGKILLs of gateways and workers, Redis restarts on the same AOF).
 * The same checker and closing line as the demo; `--seed N` repeats a run. `--ledger-outage S` adds
 * the ledger, on the PostgreSQL at DATABASE_URL (a database of the run's own) or an embedded one.
 */
const DEFAULTS: Sizes = soakDefaults(freshSeed());

runCommand({ invocation: 'npm run soak --', name: 'soak', title: 'Soak reconciliation', aof: true, perPlayer: false, defaults: DEFAULTS, databaseServer: loadSoakDatabaseServer() }, process.argv.slice(2));
