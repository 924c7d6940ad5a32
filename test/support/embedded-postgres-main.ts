import { startEmbeddedPostgres } from '../../src/ledger/embedded';

/**
 * The embedded PostgreSQL in a process of its own, for tests (PGlite loads its WebAssembly with a
 * dynamic import, which jest's module sandbox does not offer): prints its URL on the first line,
 * stops on SIGTERM or when its parent goes.
 */
async function main(): Promise<void> {
  const embedded = await startEmbeddedPostgres(process.argv[2]);
  process.stdout.write(`${embedded.url}\n`);
  const stop = (): void => {
    void embedded.close().finally(() => process.exit(0));
  };
  process.on('SIGTERM', stop);
  process.on('disconnect', stop);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
