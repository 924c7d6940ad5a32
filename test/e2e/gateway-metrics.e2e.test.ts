import { randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { freePort } from '../../src/lib/free-port';
import type { Child } from '../../src/lib/child';
import { waitFor } from '../../src/lib/wait-for';
import { spawnEntry } from '../support/processes';
import { startHarness, type Harness } from '../support/worker-harness';

/**
 * `npm start` with GATEWAY_PROCESSES=2 (src/main/gateway.ts as a real process tree): whichever
 * process a scrape lands on, /metrics shows the sum over both, so counters never go backwards.
 */
const ENGINE_KEY = 'e2e-metrics-engine-key';
let h: Harness;
let gateway: Child | undefined;

beforeAll(async () => {
  h = await startHarness({ label: 'e2emetrics' });
});

afterAll(async () => {
  await gateway?.kill('SIGKILL');
  await h.close();
});

/** A GET on a connection of its own, so node:cluster hands each request to the next process. */
function get(base: string, path: string, headers: Record<string, string> = {}): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${base}${path}`, { headers, agent: false }, (res) => {
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
    req.end();
  });
}

const sample = (text: string, series: string): number => Number(new RegExp(`^${series.replace(/[{}"]/g, '\\$&')} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);

/** The pids of the gateway processes that logged a completed /launch. */
function launchPids(output: string): Set<number> {
  const pids = new Set<number>();
  for (const line of output.split('\n')) {
    if (line.includes('"msg":"request completed"') && line.includes('"path":"/launch"')) pids.add((JSON.parse(line) as { pid: number }).pid);
  }
  return pids;
}

describe('/metrics with GATEWAY_PROCESSES=2', () => {
  it('is the sum over both processes, on whichever one the scrape lands', async () => {
    const port = await freePort();
    gateway = await spawnEntry('src/main/gateway.ts', { ...h.env, PORT: String(port), ENGINE_API_KEY: ENGINE_KEY, GATEWAY_PROCESSES: '2', LOG_LEVEL: 'info' });
    const child = gateway;
    await waitFor('two gateway processes listening', () => child.output().split('"msg":"gateway listening"').length - 1 === 2);
    const base = `http://127.0.0.1:${port}`;

    // Launches (one wallet authenticate each) on fresh connections until both processes served some.
    let launches = 0;
    while (launchPids(child.output()).size < 2 || launches < 4) {
      if (launches >= 40) throw new Error(`both processes did not serve a launch:\n${child.output().slice(-2000)}`);
      const res = await get(base, `/launch?token=${randomUUID()}&player_id=7${launches}&site_id=7&currency=EUR&game_id=slot-1`, { accept: 'application/json' });
      expect(res.status).toBe(200);
      launches += 1;
      // The request line is flushed within 250 ms: wait for it so the count of pids is current.
      await waitFor('the launch logged', () => child.output().split('"path":"/launch"').length - 1 >= launches);
    }

    const authenticates = 'wallet_calls_total{operation="authenticate",outcome="ok",code="1",wallet="default"}';
    const launchRequests = 'engine_requests_total{route="/launch",status="200"}';
    let previous = 0;
    // Several scrapes on fresh connections: they land on both processes, each shows the sum.
    for (let i = 0; i < 4; i += 1) {
      const scrape = await get(base, '/metrics');
      expect(scrape.status).toBe(200);
      expect(sample(scrape.text, authenticates)).toBe(launches);
      expect(sample(scrape.text, launchRequests)).toBe(launches);
      // Scrapes count too (route /metrics): the sum only grows.
      const scrapes = sample(scrape.text, 'engine_requests_total{route="/metrics",status="200"}');
      expect(Number.isNaN(scrapes) ? 0 : scrapes).toBeGreaterThanOrEqual(previous);
      previous = Number.isNaN(scrapes) ? 0 : scrapes;
      // The Redis-read series appear once, not once per process.
      expect(scrape.text.split('# TYPE queue_jobs gauge').length - 1).toBe(1);
      expect(scrape.text.match(/^queue_jobs\{queue="wallet-retry",state="waiting",wallet="default"\} \d+$/gm)).toHaveLength(1);
    }
  }, 90_000);
});
