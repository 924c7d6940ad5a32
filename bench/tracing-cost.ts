import { loadGatewayConfig } from '../src/config/env';
import { Child, baseEnv } from '../src/lib/child';
import { freePort } from '../src/lib/free-port';
import { ATTR, SpanKind, carrierOf, contextOf, inSpan, tracingOn } from '../src/lib/tracing';
import { waitFor } from '../src/lib/wait-for';
import { startTracing } from '../src/observability/tracing';

/**
 * `npx tsx bench/tracing-cost.ts [requests] [concurrency]`: the CPU one traced bet adds in the
 * gateway process, apart from the box's drift: the spans a bet makes (the engine request continuing
 * a traceparent, the Redis claim, the wallet call with its carrier, the Redis settle), with
 * AsyncLocalStorage context across the same awaits, the batch processor and the OTLP http/protobuf
 * export to a sink process (bench/otlp-sink.ts). The same shape of work runs first with tracing off,
 * then on; the difference per request is tracing's cost. Work the gateway does without tracing
 * (Redis, the wallet, the log line) is not in either figure.
 */
const REQUESTS = Number(process.argv[2] ?? 40_000);
const CONCURRENCY = Number(process.argv[3] ?? 64);
const ENGINE_TRACEPARENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

const hop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** One bet's tracing work, as the gateway does it (each step only when tracing is on, as there). */
async function bet(traced: boolean, i: number): Promise<void> {
  const step = (name: string, work: () => Promise<unknown>): Promise<unknown> => (traced ? inSpan(name, {}, work) : work());
  const run = async (): Promise<void> => {
    await step('redis claim', hop);
    const wallet = async (): Promise<void> => {
      const carrier = traced ? carrierOf() : undefined;
      if (traced && carrier === undefined) throw new Error('no trace context to send');
      await hop();
    };
    if (traced) {
      await inSpan('wallet debit', { kind: SpanKind.CLIENT, attributes: { [ATTR.wallet]: 'default', [ATTR.operation]: 'debit', [ATTR.attempt]: 1 } }, async (span) => {
        await wallet();
        span.setAttribute(ATTR.transactionId, `b-${i}`);
        span.setAttribute(ATTR.code, 1);
        span.setAttribute(ATTR.walletRequestId, `w-${i}`);
      });
    } else {
      await wallet();
    }
    await step('redis settle', hop);
  };
  if (!traced) return run();
  await inSpan('POST /engine/v1/sessions/:sessionId/bet', { kind: SpanKind.SERVER, parent: contextOf({ traceparent: ENGINE_TRACEPARENT }), attributes: { [ATTR.engineRequestId]: `r-${i}` } }, async (span) => {
    await run();
    span.setAttribute('http.response.status_code', 200);
  });
}

async function drive(traced: boolean): Promise<number> {
  let next = 0;
  const started = process.cpuUsage();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < REQUESTS) {
        next += 1;
        await bet(traced, next);
      }
    }),
  );
  const used = process.cpuUsage(started);
  return (used.user + used.system) / REQUESTS;
}

async function main(): Promise<void> {
  const port = await freePort();
  const sink = new Child({ name: 'otlp sink', args: ['--import', 'tsx', 'bench/otlp-sink.ts'], env: { ...baseEnv(), OTLP_SINK_PORT: String(port) } });
  await sink.start();
  try {
    await waitFor('otlp sink', async () => (await fetch(`http://127.0.0.1:${port}/stats`)).ok, 20_000);
    // Warm both paths, then measure off, on, off, on.
    await drive(false);
    const config = loadGatewayConfig({
      WALLET_BASE_URL: 'http://127.0.0.1:1',
      WALLET_BASIC_USER: 'u',
      WALLET_BASIC_PASSWORD: 'p',
      WALLET_SIGNING_SECRET: 's',
      PROVIDER_ID: '1',
      ENGINE_API_KEY: 'k',
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
      OTEL_TRACES_SAMPLER: 'always_on',
      OTEL_BSP_MAX_QUEUE_SIZE: '16384',
    });
    const figures: { off: number[]; on: number[] } = { off: [], on: [] };
    for (let round = 0; round < 2; round += 1) {
      figures.off.push(await drive(false));
      const tracing = await startTracing(config.tracing);
      if (!tracingOn()) throw new Error('tracing did not start');
      if (round === 0) await drive(true);
      figures.on.push(await drive(true));
      await tracing.close();
    }
    const stats = (await (await fetch(`http://127.0.0.1:${port}/stats`)).json()) as { exports: number; bytes: number };
    const fmt = (values: number[]): string => values.map((v) => v.toFixed(1)).join(', ');
    console.log(`${REQUESTS} bets, ${CONCURRENCY} at a time, node ${process.version}`);
    console.log(`CPU µs per bet, tracing off: ${fmt(figures.off)}`);
    console.log(`CPU µs per bet, tracing on (4 spans, exported): ${fmt(figures.on)}`);
    const added = figures.on.map((on, i) => on - (figures.off[i] as number));
    console.log(`added by tracing: ${fmt(added)} µs per bet; the sink received ${stats.exports} exports, ${stats.bytes} bytes`);
  } finally {
    await sink.stop();
  }
}

void main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
