/**
 * The demo game's one page: plain HTML, one inline style and one inline script (both carrying the
 * CSP nonce), no build step. It knows its session id (from its own URL) and the /demo-game/api
 * routes, nothing else: no engine key, no wallet token.
 */
export interface DemoPageOptions {
  readonly nonce: string;
  readonly stakes: readonly string[];
  /** How often the "fails win credits" switch makes the wallet refuse each win. */
  readonly creditFailures: number;
}

export function demoGamePage({ nonce, stakes: stakeList, creditFailures }: DemoPageOptions): string {
  const stakes = stakeList.map((s) => `<option value="${s}"${s === '1.00' ? ' selected' : ''}>${s}</option>`).join('');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Demo slot · wallet gateway</title>
<style nonce="${nonce}">
  :root { color-scheme: dark; --bg: #14161c; --card: #1f232c; --line: #333947; --text: #e8eaf0; --dim: #9aa3b5;
          --accent: #f5b83d; --ok: #4cc38a; --bad: #ef6461; --wait: #e9c46a; }
  * { box-sizing: border-box; }
  body { margin: 0; min-height: 100vh; background: var(--bg); color: var(--text);
         font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
         display: flex; justify-content: center; padding: 32px 16px; }
  main { width: 100%; max-width: 560px; }
  h1 { margin: 0; font-size: 24px; letter-spacing: .5px; }
  .sub { color: var(--dim); margin: 2px 0 20px; font-size: 13px; }
  .card { background: var(--card); border: 1px solid var(--line); border-radius: 14px; padding: 20px; margin-bottom: 16px; }
  .balance { display: flex; align-items: baseline; justify-content: space-between; }
  .balance span { color: var(--dim); font-size: 13px; text-transform: uppercase; letter-spacing: 1px; }
  #balance { font-size: 34px; font-weight: 700; font-variant-numeric: tabular-nums; }
  .reels { display: flex; gap: 12px; justify-content: center; margin: 18px 0; }
  .reel { width: 96px; height: 96px; border-radius: 12px; background: #0f1116; border: 2px solid var(--line);
          display: flex; align-items: center; justify-content: center; font-size: 30px; font-weight: 800; color: var(--accent); }
  .reels.win .reel { border-color: var(--ok); }
  .controls { display: flex; gap: 12px; align-items: center; }
  select, button { font: inherit; border-radius: 10px; border: 1px solid var(--line); background: #0f1116; color: var(--text); padding: 10px 12px; }
  button#spin { flex: 1; background: var(--accent); color: #1b1400; border: 0; font-weight: 800; font-size: 18px; letter-spacing: 1px; cursor: pointer; }
  button#spin:disabled { opacity: .55; cursor: wait; }
  .switch { display: flex; gap: 10px; align-items: center; margin-top: 16px; color: var(--dim); font-size: 13px; cursor: pointer; }
  .switch input { width: 38px; height: 20px; accent-color: var(--bad); cursor: pointer; }
  #status { min-height: 22px; margin-top: 12px; font-size: 14px; }
  #status.error { color: var(--bad); }
  h2 { font-size: 14px; text-transform: uppercase; letter-spacing: 1px; color: var(--dim); margin: 0 0 10px; }
  ol { list-style: none; margin: 0; padding: 0; max-height: 320px; overflow: auto; }
  li { display: flex; justify-content: space-between; gap: 8px; padding: 8px 0; border-top: 1px solid var(--line); font-variant-numeric: tabular-nums; }
  li:first-child { border-top: 0; }
  .tag { border-radius: 999px; padding: 1px 9px; font-size: 12px; font-weight: 700; white-space: nowrap; }
  .tag.succeeded { background: rgba(76,195,138,.15); color: var(--ok); }
  .tag.pending { background: rgba(233,196,106,.15); color: var(--wait); }
  .tag.failed, .tag.dead { background: rgba(239,100,97,.15); color: var(--bad); }
  .dim { color: var(--dim); }
  .empty { color: var(--dim); font-size: 13px; }
</style>
</head>
<body>
<main>
  <h1>Demo slot</h1>
  <p class="sub">Every spin is a bet and a win through the wallet gateway, against the bundled wallet simulator.</p>
  <section class="card">
    <div class="balance"><span>Balance</span><output id="balance" data-testid="balance">…</output></div>
    <div class="reels" id="reels"><div class="reel">?</div><div class="reel">?</div><div class="reel">?</div></div>
    <div class="controls">
      <label class="dim" for="stake">Stake</label>
      <select id="stake">${stakes}</select>
      <button id="spin" type="button" disabled>SPIN</button>
    </div>
    <label class="switch"><input id="fail-credits" type="checkbox" data-testid="fail-credits">
      Wallet fails win credits (code 12, ${creditFailures} times, then takes them): watch a win go pending and settle</label>
    <div id="status" role="status" aria-live="polite"></div>
  </section>
  <section class="card">
    <h2>History</h2>
    <ol id="history" data-testid="history"><li class="empty">No spins yet.</li></ol>
  </section>
</main>
<script nonce="${nonce}">
'use strict';
const session = new URLSearchParams(location.search).get('session');
const $ = (id) => document.getElementById(id);
let currency = '';

async function api(method, path, body) {
  const res = await fetch('/demo-game/api' + path, {
    method,
    headers: body ? { 'content-type': 'application/json' } : {},
    body: body ? JSON.stringify(body) : undefined,
  });
  const data = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error(data.error ? data.error.code + ': ' + data.error.message : 'HTTP ' + res.status);
  return data;
}

function say(text, isError) {
  $('status').textContent = text;
  $('status').className = isError ? 'error' : '';
}

function showBalance(balance) {
  $('balance').textContent = balance + ' ' + currency;
}

async function refreshBalance() {
  const b = await api('POST', '/balance', { session });
  currency = b.currency;
  showBalance(b.balance);
}

function tag(state, text) {
  const t = document.createElement('span');
  t.className = 'tag ' + state;
  t.textContent = text;
  return t;
}

const WORDS = { succeeded: 'credited', pending: 'pending', failed: 'failed', dead: 'dead: an operator must act' };

function addHistory(spin) {
  const list = $('history');
  if (list.querySelector('.empty')) list.textContent = '';
  const li = document.createElement('li');
  li.dataset.outcome = spin.outcome;
  li.dataset.winState = spin.win.state;
  li.dataset.winAmount = spin.win.amount;
  const what = document.createElement('span');
  what.textContent = 'bet ' + spin.bet.amount + (spin.outcome === 'win' ? ' · win ' + spin.win.amount : ' · no win');
  const state = spin.outcome === 'win' || spin.win.state !== 'succeeded'
    ? tag(spin.win.state, WORDS[spin.win.state] || spin.win.state)
    : tag('succeeded', 'settled');
  li.append(what, state);
  list.prepend(li);
  return li;
}

/** A pending win: ask the gateway's record until it settles, then show the new balance. */
async function follow(li, transactionId) {
  const deadline = Date.now() + 120000;
  while (Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 300));
    const tx = await api('GET', '/transactions/' + encodeURIComponent(transactionId) + '?session=' + encodeURIComponent(session));
    if (tx.state === 'pending') continue;
    li.dataset.winState = tx.state;
    li.lastChild.replaceWith(tag(tx.state, 'pending → ' + (WORDS[tx.state] || tx.state) + ' after ' + tx.attempts + ' tries'));
    await refreshBalance();
    say('The win of ' + li.dataset.winAmount + ' ' + currency + ' settled in the background.');
    return;
  }
}

async function spin() {
  $('spin').disabled = true;
  try {
    const failCredit = $('fail-credits').checked;
    const s = await api('POST', '/spin', { session, stake: $('stake').value, fail_credit: failCredit });
    const reels = $('reels');
    reels.className = 'reels' + (s.outcome === 'win' ? ' win' : '');
    s.reels.forEach((sym, i) => { reels.children[i].textContent = sym; });
    showBalance(s.balance);
    const li = addHistory(s);
    if (s.win.state === 'pending') {
      say('The wallet did not take the win yet: it is queued and retried in the background.');
      follow(li, s.win.transaction_id).catch((e) => say(e.message, true));
    } else if (s.win.state === 'failed') {
      say('Win refused: ' + s.win.error.code, true);
    } else {
      say(s.outcome === 'win' ? 'Win! ' + s.win.amount + ' ' + currency : 'No win this time.');
    }
  } catch (e) {
    say(e.message, true);
  } finally {
    $('spin').disabled = false;
  }
}

if (!session) {
  say('No session: open the launch URL that npm run dev printed.', true);
} else {
  $('spin').addEventListener('click', spin);
  refreshBalance().then(() => { $('spin').disabled = false; }, (e) => say(e.message, true));
}
</script>
</body>
</html>
`;
}
