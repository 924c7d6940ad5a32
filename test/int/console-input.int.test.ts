import { connect } from 'node:net';
import { startHarness, type Harness } from '../support/gateway-harness';
import { rawRequest } from '../support/raw-http';
import { basicAuth } from '../support/wired-gateway';

/**
 * Operator query input that answered 5xx, or a 4xx not naming the field (found by fuzzing the
 * admin routes): each now gets a 4xx VALIDATION_FAILED naming the field, no error log line, and a
 * connection that stays usable.
 */
const USER = 'ops';
const PASSWORD = 'ops-password-123';
let h: Harness;

beforeAll(async () => {
  h = await startHarness({ label: 'console-input', env: { ADMIN_USER: USER, ADMIN_PASSWORD: PASSWORD } });
});

afterAll(async () => {
  await h.close();
});

const admin = (): Record<string, string> => ({ authorization: basicAuth(USER, PASSWORD) });
const errorLines = (from: number): string[] => h.logs.slice(from).filter((l) => l.includes('"level":50'));
const fieldsOf = (text: string): string[] => ((JSON.parse(text) as { error: { fields?: { field: string }[] } }).error.fields ?? []).map((f) => f.field).sort();

describe('audit cursor that is not digits-dash-digits (src/http/console.ts auditCursor)', () => {
  it.each([
    ['/admin/api/audit?before=abc'],
    ['/admin/api/audit?before=1.5-0'],
    ['/admin/api/audit?before=a-1'],
    ['/admin/audit?before=1e3-0'],
  ])('%s is 400 naming before, not 500', async (path) => {
    const logsBefore = h.logs.length;
    const res = await rawRequest(h.url, 'GET', path, admin());
    expect(res.status).toBe(400);
    expect(fieldsOf(res.text)).toEqual(['before']);
    expect(errorLines(logsBefore)).toEqual([]);
  });
});

describe("a player's rounds with a bad player id (src/http/console.ts player routes)", () => {
  it('names player_id (not body) when only the path is bad', async () => {
    const res = await rawRequest(h.url, 'GET', '/admin/api/players/abc/rounds?site_id=7', admin());
    expect(res.status).toBe(400);
    expect(fieldsOf(res.text)).toEqual(['player_id']);
  });

  it.each([['/admin/api/players/abc/rounds'], ['/admin/players/abc']])(
    '%s with no site_id names both fields in one answer, and the connection stays usable',
    async (path) => {
      const res = await rawRequest(h.url, 'GET', path, admin());
      expect(res.status).toBe(400);
      expect(fieldsOf(res.text)).toEqual(['player_id', 'site_id']);
      // A second sendError throws ERR_HTTP_HEADERS_SENT; Express's final handler then destroys the
      // socket (and, outside NODE_ENV=test, prints the stack to stderr, past the logger).
      expect(await secondAnswerOnSameSocket(path)).toEqual(['400', '200']);
    },
  );
});

/** Statuses answered on one keep-alive connection to `path` and then /healthz, sent together. */
function secondAnswerOnSameSocket(path: string): Promise<string[]> {
  const url = new URL(h.url);
  return new Promise((resolve) => {
    const socket = connect(Number(url.port), url.hostname);
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('utf8')));
    socket.on('error', () => undefined);
    // The second asks to close: the server ends the connection after it (or after the first, if it
    // destroys the socket there), and 'close' ends the wait.
    socket.on('close', () => resolve([...received.matchAll(/HTTP\/1\.1 (\d+)/g)].map((m) => m[1]!)));
    socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: ${admin().authorization}\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
  });
}

describe('Bull Board paging past what Redis takes (mounted at /admin/queues)', () => {
  it.each([
    ['page=100000000000000000', 'page'],
    ['page=99999999999999999999', 'page'],
    ['page=2&jobsPerPage=9223372036854775807', 'jobsPerPage'],
  ])(
    '?activeQueue=wallet-retry&status=completed&%s is 400 naming %s, not 500',
    async (extra, field) => {
      const logsBefore = h.logs.length;
      const res = await rawRequest(h.url, 'GET', `/admin/queues/api/queues?activeQueue=wallet-retry&status=completed&${extra}`, admin());
      expect(res.status).toBe(400);
      expect(fieldsOf(res.text)).toEqual([field]);
      expect(errorLines(logsBefore)).toEqual([]);
    },
  );

  it('pages within range as before', async () => {
    const res = await rawRequest(h.url, 'GET', '/admin/queues/api/queues?activeQueue=wallet-retry&status=completed&page=2&jobsPerPage=50', admin());
    expect(res.status).toBe(200);
  });
});
