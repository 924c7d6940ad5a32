import { copyFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import request from 'supertest';
import { waitFor } from '../../src/lib/wait-for';
import { Code } from '../../src/wallet/codes';
import { CHROMIUM } from '../support/system-packages';
import { basicAuth } from '../support/wired-gateway';
import { callsFor, newId, startHarness, type Harness, type Player } from '../support/worker-harness';

/**
 * The operators' console in a real browser (Debian's Chromium, headless) over the real gateway,
 * a real worker, Redis and the simulator: a win the wallet keeps refusing goes dead and holds its
 * token's terminate; the operator finds it on the overview, opens it, sees every attempt, resolves
 * it with a note, sees the audit entry, and the token's terminate then reaches the wallet.
 * Screenshots of each page go to test/artifacts/; with UPDATE_DOCS_IMAGES=1 also to docs/images/
 * (a plain `npm test` changes no tracked file).
 */
jest.setTimeout(120_000);

const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const ADMIN = { username: 'ops', password: 'ops-password-123' };
const ARTIFACTS = join(__dirname, '..', 'artifacts');
const DOCS_IMAGES = join(__dirname, '..', '..', 'docs', 'images');

let h: Harness;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  h = await startHarness({ label: 'console-e2e', env: { ADMIN_USER: ADMIN.username, ADMIN_PASSWORD: ADMIN.password, BIG_WIN_MULTIPLIER: '10' } });
  await h.startWorker();
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  page = await browser.newPage({ viewport: { width: 1280, height: 900 }, httpCredentials: ADMIN });
  page.setDefaultTimeout(15_000);
});

afterAll(async () => {
  await browser?.close();
  await h?.close();
});

async function shot(name: string): Promise<void> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const path = join(ARTIFACTS, `console-${name}.png`);
  await page.screenshot({ path, fullPage: true });
  if (process.env.UPDATE_DOCS_IMAGES !== '1') return;
  mkdirSync(DOCS_IMAGES, { recursive: true });
  copyFileSync(path, join(DOCS_IMAGES, `console-${name}.png`));
}

it('finds a dead win on the overview, sees every attempt, resolves it, and the terminate goes out', async () => {
  const player: Player = await h.newPlayer();
  const bet = await h.bet(player, '1.00');
  const winId = newId('credit');
  // Every try answered 12 (retry): 11 attempts, then dead.
  h.sim.faults.failNext('credit', 50, Code.InternalServiceError, { transactionId: winId });
  await h.settleInline(player, 'credit', bet, { id: winId, amount: '25.00' });
  await h.inState(winId, 'dead', 40_000);
  h.sim.faults.clear();
  // The engine ends the session: the dead win holds the token, so its terminate waits.
  const end = await request(h.url).post(`/engine/v1/sessions/${player.session.sessionId}/end`).set('Authorization', 'Bearer worker-harness-engine-key').send({});
  expect(end.status).toBe(202);
  const terminates = () => h.sim.calls().filter((c) => c.operation === 'terminate' && c.body?.token === player.fields.token);
  expect(terminates()).toEqual([]);

  await page.goto(`${h.url}/admin`);
  await page.locator('[data-card="dead (an operator must act)"] .n', { hasText: '1' }).waitFor();
  await shot('overview');
  await page.getByRole('link', { name: winId }).first().click();
  await page.getByRole('heading', { name: `Transaction ${winId}` }).waitFor();
  expect(await page.locator('tr[data-attempt]').count()).toBe(11);
  const codes = await page.locator('tr[data-attempt] td:nth-child(3)').allInnerTexts();
  expect(codes).toEqual(Array(11).fill(String(Code.InternalServiceError)));
  await shot('transaction-dead');

  await page.getByLabel('Applied at the wallet → succeeded').check();
  await page.locator('#note-resolve').fill('credited by hand in the wallet back office, ticket OPS-42');
  await page.getByRole('button', { name: 'Resolve' }).click();
  await page.locator('[data-notice]', { hasText: 'resolve-applied' }).waitFor();
  expect(await page.locator('[data-notice]').innerText()).toMatch(/dead → succeeded.*terminate was released/);
  const audit = page.locator('tr[data-audit]').first();
  expect(await audit.innerText()).toMatch(/ops\s+resolve-applied\s+dead → succeeded\s+resolved\s+credited by hand/);
  await shot('transaction-resolved');

  // Released: the token's terminate reaches the wallet.
  await waitFor('terminate sent', async () => (terminates().length > 0 ? true : undefined), 30_000);
  // The resolution itself never called the wallet for the win again.
  expect(callsFor(h.sim, winId)).toHaveLength(11);

  await page.goto(`${h.url}/admin/audit`);
  await page.locator('tr[data-audit]', { hasText: winId }).waitFor();
  await shot('audit');
});

it('shows the lists, the player page and the export form', async () => {
  for (const [name, path] of [
    ['dead-list', '/admin/transactions-list?state=dead'],
    ['stale-rounds', '/admin/stale-rounds'],
    ['terminates', '/admin/tokens'],
    ['big-wins', '/admin/big-wins'],
    ['export', '/admin/export'],
  ] as const) {
    await page.goto(`${h.url}${path}`);
    await page.locator('main h1').waitFor();
    await shot(name);
  }
  await page.goto(`${h.url}/admin/big-wins`);
  await page.locator('table a[href^="/admin/players/"]').first().click();
  await page.getByRole('heading', { name: /recent rounds/ }).waitFor();
  expect(await page.locator('table tr[data-id]').count()).toBeGreaterThanOrEqual(2);
  await shot('player');
  // Keyboard: the first Tab lands on a link of the navigation, with a visible focus ring.
  await page.keyboard.press('Tab');
  expect(await page.locator('a:focus').count()).toBe(1);
});

it('answers nothing to a browser without credentials', async () => {
  const res = await request(h.url).get('/admin').set('Authorization', basicAuth('ops', 'wrong'));
  expect(res.status).toBe(401);
});
