import { Child, tsEntry } from '../../src/lib/child';

/** Runs `src/main/<entry>.ts` as `npm run demo`/`soak` would (node + tsx), collecting its output. */
export async function runEntry(entry: 'demo' | 'soak', args: readonly string[]): Promise<{ code: number | null; stdout: string; output: string }> {
  const child = new Child({ name: entry, args: [...tsEntry(`src/main/${entry}.ts`), ...args], env: process.env });
  await child.start();
  const code = await child.exited;
  return { code, stdout: child.stdout(), output: child.output() };
}

export function lastLine(text: string): string {
  return text.trimEnd().split('\n').pop() ?? '';
}
