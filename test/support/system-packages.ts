import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

/**
 * What the e2e tests need from the machine beyond Node and a Redis that answers, installed when
 * missing so the README's `npm test` passes on a fresh Debian machine (contract section 1):
 * Chromium for the demo-game browser test, redis-server for the private Redis of the soak and demo
 * and for the Sentinel tests' sentinels (`redis-server --sentinel`).
 */

/** Debian's package (apt-get install chromium); CHROMIUM_PATH for another machine's build. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

function onPath(command: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0;
}

let aptUpdated = false;

/** apt-get install of Debian packages, as root; anything else gets a message saying what to install. */
function aptInstall(packages: readonly string[], why: string): void {
  const root = process.getuid?.() === 0;
  if (!root || !onPath('apt-get')) {
    throw new Error(`${why}: install ${packages.join(' ')} (Debian: apt-get install ${packages.join(' ')}), then run the tests again`);
  }
  process.stderr.write(`\n[test setup] ${why}: apt-get install ${packages.join(' ')} (once; it takes a minute or two)\n`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  if (!aptUpdated) {
    execFileSync('apt-get', ['update', '-qq'], { stdio: ['ignore', 'ignore', 'inherit'], env });
    aptUpdated = true;
  }
  execFileSync('apt-get', ['install', '-y', '-qq', ...packages], { stdio: ['ignore', 'ignore', 'inherit'], env });
}

export function ensureChromium(): void {
  if (existsSync(CHROMIUM)) return;
  if (process.env.CHROMIUM_PATH !== undefined) throw new Error(`CHROMIUM_PATH=${CHROMIUM} does not exist`);
  aptInstall(['chromium'], 'the demo-game browser test needs Chromium at /usr/bin/chromium');
  if (!existsSync(CHROMIUM)) throw new Error(`apt-get installed chromium, but ${CHROMIUM} is still missing`);
}

export function ensureRedisServer(): void {
  if (onPath('redis-server')) return;
  aptInstall(['redis-server'], 'the soak and demo tests start private redis-server processes');
}
