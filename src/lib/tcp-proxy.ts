import { createServer, connect, type Server, type Socket } from 'node:net';
import { once } from 'node:events';

/** A TCP pass-through to `target` that a test or the soak can cut (every connection dropped, new ones refused) and restore. */
export interface TcpProxy {
  readonly port: number;
  cut(): void;
  restore(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(targetHost: string, targetPort: number): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let open = true;
  const server: Server = createServer((client) => {
    if (!open) return client.destroy();
    const upstream = connect(targetPort, targetHost);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => undefined);
    }
    client.pipe(upstream).pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const cut = (): void => {
    open = false;
    for (const s of sockets) s.destroy();
  };
  return {
    port: (server.address() as { port: number }).port,
    cut,
    restore: () => {
      open = true;
    },
    async close() {
      cut();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A proxy to the host and port of `url`, and `url` with the proxy's port instead. */
export async function proxyFor(url: string): Promise<{ readonly proxy: TcpProxy; readonly url: string }> {
  const direct = new URL(url);
  const proxy = await startTcpProxy(direct.hostname, Number(direct.port));
  const via = new URL(url);
  via.port = String(proxy.port);
  return { proxy, url: via.toString() };
}
