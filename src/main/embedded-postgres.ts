import { startEmbeddedPostgres } from '../ledger/embedded';

/**
 * The embedded PostgreSQL (PGlite) in a process of its own, for `npm run dev` and the tests:
 * PGlite loads its WebAssembly with a dynamic import, which jest's module sandbox does not offer,
 * and its queries then run beside the gateway's event loop rather than on it. Prints its URL on the
 * first line; stops on SIGTERM, or when its parent goes.
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
