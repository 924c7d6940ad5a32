import { spawnSync } from 'node:child_process';
import { loadGatewayConfig, loadWorkerConfig } from '../../src/config/env';
import { startTracing } from '../../src/observability/tracing';
import { carrierOf, contextOf, trace, tracingOn } from '../../src/lib/tracing';
import { VALID_ENV as valid, messageOf } from '../support/config-message';

/** The standard OTEL_* variables (contract 13), validated with the rest of the configuration. */
describe('tracing configuration', () => {
  it('is off without OTEL_EXPORTER_OTLP_ENDPOINT, and with OTEL_SDK_DISABLED=true', () => {
    expect(loadGatewayConfig(valid).tracing).toBeUndefined();
    expect(loadWorkerConfig({ ...valid, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'true' }).tracing).toBeUndefined();
  });

  it('reads the endpoint, protocol, service name, sampler and batch delay, each process with its own default name', () => {
    const env = { ...valid, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/', OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.25', OTEL_BSP_SCHEDULE_DELAY: '200' };
    expect(loadGatewayConfig(env).tracing).toMatchObject({
      tracesUrl: 'http://collector:4318/v1/traces',
      protocol: 'http/protobuf',
      serviceName: 'wallet-gateway',
      sampler: 'parentbased_traceidratio',
      samplerRatio: 0.25,
      batch: { scheduledDelayMillis: 200 },
    });
    expect(loadWorkerConfig(env).tracing).toMatchObject({ serviceName: 'wallet-gateway-worker' });
    const named = loadWorkerConfig({ ...env, OTEL_SERVICE_NAME: 'casino-a-worker', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://traces.test/otlp' });
    expect(named.tracing).toMatchObject({ serviceName: 'casino-a-worker', protocol: 'http/json', tracesUrl: 'https://traces.test/otlp' });
  });

  it.each([
    ['OTEL_EXPORTER_OTLP_PROTOCOL', 'grpc', 'must be http/json or http/protobuf'],
    ['OTEL_EXPORTER_OTLP_ENDPOINT', 'collector-hunter2:4318', 'must be an http:// or https:// URL'],
    ['OTEL_TRACES_SAMPLER_ARG', '2', ''],
    ['OTEL_TRACES_SAMPLER', 'jaeger_remote', ''],
    ['OTEL_BSP_SCHEDULE_DELAY', 'soon', ''],
    ['OTEL_EXPORTER_OTLP_HEADERS', 'api-key hunter2', 'must look like key=value'],
  ])('%s=%j stops the start, named, its value never echoed', (variable, value, says) => {
    const message = messageOf(() => loadGatewayConfig({ ...valid, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', [variable]: value }));
    expect(message).toContain(`${variable}: ${says}`);
    expect(message).not.toContain('hunter2');
  });
});

describe('tracing off', () => {
  it('installs nothing: no trace context to carry, and an engine traceparent is not even read', async () => {
    const tracing = await startTracing(loadGatewayConfig(valid).tracing);
    expect(tracingOn()).toBe(false);
    expect(carrierOf()).toBeUndefined();
    expect(trace.getSpanContext(contextOf({ traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' }))).toBeUndefined();
    await tracing.close();
  });
});

describe('the SDK stays out of a process with tracing off', () => {
  it('loading the gateway and the worker loads the OpenTelemetry API only, no SDK or exporter module', () => {
    // A fresh node (jest's module registry is not node's): the gateway's and the worker's whole import graph.
    const script = [
      "require('./src/main/gateway'); require('./workers/worker');",
      "const loaded = Object.keys(require.cache).filter((k) => k.includes('node_modules/@opentelemetry/'));",
      "console.log(JSON.stringify([...new Set(loaded.map((k) => k.split('node_modules/')[1].split('/').slice(0, 2).join('/')))]));",
    ].join(' ');
    const out = spawnSync(process.execPath, ['--require', 'tsx/cjs', '-e', script], { encoding: 'utf8' });
    expect(out.stderr).toBe('');
    expect(JSON.parse(out.stdout)).toEqual(['@opentelemetry/api']);
  });
});
