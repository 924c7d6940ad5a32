import type { Sampler } from '@opentelemetry/sdk-trace-base';
import type { TracingConfig } from '../config/env';

/**
 * The OpenTelemetry Node SDK of one process (contract 13): started by the gateway's and the
 * worker's start before anything else, shut down after everything else, so the spans of a
 * shutdown are flushed too. Loaded only when tracing is configured: with it off, no SDK module is
 * ever required and the API stays its no-op.
 *
 * One SDK per process: where the gateway and a worker share one (`npm run dev`, tests), the second
 * start shares the first one's SDK, and the last close shuts it down.
 */
export interface Tracing {
  /** Flushes the spans still batched and ends the SDK (the last holder of a shared one). */
  close(): Promise<void>;
}

/** The longest a shutdown waits for the last spans to be exported. */
const FLUSH_LIMIT_MS = 5_000;

const OFF: Tracing = Object.freeze({ close: async () => undefined });

interface Installed {
  holders: number;
  shutdown(): Promise<void>;
}

let installed: Promise<Installed> | undefined;

export async function startTracing(config: TracingConfig | undefined): Promise<Tracing> {
  if (config === undefined) return OFF;
  const pending = (installed ??= install(config));
  const current = await pending.catch((err: unknown) => {
    if (installed === pending) installed = undefined;
    throw err;
  });
  current.holders += 1;
  let closed = false;
  return {
    async close() {
      if (closed) return;
      closed = true;
      current.holders -= 1;
      if (current.holders > 0) return;
      if (installed === pending) installed = undefined;
      await current.shutdown();
    },
  };
}

async function install(config: TracingConfig): Promise<Installed> {
  const [{ NodeSDK }, base, { W3CTraceContextPropagator }, api] = await Promise.all([
    import('@opentelemetry/sdk-node'),
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/core'),
    import('@opentelemetry/api'),
  ]);
  const exporterOptions = { url: config.tracesUrl, ...(config.exportTimeoutMs === undefined ? {} : { timeoutMillis: config.exportTimeoutMs }) };
  const { OTLPTraceExporter } =
    config.protocol === 'http/json' ? await import('@opentelemetry/exporter-trace-otlp-http') : await import('@opentelemetry/exporter-trace-otlp-proto');
  const sampler = (): Sampler => {
    const ratio = new base.TraceIdRatioBasedSampler(config.samplerRatio);
    switch (config.sampler) {
      case 'always_on':
        return new base.AlwaysOnSampler();
      case 'always_off':
        return new base.AlwaysOffSampler();
      case 'traceidratio':
        return ratio;
      case 'parentbased_always_on':
        return new base.ParentBasedSampler({ root: new base.AlwaysOnSampler() });
      case 'parentbased_always_off':
        return new base.ParentBasedSampler({ root: new base.AlwaysOffSampler() });
      case 'parentbased_traceidratio':
        return new base.ParentBasedSampler({ root: ratio });
    }
  };
  const sdk = new NodeSDK({
    serviceName: config.serviceName,
    sampler: sampler(),
    spanProcessors: [new base.BatchSpanProcessor(new OTLPTraceExporter(exporterOptions), config.batch)],
    // W3C trace context only (contract 13); traces only: no metric reader, no log exporter (the
    // gateway's metrics are Prometheus, its logs pino on stdout).
    textMapPropagator: new W3CTraceContextPropagator(),
    metricReaders: [],
    logRecordProcessors: [],
    instrumentations: [],
  });
  sdk.start();
  return {
    holders: 0,
    async shutdown() {
      // A collector that does not answer must not hold the exit: the flush gets FLUSH_LIMIT_MS.
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([sdk.shutdown(), new Promise<void>((resolve) => (timer = setTimeout(resolve, FLUSH_LIMIT_MS)))]);
      clearTimeout(timer);
      // Unregistered, so a later start in this process (a test's next gateway) can register anew.
      api.trace.disable();
      api.context.disable();
      api.propagation.disable();
    },
  };
}
