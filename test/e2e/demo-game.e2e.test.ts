import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { DEMO_PLAYER, startDev, type RunningDev } from '../../src/main/dev';
import { mulberry32 } from '../../src/sim/faults';
import { deletePrefix, redisUrl, testPrefix } from '../support/prefix';
import { CHROMIUM } from '../support/system-packages';

/**
 * `npm run dev`'s demo game in a real browser (Debian's Chromium, headless; the e2e project's setup
 * installs it when missing): the dev stack runs in this process on free ports with its own prefix;
 * the page is driven like a person would. Dev serves two casinos, each its own simulator; the
 * browser plays at casino-a, and casino-b's launch URL is played through the same routes.
 */
jest.setTimeout(90_000);

const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const SCREENSHOT = join(__dirname, '..', 'artifacts', 'demo-game.png');
const STEP_TIMEOUT_MS = 15_000;

const prefix = testPrefix('demogame');
const ledgerDataDir = mkdtempSync(join(tmpdir(), 'wgw-demogame-ledger-'));
let dev: RunningDev;
let browser: Browser;
let page: Page;
const authorizationsSent: string[] = [];
const printed: string[] = [];
const casino = (id: string) => dev.urls.casinos.find((c) => c.id === id)!;

beforeAll(async () => {
  dev = await startDev({
    env: { REDIS_URL: redisUrl(), QUEUE_PREFIX: prefix, PORT: '0', SIM_PORT: '0', LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent' },
    print: (line) => printed.push(line),
    // A fixed seed makes the spins the same on every run.
    random: mulberry32(20),
    // The embedded ledger's data in a folder of the test's own, removed after.
    ledgerDataDir,
  });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  page = await browser.newPage({ viewport: { width: 640, height: 900 } });
  page.setDefaultTimeout(STEP_TIMEOUT_MS);
  page.on('request', (req) => {
    const auth = req.headers().authorization;
    if (auth !== undefined) authorizationsSent.push(auth);
  });
});

afterAll(async () => {
  await browser?.close();
  await dev?.close();
  await deletePrefix(prefix);
  rmSync(ledgerDataDir, { recursive: true, force: true });
});

const balanceText = (): Promise<string> => page.getByTestId('balance').innerText();
const spins = (): Promise<number> => page.locator('#history li[data-outcome]').count();

/** Presses Spin and waits until the round is in the history; returns the newest entry's data. */
async function spin(): Promise<{ outcome: string; winState: string }> {
  const before = await spins();
  await page.getByRole('button', { name: 'SPIN' }).click();
  // Locator waits poll the page until their deadline (STEP_TIMEOUT_MS).
  await page.locator('#history li[data-outcome]').nth(before).waitFor();
  await page.locator('#spin:not([disabled])').waitFor();
  const newest = page.locator('#history li').first();
  return { outcome: (await newest.getAttribute('data-outcome')) ?? '', winState: (await newest.getAttribute('data-win-state')) ?? '' };
}

async function walletBalance(id = 'casino-a'): Promise<string> {
  const res = await fetch(`${casino(id).simulator}/__sim/ledger/players/${DEMO_PLAYER.player_id}`);
  return ((await res.json()) as { balance?: string }).balance ?? 'no account';
}

it('the banner shows a launch URL and a simulator per casino', () => {
  expect(dev.urls.casinos.map((c) => c.id)).toEqual(['casino-a', 'casino-b']);
  for (const c of dev.urls.casinos) {
    expect(c.launch).toContain(`/launch/${c.id}?`);
    const at = printed.findIndex((line) => line.includes(`Play at ${c.id}`));
    expect(printed[at]).toContain(c.launch);
    expect(printed[at + 1]).toContain(c.simulator!);
  }
  expect(casino('casino-a').simulator).not.toBe(casino('casino-b').simulator);
  expect(printed.join('\n')).toContain(`${dev.urls.gateway}/admin`);
});

it('the launch URL opens the demo game, and spins move the balance', async () => {
  await page.goto(casino('casino-a').launch);
  expect(new URL(page.url()).pathname).toBe('/demo-game');
  expect(new URL(page.url()).searchParams.get('session')).toMatch(/^casino-a~[A-Za-z0-9_-]{16,}$/);
  await page.getByTestId('balance').filter({ hasText: /EUR$/ }).waitFor();
  expect(await balanceText()).toBe('1000.00 EUR');

  const outcomes: string[] = [];
  for (let i = 0; i < 4; i += 1) {
    const before = await balanceText();
    const { outcome, winState } = await spin();
    outcomes.push(outcome);
    expect(winState).toBe('succeeded');
    // A stake of 1.00: a loss takes it, a win pays 2.00 on it; either way the balance moves.
    expect(await balanceText()).not.toBe(before);
  }
  expect(await balanceText()).toBe(`${await walletBalance()} EUR`);
  expect(outcomes).toContain('loss');
});

it('with "fail credits" on, a win goes pending and settles in the background', async () => {
  await page.getByTestId('fail-credits').check();
  let pending = false;
  for (let i = 0; i < 20 && !pending; i += 1) {
    const { outcome, winState } = await spin();
    if (outcome === 'win') {
      expect(winState).toBe('pending');
      pending = true;
    }
  }
  expect(pending).toBe(true);
  const newest = page.locator('#history li').first();
  await expect(newest.getAttribute('data-win-state')).resolves.toBe('pending');
  await expect(newest.locator('.tag').innerText()).resolves.toBe('pending');

  // The worker retries it (code 12 three times, then the wallet takes it); the page polls the record.
  await page.locator('#history li:first-child[data-win-state="succeeded"]').waitFor();
  await expect(newest.locator('.tag').innerText()).resolves.toMatch(/^pending → credited after 4 tries$/);
  await page.locator('#status', { hasText: 'settled in the background' }).waitFor();
  expect(await balanceText()).toBe(`${await walletBalance()} EUR`);

  mkdirSync(join(__dirname, '..', 'artifacts'), { recursive: true });
  await page.screenshot({ path: SCREENSHOT, fullPage: true });
});

it('the page never holds the engine key or the wallet token', async () => {
  const token = new URL(casino('casino-a').launch).searchParams.get('token') as string;
  const html = await page.content();
  expect(html).not.toContain(dev.config.registry.engines[0]!.keys[0]!);
  expect(html).not.toContain(token);
  expect(authorizationsSent).toEqual([]);
});

it("casino-b's launch URL plays at casino-b's wallet (HMAC-SHA512, its own credentials); casino-a's ledger does not move", async () => {
  const aBefore = await walletBalance('casino-a');
  const launched = await fetch(casino('casino-b').launch, { redirect: 'manual' });
  expect(launched.status).toBe(302);
  const session = new URL(launched.headers.get('location')!, dev.urls.gateway).searchParams.get('session')!;
  expect(session).toMatch(/^casino-b~/);
  const res = await fetch(`${dev.urls.gateway}/demo-game/api/spin`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ session, stake: '2.00' }) });
  expect(res.status).toBe(200);
  const spun = (await res.json()) as { bet: { state: string }; win: { state: string }; balance: string };
  expect(spun.bet.state).toBe('succeeded');
  expect(spun.win.state).toBe('succeeded');
  expect(await walletBalance('casino-b')).toBe(spun.balance);
  expect(await walletBalance('casino-a')).toBe(aBefore);
});
