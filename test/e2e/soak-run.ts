import { spawn } from 'node:child_process';
import { resolve } from 'node:path';

/** Runs `src/main/<entry>.ts` as `npm run demo`/`soak` would (node + tsx), collecting its output. */
export function runEntry(entry: 'demo' | 'soak', args: readonly string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const root = resolve(__dirname, '..', '..');
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, ['--import', 'tsx', `src/main/${entry}.ts`, ...args], { cwd: root, env: process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    child.once('error', fail);
    child.once('close', (code) => done({ code, stdout, stderr }));
  });
}

export function lastLine(text: string): string {
  return text.trimEnd().split('\n').pop() ?? '';
}
