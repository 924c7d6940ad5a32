import { createServer } from 'node:http';

/**
 * `npm run bench -- --tracing`: where the gateway and the worker export their spans. A stand-in for
 * an OpenTelemetry Collector in its own process (its CPU is not the gateway's): it reads each OTLP/HTTP
 * export, answers 200 with an empty ExportTraceServiceResponse, and counts; GET /stats says how many
 * exports and bytes came, so a run shows its spans really left the processes.
 */
const port = Number(process.env.OTLP_SINK_PORT);
let exports = 0;
let bytes = 0;

const server = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/stats') {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ exports, bytes }));
    return;
  }
  req.on('data', (chunk: Buffer) => {
    bytes += chunk.length;
  });
  req.on('end', () => {
    exports += 1;
    const json = String(req.headers['content-type']).startsWith('application/json');
    res.writeHead(200, { 'content-type': json ? 'application/json' : 'application/x-protobuf' }).end(json ? '{}' : '');
  });
});
server.listen(port, '127.0.0.1', () => process.stdout.write(`otlp sink on ${port}\n`));
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => server.close(() => process.exit(0)));
