import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One exported span, as OTLP/JSON writes it (ids in hex), with its attributes flattened. */
export interface ReceivedSpan {
  readonly service: string;
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId: string | undefined;
  readonly name: string;
  readonly kind: number;
  readonly attributes: Readonly<Record<string, string | number | boolean>>;
  readonly status: { readonly code?: number; readonly message?: string };
}

export interface OtlpReceiver {
  /** OTEL_EXPORTER_OTLP_ENDPOINT for it (the exporter adds /v1/traces). */
  readonly endpoint: string;
  spans(): ReceivedSpan[];
  /** Every http/json request body as received, for what must never be in one. */
  bodies(): string[];
  /** Every http/protobuf request body, undecoded: ids travel there as raw bytes, names as UTF-8. */
  protobufBodies(): Buffer[];
  close(): Promise<void>;
}

interface OtlpValue {
  stringValue?: string;
  intValue?: number | string;
  boolValue?: boolean;
  doubleValue?: number;
}
interface OtlpAttribute {
  key: string;
  value: OtlpValue;
}
interface OtlpExport {
  resourceSpans?: {
    resource?: { attributes?: OtlpAttribute[] };
    scopeSpans?: {
      spans?: { traceId: string; spanId: string; parentSpanId?: string; name: string; kind: number; attributes?: OtlpAttribute[]; status?: { code?: number; message?: string } }[];
    }[];
  }[];
}

function flatten(attributes: OtlpAttribute[] | undefined): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const { key, value } of attributes ?? []) {
    const v = value.stringValue ?? value.boolValue ?? value.doubleValue ?? value.intValue;
    if (v !== undefined) out[key] = typeof v === 'string' && value.intValue !== undefined ? Number(v) : v;
  }
  return out;
}

/**
 * A small in-process OTLP/HTTP receiver: POST /v1/traces in http/json (decoded into spans) or
 * http/protobuf (kept as bytes), answered 200 with an empty response, as a collector does.
 */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const received: ReceivedSpan[] = [];
  const bodies: string[] = [];
  const protobufBodies: Buffer[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      if (req.headers['content-type'] === 'application/x-protobuf') {
        protobufBodies.push(Buffer.concat(chunks));
        // An empty ExportTraceServiceResponse.
        res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
        return;
      }
      if (!String(req.headers['content-type']).startsWith('application/json')) {
        res.writeHead(415).end();
        return;
      }
      const text = Buffer.concat(chunks).toString('utf8');
      bodies.push(text);
      const payload = JSON.parse(text) as OtlpExport;
      for (const resourceSpans of payload.resourceSpans ?? []) {
        const service = String(flatten(resourceSpans.resource?.attributes)['service.name']);
        for (const scope of resourceSpans.scopeSpans ?? []) {
          for (const span of scope.spans ?? []) {
            received.push({
              service,
              traceId: span.traceId,
              spanId: span.spanId,
              parentSpanId: span.parentSpanId === '' ? undefined : span.parentSpanId,
              name: span.name,
              kind: span.kind,
              attributes: flatten(span.attributes),
              status: span.status ?? {},
            });
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    spans: () => [...received],
    bodies: () => [...bodies],
    protobufBodies: () => [...protobufBodies],
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
