import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

/**
 * The worker's own HTTP port (WORKER_METRICS_PORT): GET /metrics (its prom-client registry:
 * retries, compensations, dead transactions, its wallet calls) and GET /healthz. Nothing else, so
 * a bare node:http server is enough; it carries no secret and needs no auth.
 */
export interface MetricsServer {
  /** http://127.0.0.1:PORT (the port actually bound, also for port 0). */
  readonly url: string;
  close(): Promise<void>;
}

async function answer(registry: Registry, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = (req.url ?? '/').split('?')[0];
  if (path !== '/metrics' && path !== '/healthz') {
    res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not found"}');
    return;
  }
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'application/json' }).end('{"error":"method not allowed"}');
    return;
  }
  if (path === '/healthz') {
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end('{"status":"ok"}');
    return;
  }
  const text = await registry.metrics();
  res.writeHead(200, { 'content-type': registry.contentType, 'cache-control': 'no-store' }).end(req.method === 'HEAD' ? undefined : text);
}

/** Listens on every interface: Prometheus scrapes a worker container by its own address. */
export function startMetricsServer(registry: Registry, port: number, host = '0.0.0.0'): Promise<MetricsServer> {
  const server = createServer((req, res) => {
    res.setHeader('X-Content-Type-Options', 'nosniff');
    answer(registry, req, res).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(`metrics failed: ${(err as Error).message}`);
    });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      const bound = (server.address() as AddressInfo).port;
      let closing: Promise<void> | undefined;
      resolve({
        url: `http://127.0.0.1:${bound}`,
        close() {
          closing ??= new Promise<void>((done) => {
            server.close(() => done());
            // A scraper's keep-alive connection would hold close() open.
            server.closeAllConnections();
          });
          return closing;
        },
      });
    });
  });
}
