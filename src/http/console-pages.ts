import type { ActionResult } from '../console/actions';
import type { BigWin, Overview, Page, StaleRound, TransactionDetail, WalletAuditEntry, WalletRecord, WalletToken } from '../console/queries';
import type { LedgerHeld, LedgerRead, RowFields, Source } from '../console/ledger-reads';
import type { LateRepeat, LedgerTransaction } from '../ledger/history';
import type { AttemptLogEntry } from '../store/types';

/**
 * The operators' console as plain server-rendered HTML: real links, forms and buttons (keyboard
 * and screen-reader friendly, visible focus), no script, no build step. Every value is escaped.
 * Every row names its wallet, and every link to a record, a player or an action carries it: the same
 * ids in two wallets are two different things (contract 11).
 */

export function esc(value: unknown): string {
  return String(value ?? '').replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

const iso = (ms: number | null | undefined): string => (ms === null || ms === undefined ? '—' : new Date(ms).toISOString().replace('.000Z', 'Z'));

function age(ms: number, now: number): string {
  const s = Math.max(0, Math.floor((now - ms) / 1000));
  if (s < 120) return `${s} s`;
  if (s < 7200) return `${Math.floor(s / 60)} min`;
  if (s < 172_800) return `${Math.floor(s / 3600)} h`;
  return `${Math.floor(s / 86_400)} d`;
}

const STYLE = `
:root{--fg:#1b1f24;--muted:#57606a;--line:#d0d7de;--bg:#fff;--accent:#0a58ca;--bad:#b42318;--warn:#9a6700;--ok:#1a7f37}
*{box-sizing:border-box}body{margin:0;font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:var(--fg);background:#f6f8fa}
header{background:#24292f;color:#fff;padding:.6rem 1.2rem;display:flex;gap:1.2rem;align-items:center;flex-wrap:wrap}
header strong{margin-right:1rem}header a{color:#fff;text-decoration:none;padding:.2rem .4rem;border-radius:4px}
header a[aria-current=page]{background:#57606a}
main{max-width:1200px;margin:0 auto;padding:1rem 1.2rem 3rem}
h1{font-size:1.4rem;margin:.6rem 0 1rem}h2{font-size:1.1rem;margin:1.6rem 0 .6rem}
a{color:var(--accent)}
a:focus-visible,button:focus-visible,input:focus-visible,select:focus-visible,textarea:focus-visible{outline:3px solid #ffbf47;outline-offset:2px}
table{border-collapse:collapse;width:100%;background:var(--bg);border:1px solid var(--line)}
th,td{padding:.35rem .6rem;border-bottom:1px solid var(--line);text-align:left;vertical-align:top}
th{background:#f0f3f6;font-weight:600}td.num{text-align:right;font-variant-numeric:tabular-nums}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(170px,1fr));gap:.8rem}
.card{background:var(--bg);border:1px solid var(--line);border-radius:6px;padding:.7rem .9rem}
.card .n{font-size:1.7rem;font-weight:600}.card .l{color:var(--muted)}
.card.bad .n{color:var(--bad)}.card.warn .n{color:var(--warn)}
.state{display:inline-block;padding:0 .45rem;border-radius:10px;font-size:.85rem;border:1px solid var(--line)}
.state-dead,.state-failed{color:var(--bad);border-color:var(--bad)}.state-pending,.state-compensating{color:var(--warn);border-color:var(--warn)}
.state-succeeded,.state-compensated{color:var(--ok);border-color:var(--ok)}
form.filters{display:flex;gap:.8rem;flex-wrap:wrap;align-items:flex-end;background:var(--bg);border:1px solid var(--line);padding:.7rem;border-radius:6px;margin-bottom:1rem}
label{display:flex;flex-direction:column;font-size:.85rem;color:var(--muted);gap:.2rem}
input,select,textarea{font:inherit;padding:.3rem .4rem;border:1px solid #8c959f;border-radius:4px;color:var(--fg)}
button{font:inherit;padding:.35rem .9rem;border-radius:4px;border:1px solid #1f6feb;background:#1f6feb;color:#fff;cursor:pointer}
button.danger{background:var(--bad);border-color:var(--bad)}
.actions{display:grid;grid-template-columns:repeat(auto-fill,minmax(260px,1fr));gap:.8rem}
.actions form{background:var(--bg);border:1px solid var(--line);border-radius:6px;padding:.7rem;display:flex;flex-direction:column;gap:.5rem}
.notice{background:#dafbe1;border:1px solid var(--ok);padding:.6rem .9rem;border-radius:6px}
.notice.bad{background:#ffebe9;border-color:var(--bad)}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem;background:var(--bg);border:1px solid var(--line);padding:.7rem;border-radius:6px}
dt{color:var(--muted)}dd{margin:0}.muted{color:var(--muted)}
`;

const NAV: [string, string][] = [
  ['/admin', 'Overview'],
  ['/admin/transactions-list?state=dead', 'Dead & pending'],
  ['/admin/stale-rounds', 'Stale rounds'],
  ['/admin/tokens', 'Terminates'],
  ['/admin/big-wins', 'Big wins'],
  ['/admin/audit', 'Audit'],
  ['/admin/late-repeats', 'Late repeats'],
  ['/admin/export', 'Export'],
  ['/admin/queues', 'Queues'],
];

export function layout(title: string, current: string, body: string): string {
  const nav = NAV.map(([href, label]) => `<a href="${esc(href)}"${href.split('?')[0] === current ? ' aria-current="page"' : ''}>${esc(label)}</a>`).join('');
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${esc(title)} · wallet gateway</title><style>${STYLE}</style></head>
<body><header><strong>Wallet gateway · operators</strong><nav aria-label="Console">${nav}</nav></header><main id="main"><h1>${esc(title)}</h1>${body}</main></body></html>`;
}

const stateTag = (state: string): string => `<span class="state state-${esc(state)}">${esc(state)}</span>`;
/**
 * A transaction's page carries its id in the query: a browser resolves a path segment `.` or `..`
 * (or `%2e%2e`) before sending, so ids such as `..` cannot travel in the path.
 */
const txQuery = (id: string, wallet: string): string => `id=${encodeURIComponent(id)}&wallet=${encodeURIComponent(wallet)}`;
const txLink = (id: string, wallet: string): string => `<a href="/admin/tx?${esc(txQuery(id, wallet))}">${esc(id)}</a>`;
const roundLink = (round: string, wallet: string, player: string, site: string): string =>
  `<a href="/admin/round?${esc(`id=${encodeURIComponent(round)}&wallet=${encodeURIComponent(wallet)}&player_id=${encodeURIComponent(player)}&site_id=${encodeURIComponent(site)}`)}">${esc(round)}</a>`;
const playerLink = (player: string, site: string, wallet: string): string =>
  `<a href="/admin/players/${encodeURIComponent(player)}?site_id=${encodeURIComponent(site)}&amp;wallet=${encodeURIComponent(wallet)}">${esc(player)}</a>`;

/** A row of a record table; `source` set: the table says where each row came from (Redis, or the ledger). */
type TableRow = RowFields & { readonly source?: Source };

const sourceCell = (r: TableRow): string => `<td data-source="${esc(r.source)}">${r.source === 'ledger' ? 'ledger (PostgreSQL)' : 'Redis'}</td>`;

function recordRows(records: readonly TableRow[], now: number, withSource: boolean): string {
  if (records.length === 0) return `<tr><td colspan="${withSource ? 10 : 9}" class="muted">None.</td></tr>`;
  return records
    .map(
      (r) => `<tr data-id="${esc(r.transactionId)}" data-wallet="${esc(r.wallet)}"${withSource ? ` data-source="${esc(r.source)}"` : ''}><td>${esc(r.wallet)}</td><td>${txLink(r.transactionId, r.wallet)}</td><td>${esc(r.kind)}</td><td>${stateTag(r.state)}${r.resolution ? ` <span class="muted">(${esc(r.resolution)})</span>` : ''}</td>
<td class="num">${esc(r.amount)} ${esc(r.currency)}</td><td>${playerLink(r.playerId, r.siteId, r.wallet)} / ${esc(r.siteId)}</td><td>${roundLink(r.roundId, r.wallet, r.playerId, r.siteId)}</td><td class="num">${r.attempts}</td><td>${age(r.createdAt, now)}</td>${withSource ? sourceCell(r) : ''}</tr>`,
    )
    .join('');
}

const RECORD_HEAD =
  '<th scope="col">Wallet</th><th scope="col">Transaction</th><th scope="col">Kind</th><th scope="col">State</th><th scope="col">Amount</th><th scope="col">Player / site</th><th scope="col">Round</th><th scope="col">Attempts</th><th scope="col">Age</th>';

/** Rows from the ledger among them (or on the page, `withSource`): a Source column names each row's. */
export function recordTable(records: readonly TableRow[], now: number, caption: string, withSource = records.some((r) => r.source === 'ledger')): string {
  return `<table><caption class="muted" style="text-align:left">${esc(caption)}</caption><thead><tr>${RECORD_HEAD}${withSource ? '<th scope="col">Source</th>' : ''}</tr></thead><tbody>${recordRows(records, now, withSource)}</tbody></table>`;
}

/** What a page says about the ledger's part in it. */
export function ledgerNote(read: LedgerRead<unknown>, rows: readonly TableRow[]): string {
  if (read.kind === 'unavailable') return '<p class="notice bad" role="status" data-ledger="unavailable">The ledger (PostgreSQL) did not answer: only what Redis holds is shown.</p>';
  if (rows.some((r) => r.source === 'ledger')) {
    return '<p class="notice" role="status" data-ledger="mixed">Rows marked "ledger (PostgreSQL)" come from the ledger: Redis no longer holds them (past its retention). They cannot be acted on.</p>';
  }
  return '';
}

function card(n: number | string, label: string, tone = '', href?: string): string {
  const inner = `<div class="n">${esc(n)}</div><div class="l">${esc(label)}</div>`;
  return `<div class="card ${tone}" data-card="${esc(label)}">${href ? `<a href="${esc(href)}" style="text-decoration:none;color:inherit">${inner}</a>` : inner}</div>`;
}

/** The `wallet` filter: every wallet of the registry (the default), or one. */
function walletSelect(values: FilterValues, walletIds: readonly string[]): string {
  const options = ['', ...walletIds].map((id) => `<option value="${esc(id)}"${(values.wallet ?? '') === id ? ' selected' : ''}>${esc(id || 'all wallets')}</option>`).join('');
  return `<label>Wallet<select name="wallet">${options}</select></label>`;
}

export function overviewPage(o: Overview, values: FilterValues, walletIds: readonly string[], now: number): string {
  const perWallet = o.wallets
    .map(
      (w) => `<tr data-wallet="${esc(w.wallet)}"><td>${esc(w.wallet)}</td><td class="num"><a href="/admin/transactions-list?state=dead&amp;wallet=${encodeURIComponent(w.wallet)}">${w.dead}</a></td><td class="num"><a href="/admin/transactions-list?state=pending&amp;wallet=${encodeURIComponent(w.wallet)}">${w.pending}</a></td><td class="num">${w.compensating}</td><td>${w.oldestPendingAt === null ? '—' : age(w.oldestPendingAt, now)}</td><td class="num">${w.endingTokens}</td><td class="num">${w.terminateFailedTokens}</td></tr>`,
    )
    .join('');
  const queues = o.queues
    .map((q) => `<tr><td>${esc(q.queue)}</td>${['waiting', 'delayed', 'active', 'failed'].map((s) => `<td class="num">${q.counts[s] ?? 0}</td>`).join('')}</tr>`)
    .join('');
  const wins = bigWinRows(o.bigWinsToday.items, now);
  const body = `<form class="filters" method="get" action="/admin">${walletSelect(values, walletIds)}<button type="submit">Show</button></form>
<section class="cards" aria-label="Money at a glance">
${card(o.dead, 'dead (an operator must act)', o.dead > 0 ? 'bad' : '', '/admin/transactions-list?state=dead')}
${card(o.pending, 'pending', o.pending > 0 ? 'warn' : '', '/admin/transactions-list?state=pending')}
${card(o.compensating, 'compensating', o.compensating > 0 ? 'warn' : '')}
${card(o.oldestPendingAt === null ? '—' : age(o.oldestPendingAt, now), 'oldest pending')}
${card(o.endingTokens, 'tokens waiting for terminate', o.endingTokens > 0 ? 'warn' : '', '/admin/tokens')}
${card(o.terminateFailedTokens, 'terminates given up', o.terminateFailedTokens > 0 ? 'bad' : '', '/admin/tokens?index=failed')}
${card(o.bigWinsToday.total, 'big wins today', '', '/admin/big-wins')}
</section>${o.truncated ? '<p class="muted">The pending index is larger than one scan: counts are of its first part.</p>' : ''}
<h2>Wallets</h2><table><thead><tr><th scope="col">Wallet</th><th scope="col">dead</th><th scope="col">pending</th><th scope="col">compensating</th><th scope="col">oldest pending</th><th scope="col">tokens waiting</th><th scope="col">terminates given up</th></tr></thead><tbody>${perWallet}</tbody></table>
<h2>Dead transactions</h2>${recordTable(o.deadSample, now, 'The oldest dead records; open one to act.')}
<h2>Queues</h2><table><thead><tr><th scope="col">Queue</th><th scope="col">waiting</th><th scope="col">delayed</th><th scope="col">active</th><th scope="col">failed</th></tr></thead><tbody>${queues}</tbody></table>
<h2>Big wins today</h2>${bigWinTable(wins)}`;
  return layout('Overview', '/admin', body);
}

export interface FilterValues {
  readonly [name: string]: string | undefined;
}

function filterForm(action: string, values: FilterValues, walletIds: readonly string[], extra = ''): string {
  const input = (name: string, label: string, type = 'text') =>
    `<label>${esc(label)}<input type="${type}" name="${name}" value="${esc(values[name] ?? '')}"></label>`;
  const select = (name: string, label: string, options: string[]) =>
    `<label>${esc(label)}<select name="${name}">${options.map((o) => `<option value="${esc(o)}"${values[name] === o ? ' selected' : ''}>${esc(o || 'any')}</option>`).join('')}</select></label>`;
  return `<form class="filters" method="get" action="${esc(action)}">${walletSelect(values, walletIds)}${extra}${select('kind', 'Kind', ['', 'debit', 'credit', 'rollback'])}
${input('player_id', 'Player')}${input('site_id', 'Site')}${input('from', 'From (UTC)', 'datetime-local')}${input('to', 'To (UTC)', 'datetime-local')}${input('min_age', 'Older than (s)', 'number')}
<button type="submit">Filter</button></form>`;
}

function pageNote<T>(p: Page<T>): string {
  return `<p class="muted">${p.total} found${p.truncated ? ' (the scan stopped at its limit: narrow the filters)' : ''}.</p>`;
}

export function transactionsPage(p: Page<WalletRecord>, values: FilterValues, walletIds: readonly string[], now: number): string {
  const state = `<label>State<select name="state">${['dead', 'pending'].map((s) => `<option${values.state === s ? ' selected' : ''}>${s}</option>`).join('')}</select></label>`;
  return layout('Dead & pending transactions', '/admin/transactions-list', `${filterForm('/admin/transactions-list', values, walletIds, state)}${pageNote(p)}${recordTable(p.items, now, `${values.state ?? 'dead'} transactions`)}`);
}

export function staleRoundsPage(p: Page<StaleRound>, values: FilterValues, walletIds: readonly string[], staleSeconds: number, now: number): string {
  const rows = p.items.map((s) => s.bet);
  return layout(
    'Stale rounds',
    '/admin/stale-rounds',
    `<p>Bets whose round had no closing win or refund for more than ${staleSeconds} s.</p>${filterForm('/admin/stale-rounds', values, walletIds)}${pageNote(p)}${recordTable(rows, now, 'The bet of each stale round')}`,
  );
}

function bigWinRows(wins: readonly BigWin[], now: number): string {
  if (wins.length === 0) return '<tr><td colspan="8" class="muted">None.</td></tr>';
  return wins
    .map(
      (w) => `<tr data-wallet="${esc(w.win.wallet)}"><td>${esc(w.win.wallet)}</td><td>${txLink(w.win.transactionId, w.win.wallet)}</td><td class="num">${esc(w.win.amount)} ${esc(w.win.currency)}</td><td class="num">${esc(w.betAmount ?? '—')}</td>
<td>${esc(w.over.join(', '))}</td><td>${stateTag(w.win.state)}</td><td>${playerLink(w.win.playerId, w.win.siteId, w.win.wallet)} / ${esc(w.win.siteId)}</td><td>${age(w.win.createdAt, now)}</td></tr>`,
    )
    .join('');
}

function bigWinTable(rows: string): string {
  return `<table><thead><tr><th scope="col">Wallet</th><th scope="col">Win</th><th scope="col">Amount</th><th scope="col">Bet</th><th scope="col">Over</th><th scope="col">State</th><th scope="col">Player / site</th><th scope="col">Age</th></tr></thead><tbody>${rows}</tbody></table>`;
}

export function bigWinsPage(p: Page<BigWin>, values: FilterValues, walletIds: readonly string[], thresholds: string, now: number): string {
  return layout('Big wins', '/admin/big-wins', `<p>${esc(thresholds)} Default window: today (UTC).</p>${filterForm('/admin/big-wins', values, walletIds)}${pageNote(p)}${bigWinTable(bigWinRows(p.items, now))}`);
}

export function tokensPage(index: 'ending' | 'failed', t: { tokens: WalletToken[]; total: number }, values: FilterValues, walletIds: readonly string[], now: number): string {
  const rows =
    t.tokens.length === 0
      ? '<tr><td colspan="8" class="muted">None.</td></tr>'
      : t.tokens
          .map(
            (k) => `<tr data-wallet="${esc(k.wallet)}"><td>${esc(k.wallet)}</td><td><code>${esc(k.tokenRef)}</code></td><td>${playerLink(k.playerId, k.siteId, k.wallet)} / ${esc(k.siteId)}</td><td>${esc(k.state)}</td>
<td class="num">${k.holding}</td><td>${k.from === null ? '—' : age(k.from, now)}</td><td class="num">${k.attempts}</td><td>${esc(k.lastCode || '—')}</td></tr>`,
          )
          .join('');
  const tabs = `<p><a href="/admin/tokens"${index === 'ending' ? ' aria-current="page"' : ''}>Waiting for their terminate</a> · <a href="/admin/tokens?index=failed"${index === 'failed' ? ' aria-current="page"' : ''}>Terminate given up</a></p>`;
  return layout(
    'Terminates',
    '/admin/tokens',
    `${tabs}<form class="filters" method="get" action="/admin/tokens"><input type="hidden" name="index" value="${esc(index)}">${walletSelect(values, walletIds)}<button type="submit">Filter</button></form><p class="muted">${t.total} tokens. "Held by" counts the token's credits/rollbacks still pending or dead: a terminate waits for them.</p>
<table><thead><tr><th scope="col">Wallet</th><th scope="col">Token ref</th><th scope="col">Player / site</th><th scope="col">State</th><th scope="col">Held by</th><th scope="col">Decided</th><th scope="col">Tries</th><th scope="col">Last code</th></tr></thead><tbody>${rows}</tbody></table>`,
  );
}

function attemptRows(attempts: readonly AttemptLogEntry[]): string {
  if (attempts.length === 0) return '<tr><td colspan="5" class="muted">No attempt log (it is kept while the record may still be sent, and dropped once it settled for good; the codes stay in its history).</td></tr>';
  return attempts
    .map((a, i) => `<tr data-attempt><td class="num">${i + 1}</td><td>${iso(a.at)}</td><td>${esc(a.result)}</td><td class="num">${a.latencyMs} ms</td><td><code>${esc(a.walletRequestId ?? '—')}</code></td></tr>`)
    .join('');
}

function auditRows(entries: readonly WalletAuditEntry[], withTransaction: boolean): string {
  if (entries.length === 0) return `<tr><td colspan="${withTransaction ? 8 : 7}" class="muted">None.</td></tr>`;
  return entries
    .map(
      // An action on a dead debit moves its compensation: the states are the compensation's, named.
      (e) => `<tr data-audit data-wallet="${esc(e.wallet)}"><td>${iso(e.at)}</td><td>${esc(e.wallet)}</td><td>${esc(e.user)}</td><td>${esc(e.action)}</td>${withTransaction ? `<td>${txLink(e.transactionId, e.wallet)}</td>` : ''}<td>${e.targetId !== '' && e.targetId !== e.transactionId ? `compensation ${txLink(e.targetId, e.wallet)}: ` : ''}${esc(e.stateBefore)} → ${esc(e.stateAfter)}</td><td>${esc(e.result)}</td><td>${esc(e.note)}</td></tr>`,
    )
    .join('');
}

function auditTable(entries: readonly WalletAuditEntry[], withTransaction: boolean): string {
  return `<table><thead><tr><th scope="col">When</th><th scope="col">Wallet</th><th scope="col">Who</th><th scope="col">Action</th>${withTransaction ? '<th scope="col">Transaction</th>' : ''}<th scope="col">State</th><th scope="col">Result</th><th scope="col">Note</th></tr></thead><tbody>${auditRows(entries, withTransaction)}</tbody></table>`;
}

function actionForm(id: string, wallet: string, action: string, title: string, button: string, extra = '', tone = ''): string {
  const field = `note-${action}`;
  return `<form method="post" action="/admin/tx/${action}?${esc(txQuery(id, wallet))}" aria-labelledby="${field}-title"><strong id="${field}-title">${esc(title)}</strong>${extra}
<label for="${field}">Note (required)</label><textarea id="${field}" name="note" required minlength="3" maxlength="500" rows="2"></textarea>
<button type="submit" class="${tone}">${esc(button)}</button></form>`;
}

export function noticeOf(result: ActionResult | undefined): string {
  if (result === undefined) return '';
  if (result.kind === 'not_found') return '<p class="notice bad" role="status">No such transaction.</p>';
  if (result.kind === 'not_dead') return `<p class="notice bad" role="status">Nothing done: ${esc(result.targetId)} is ${esc(result.state ?? 'gone')}, not dead.</p>`;
  if (result.kind === 'not_a_bet') return `<p class="notice bad" role="status">Nothing done: ${esc(result.targetId)} is not a bet's rollback, so "the bet was never applied" says nothing of it.</p>`;
  const said = result.wallet ? ` The wallet said: ${esc(result.wallet.outcome)}${result.wallet.walletCode === null ? '' : ` ${result.wallet.walletCode}`} (${esc(result.wallet.message)}).` : '';
  const released = result.terminateReleased ? ' The token\'s terminate was released and is driven again.' : '';
  const reopened = result.compensationId === undefined ? '' : ` The bet is rolled back anew: compensation ${esc(result.compensationId)}.`;
  return `<p class="notice" role="status" data-notice>${esc(result.action)}: ${esc(result.targetId)} ${esc(result.stateBefore)} → ${esc(result.stateAfter)}.${said}${released}${reopened}</p>`;
}

/** A round as a page shows it: its rows from Redis and the ledger, and what the ledger said. */
export interface RoundRows {
  readonly rows: readonly TableRow[];
  readonly ledger: LedgerRead<unknown>;
}

/** The first rows of a transaction's page, alike whether Redis or the ledger holds it. */
function headRows(
  wallet: string,
  t: { state: string; resolution?: string | null; kind: string; amount: string; currency: string; playerId: string; siteId: string },
): [string, string][] {
  return [
    ['Wallet', esc(wallet)],
    ['State', `${stateTag(t.state)}${t.resolution ? ` resolution: <strong>${esc(t.resolution)}</strong>` : ''}`],
    ['Kind', esc(t.kind)],
    ['Amount', `${esc(t.amount)} ${esc(t.currency)}`],
    ['Player / site', `${playerLink(t.playerId, t.siteId, wallet)} / ${esc(t.siteId)}`],
  ];
}

export function detailPage(d: TransactionDetail, round: RoundRows, adminJson: Record<string, unknown>, notice: string, now: number): string {
  const r = d.record;
  const rows: [string, string][] = [
    ...headRows(d.wallet, r),
    ['Round', `${esc(r.roundId)} (wallet round ${esc(r.walletRoundId)})${r.roundClosed ? ', closes it' : ''}`],
    ['Bet', r.referenceTransactionId ? txLink(r.referenceTransactionId, d.wallet) : '—'],
    ['Attempts', `${r.attempts} (history ${esc(r.history.join(', ') || '—')}; last code ${esc(r.lastWalletCode ?? '—')})`],
    ['Note', esc(r.note ?? '—')],
    ['Error', esc(r.error ? `${r.error.code}: ${r.error.message}` : '—')],
    ['Created / updated', `${iso(r.createdAt)} / ${iso(r.updatedAt)} (${age(r.createdAt, now)} ago)`],
  ];
  const comp = d.compensation
    ? `<dl><dt>Compensation</dt><dd>${txLink(d.compensation.transactionId, d.wallet)} ${stateTag(d.compensation.state)} — ${d.compensation.attempts} attempts, note ${esc(d.compensation.note ?? '—')}</dd></dl>`
    : r.compensationId
      ? `<p>Compensation ${esc(r.compensationId)} (expired after the retention).</p>`
      : '<p class="muted">No compensation.</p>';
  const s = d.session;
  const session = s
    ? `<dl><dt>Session</dt><dd><code>${esc(s.sessionId)}</code> ${esc(s.state)}</dd><dt>Game</dt><dd>${esc(s.gameId)}</dd><dt>Balance</dt><dd>${esc(s.balance)} ${esc(s.currency)}</dd><dt>Launched</dt><dd>${iso(s.createdAt)}</dd><dt>Token ref</dt><dd><code>${esc(s.tokenRef)}</code></dd></dl>`
    : `<p class="muted">Session <code>${esc(r.sessionId)}</code> expired.</p>`;
  const dead = r.state === 'dead' || (r.kind === 'debit' && d.compensation?.state === 'dead');
  const actions = `<div class="actions">
${actionForm(r.transactionId, d.wallet, 'recheck', 'Re-check now', 'Ask the wallet (status)')}
${dead ? actionForm(r.transactionId, d.wallet, 'redrive', 'Redrive', 'Redrive: send it again') : ''}
${
  dead
    ? actionForm(
        r.transactionId,
        d.wallet,
        'resolve',
        'Resolve manually (no wallet call)',
        'Resolve',
        r.kind === 'debit' || (r.kind === 'rollback' && r.referenceTransactionId !== null)
          ? // A rollback that stands for a bet: what the operator states is about the rollback, or about the bet itself.
            `<fieldset><legend>What did the wallet show? (about the bet's rollback ${esc(r.kind === 'debit' ? (r.compensationId ?? '') : r.transactionId)})</legend>
<label style="flex-direction:row;color:inherit"><input type="radio" name="outcome" value="applied" required> The stake is back with the player (the rollback, or a refund made at the wallet) → bet compensated</label>
<label style="flex-direction:row;color:inherit"><input type="radio" name="outcome" value="not_applied"> This rollback did not happen → the bet is rolled back anew, with a new rollback id (a wallet that never had the bet says so, status confirms it, and the bet is watched)</label>
<label style="flex-direction:row;color:inherit"><input type="radio" name="outcome" value="bet_not_applied"> The bet itself was never applied at the wallet (nothing to give back) → bet failed; an engine refund standing in for its rollback succeeded, nothing reversed</label></fieldset>`
          : `<fieldset><legend>What did the wallet show?</legend>
<label style="flex-direction:row;color:inherit"><input type="radio" name="outcome" value="applied" required> Applied at the wallet → succeeded</label>
<label style="flex-direction:row;color:inherit"><input type="radio" name="outcome" value="not_applied"> Not applied, and it will not be</label></fieldset>`,
        'danger',
      )
    : ''
}</div>`;
  const body = `${notice}<dl>${rows.map(([k, v]) => `<dt>${esc(k)}</dt><dd>${v}</dd>`).join('')}</dl>
<h2>Actions</h2>${actions}
<h2>Wallet attempts</h2><table><thead><tr><th scope="col">#</th><th scope="col">When</th><th scope="col">Code</th><th scope="col">Latency</th><th scope="col">Wallet request id</th></tr></thead><tbody>${attemptRows(d.attempts)}</tbody></table>
<h2>Compensation</h2>${comp}
<h2>Round ${roundLink(r.roundId, d.wallet, r.playerId, r.siteId)}</h2>${ledgerNote(round.ledger, round.rows)}${recordTable(round.rows, now, 'Every transaction of the round the player index still holds, and the ledger\'s')}
<h2>Session</h2>${session}
<h2>Audit</h2>${auditTable(d.audit, false)}
<details><summary>JSON (GET /admin/api/transactions/${esc(r.transactionId)}?wallet=${esc(d.wallet)})</summary><pre>${esc(JSON.stringify(adminJson, null, 2))}</pre></details>`;
  return layout(`Transaction ${r.transactionId}`, '/admin/tx', body);
}

/** An id held in several wallets, looked up without `wallet`: which one? */
export function ambiguousPage(transactionId: string, wallets: readonly string[]): string {
  const links = wallets.map((w) => `<li>${txLink(transactionId, w)} in wallet ${esc(w)}</li>`).join('');
  return layout(`Transaction ${transactionId}`, '/admin/tx', `<p class="notice bad" role="status">This id names a transaction in each of these wallets; open one.</p><ul>${links}</ul>`);
}

/** A transaction Redis no longer holds, as the ledger keeps it: every change, and no actions. */
export function ledgerDetailPage(held: LedgerHeld, round: RoundRows, adminJson: Record<string, unknown>, notice: string, now: number): string {
  const [newest, ...earlier] = held.records;
  const t = newest!.transaction;
  const rows: [string, string][] = [
    ...headRows(held.wallet, t),
    ['Round', `${roundLink(t.roundId, held.wallet, t.playerId, t.siteId)} (wallet round ${esc(t.walletRoundId)})`],
    ['Bet', t.referenceId ? txLink(t.referenceId, held.wallet) : '—'],
    ['Compensation', t.compensationId ? txLink(t.compensationId, held.wallet) : '—'],
    ['Attempts', `${t.attempts} (last code ${esc(t.lastWalletCode ?? '—')})`],
    ['Engine request id', `<code>${esc(t.engineRequestId ?? '—')}</code>`],
    ['Note', esc(t.note ?? '—')],
    ['Created / last change', `${iso(t.createdAt)} / ${iso(t.changedAt)} (${age(t.createdAt, now)} ago)`],
  ];
  const earlierNote =
    earlier.length === 0
      ? ''
      : `<p class="notice bad" role="status" data-late-repeat>The engine used this id again after Redis had forgotten it (a late repeat): ${earlier.length} earlier record${earlier.length === 1 ? '' : 's'} below.</p>`;
  const body = `${notice}<p class="notice" role="status" data-source="ledger">From the ledger (PostgreSQL): Redis no longer holds this record.</p>${earlierNote}
<dl>${rows.map(([k, v]) => `<dt>${esc(k)}</dt><dd>${v}</dd>`).join('')}</dl>
<h2>Actions</h2><p class="muted" data-no-actions>None: Redis no longer holds this record, so it cannot be re-checked, redriven or resolved from here.</p>
<h2>Changes</h2>${changeTable(newest!.changes)}
<h2>Audit</h2>${auditTable(held.audit.map((e) => ({ ...e, wallet: held.wallet })), false)}
${earlier.map((r) => `<h2>Earlier record of this id, created ${iso(r.transaction.createdAt)}</h2>${changeTable(r.changes)}`).join('\n')}
<h2>Round ${esc(t.roundId)}</h2>${ledgerNote(round.ledger, round.rows)}${recordTable(round.rows, now, 'Every transaction of the round Redis and the ledger hold')}
<details><summary>JSON (GET /admin/api/transactions/${esc(t.transactionId)}?wallet=${esc(held.wallet)})</summary><pre>${esc(JSON.stringify(adminJson, null, 2))}</pre></details>`;
  return layout(`Transaction ${t.transactionId}`, '/admin/tx', body);
}

function changeTable(changes: readonly LedgerTransaction[]): string {
  const rows = changes
    .map(
      (c) => `<tr data-change="${c.changeNo}"><td class="num">${c.changeNo}</td><td>${iso(c.changedAt)}</td><td>${stateTag(c.state)}${c.resolution ? ` <span class="muted">(${esc(c.resolution)})</span>` : ''}</td><td class="num">${c.attempts}</td><td>${esc(c.lastWalletCode ?? '—')}</td><td><code>${esc(c.walletRequestId ?? '—')}</code></td><td><code>${esc(c.engineRequestId ?? '—')}</code></td><td>${esc(c.note ?? '')}</td></tr>`,
    )
    .join('');
  return `<table><thead><tr><th scope="col">#</th><th scope="col">When</th><th scope="col">State</th><th scope="col">Attempts</th><th scope="col">Last code</th><th scope="col">Wallet request id</th><th scope="col">Engine request id</th><th scope="col">Note</th></tr></thead><tbody>${rows}</tbody></table>`;
}

/** A transaction Redis does not hold, while the ledger did not answer. */
export function ledgerDownPage(transactionId: string): string {
  return layout(`Transaction ${transactionId}`, '/admin/tx', '<p class="notice bad" role="status" data-ledger="unavailable">Redis does not hold this transaction, and the ledger (PostgreSQL) did not answer: try again shortly.</p>');
}

export function roundPage(wallet: string, roundId: string, round: RoundRows, now: number): string {
  const body = round.rows.length === 0 && round.ledger.kind !== 'unavailable' ? '<p class="muted">Neither Redis nor the ledger holds a transaction of this round.</p>' : recordTable(round.rows, now, 'Every transaction of the round, oldest first');
  return layout(`Round ${roundId} · wallet ${wallet}`, '/admin/round', `${ledgerNote(round.ledger, round.rows)}${body}`);
}

export function playerPage(playerId: string, siteId: string, wallet: string | undefined, rounds: readonly { wallet: string; roundId: string; rows: readonly TableRow[] }[], ledger: LedgerRead<unknown>, now: number): string {
  const all = rounds.flatMap((r) => r.rows);
  const withSource = all.some((r) => r.source === 'ledger');
  const body =
    rounds.length === 0
      ? '<p class="muted">No transactions held for this player.</p>'
      : rounds.map((r) => `<h2>Round ${roundLink(r.roundId, r.wallet, playerId, siteId)} · wallet ${esc(r.wallet)}</h2>${recordTable(r.rows, now, '', withSource)}`).join('');
  // A player id is the casino's own: the same id at two wallets is two players, each shown under its wallet.
  return layout(`Player ${playerId} / site ${siteId}${wallet === undefined ? ' (every wallet)' : ` at wallet ${wallet}`}: recent rounds`, '/admin/players', `${ledgerNote(ledger, all)}${body}`);
}

/** Transaction ids the engine used again after Redis had forgotten their first record. */
export function lateRepeatsPage(read: LedgerRead<LateRepeat[]>, values: FilterValues, walletIds: readonly string[]): string {
  const filter = `<form class="filters" method="get" action="/admin/late-repeats">${walletSelect(values, walletIds)}<button type="submit">Filter</button></form>`;
  const intro = '<p>Transaction ids an engine used again after Redis had forgotten the first record (past its retention): the gateway could not answer the repeat from the first record, so it made a second. Compare the two records of each id; both are kept in the ledger.</p>';
  if (read.kind === 'none') return layout('Late repeats', '/admin/late-repeats', `${intro}<p class="notice bad" role="status" data-ledger="none">No ledger is kept (DATABASE_URL is unset): late repeats are not flagged.</p>`);
  if (read.kind === 'unavailable') return layout('Late repeats', '/admin/late-repeats', `${intro}${filter}<p class="notice bad" role="status" data-ledger="unavailable">The ledger (PostgreSQL) did not answer: try again shortly.</p>`);
  const rows =
    read.value.length === 0
      ? '<tr><td colspan="5" class="muted">None.</td></tr>'
      : read.value
          .map((r) => `<tr data-id="${esc(r.transactionId)}" data-wallet="${esc(r.wallet)}"><td>${esc(r.wallet)}</td><td>${txLink(r.transactionId, r.wallet)}</td><td>${iso(r.createdAt)}</td><td>${iso(r.earlierCreatedAt)}</td><td>${iso(r.flaggedAt)}</td></tr>`)
          .join('');
  return layout(
    'Late repeats',
    '/admin/late-repeats',
    `${intro}${filter}<p class="muted">From the ledger (PostgreSQL), newest first.</p><table><thead><tr><th scope="col">Wallet</th><th scope="col">Transaction</th><th scope="col">Repeated (new record)</th><th scope="col">First record</th><th scope="col">Flagged</th></tr></thead><tbody>${rows}</tbody></table>`,
  );
}

export function auditPage(entries: readonly WalletAuditEntry[], values: FilterValues, walletIds: readonly string[], next: string | undefined): string {
  const wallet = values.wallet ? `&wallet=${encodeURIComponent(values.wallet)}` : '';
  const more = next ? `<p><a href="/admin/audit?before=${encodeURIComponent(next)}${esc(wallet)}">Older entries</a></p>` : '';
  const filter = `<form class="filters" method="get" action="/admin/audit">${walletSelect(values, walletIds)}<button type="submit">Filter</button></form>`;
  return layout('Audit trail', '/admin/audit', `${filter}${auditTable(entries, true)}${more}`);
}

export function exportPage(values: FilterValues, walletIds: readonly string[]): string {
  const input = (name: string, label: string, type = 'text', required = false) =>
    `<label>${esc(label)}<input type="${type}" name="${name}" value="${esc(values[name] ?? '')}"${required ? ' required' : ''}></label>`;
  return layout(
    'Reconciliation export',
    '/admin/export',
    `<p>Every transaction created in the window, as the gateway holds it (amounts as exact decimal text), streamed. Diff it against the wallet's ledger.</p>
<form class="filters" method="get" action="/admin/api/export">${walletSelect(values, walletIds)}${input('from', 'From (UTC)', 'datetime-local', true)}${input('to', 'To (UTC)', 'datetime-local', true)}${input('player_id', 'Player')}${input('site_id', 'Site')}
<label>Format<select name="format"><option>csv</option><option>json</option></select></label>
<label style="flex-direction:row;align-items:center;gap:.4rem"><input type="checkbox" name="status" value="1"> Fresh wallet status per record (rate-limited)</label>
<button type="submit">Download</button></form>`,
  );
}
