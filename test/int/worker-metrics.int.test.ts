import { Code } from '../../src/wallet/codes';
import type { RunningWorker } from '../../workers/worker';
import { startHarness, newId, type Harness } from '../support/worker-harness';
import { waitFor } from '../../src/lib/wait-for';

let h: Harness;

beforeAll(async () => {
  h = await startHarness({ label: 'wmetrics' });
});

afterAll(async () => {
  await h.close();
});

describe('the worker metrics port (WORKER_METRICS_PORT)', () => {
  describe('when unset', () => {
    let worker: RunningWorker;

    beforeAll(async () => {
      worker = await h.startWorker();
    });

    afterAll(async () => {
      await worker.close();
    });

    it('is not opened', () => {
      expect(worker.metricsUrl).toBeUndefined();
    });
  });

  describe('when set', () => {
    let worker: RunningWorker;
    let url: string;

    beforeAll(async () => {
      worker = await h.startWorker({ WORKER_METRICS_PORT: '0' });
      url = worker.metricsUrl!;
    });

    it('answers /healthz and 404 elsewhere, every answer with X-Content-Type-Options nosniff', async () => {
      const health = await fetch(`${url}/healthz`);
      expect(health.status).toBe(200);
      expect(await health.json()).toEqual({ status: 'ok' });
      const nope = await fetch(`${url}/nope`);
      expect(nope.status).toBe(404);
      const post = await fetch(`${url}/metrics`, { method: 'POST' });
      expect(post.status).toBe(405);
      for (const res of [health, nope, post]) expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    });

    it('serves wallet_retries_total once a credit was retried', async () => {
      const player = await h.newPlayer();
      const bet = await h.bet(player);
      const id = newId('credit');
      // The inline attempt and the worker's first retry fail; the worker's second retry takes it.
      h.sim.faults.failNext('credit', 2, Code.InternalServiceError, { transactionId: id });
      expect((await h.settleInline(player, 'credit', bet, { id })).next).toBe('retry');
      await waitFor(`${id} settled`, async () => (await h.store.get(id))?.state === 'succeeded');

      const res = await fetch(`${url}/metrics`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
      const text = await res.text();
      // The worker counts the retry it scheduled and the two calls it made (the inline one is not its own).
      expect(text).toMatch(/^wallet_retries_total\{kind="credit",code="12",wallet="default"\} 1$/m);
      expect(text).toMatch(/^wallet_calls_total\{operation="credit",outcome="rejected",code="12",wallet="default"\} 1$/m);
      expect(text).toMatch(/^wallet_calls_total\{operation="credit",outcome="ok",code="1",wallet="default"\} 1$/m);
      expect(text).toMatch(/^process_cpu_seconds_total /m);
    });

    it('closes with the worker', async () => {
      await worker.close();
      await expect(fetch(`${url}/healthz`)).rejects.toThrow();
    });
  });
});
