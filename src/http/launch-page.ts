import type { EngineError } from '../engine';

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c);
}

/** What a player's browser shows when a launch fails: no token, no internals, the id for support. */
export function launchErrorPage(error: EngineError, requestId: string): string {
  const title = error.httpStatus >= 500 ? 'The game cannot start right now' : 'The game could not be started';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${title}</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body style="font-family:sans-serif;max-width:40em;margin:3em auto;padding:0 1em">
<h1>${title}</h1>
<p>${escapeHtml(error.message)}</p>
<p><small>Error ${escapeHtml(error.code)}${error.walletCode === null ? '' : ` (wallet code ${error.walletCode})`} · request ${escapeHtml(requestId)}</small></p>
</body></html>
`;
}
