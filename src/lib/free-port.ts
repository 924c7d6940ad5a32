import { randomInt } from 'node:crypto';
import { createServer } from 'node:net';

/**
 * Below Linux's ephemeral range (32768–60999): the kernel gives ports from that range to outgoing
 * connections, so a port picked there can be taken by some client's connection while the process
 * it was picked for is down (a soak killed a gateway, and its restart found the port in use).
 */
const FIRST = 20_000;
const LAST = 32_767;

/** A TCP port free on loopback right now (for processes this project starts: dev, soak, tests). */
export function freePort(): Promise<number> {
  return freePortWith([0]);
}

/** Redis Cluster's bus port is the node's port plus this. */
const CLUSTER_BUS_OFFSET = 10_000;

/**
 * A Redis Cluster node's port: the node also listens on port + 10000 (its cluster bus), so both
 * must be free, and both below the ephemeral range too (a soak restarts a killed node on the same
 * two ports). One seen failure: a node's bus port at 38066 was already taken.
 */
export function freeClusterNodePort(): Promise<number> {
  return freePortWith([0, CLUSTER_BUS_OFFSET]);
}

/** A port p such that p + each offset is free, all of them within FIRST–LAST. */
async function freePortWith(offsets: readonly number[]): Promise<number> {
  const span = Math.max(...offsets);
  for (let tries = 0; ; tries += 1) {
    const port = randomInt(FIRST, LAST - span + 1);
    if (await everyFree(offsets.map((o) => port + o))) return port;
    if (tries >= 50) throw new Error(`no free port found in ${FIRST}–${LAST} after ${tries + 1} tries`);
  }
}

async function everyFree(ports: readonly number[]): Promise<boolean> {
  for (const port of ports) if (!(await canListen(port))) return false;
  return true;
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}
