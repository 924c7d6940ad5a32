import cluster from 'node:cluster';
import { AggregatorRegistry, type Registry } from 'prom-client';
import type { Logger } from './logger';

/**
 * One scrape shows the whole gateway (contract section 6). With GATEWAY_PROCESSES > 1 a scrape
 * lands on whichever worker process took the connection; that worker asks the primary over IPC,
 * the primary collects every worker's registry with prom-client's AggregatorRegistry (counters
 * and histograms summed) and sends the text back. A counter then never goes backwards between
 * two scrapes while the processes live, whichever process served them.
 *
 * Series read from Redis at scrape time (queue depths, the dead count) are the same for every
 * process: they are left out of the sum ('omit' aggregator) and the scraping process adds its own.
 */
const SCRAPE_REQUEST = 'wgw:metrics-scrape';
const SCRAPE_ANSWER = 'wgw:metrics-answer';

interface ScrapeRequest {
  readonly type: typeof SCRAPE_REQUEST;
  readonly id: number;
}
interface ScrapeAnswer {
  readonly type: typeof SCRAPE_ANSWER;
  readonly id: number;
  readonly text?: string;
  readonly error?: string;
}

const isMessage = <T extends { type: string }>(message: unknown, type: T['type']): message is T =>
  typeof message === 'object' && message !== null && (message as { type?: unknown }).type === type;

/** In the cluster primary: answers every worker's scrape with the sum over all workers. */
export function serveClusterMetrics(logger: Logger): void {
  const aggregator = new AggregatorRegistry();
  cluster.on('message', (worker, message: unknown) => {
    if (!isMessage<ScrapeRequest>(message, SCRAPE_REQUEST)) return;
    const reply = (answer: Omit<ScrapeAnswer, 'type' | 'id'>): void => {
      if (worker.isConnected()) worker.send({ type: SCRAPE_ANSWER, id: message.id, ...answer } satisfies ScrapeAnswer);
    };
    aggregator.clusterMetrics().then(
      (text) => reply({ text }),
      (err: unknown) => {
        logger.warn({ err }, 'metrics: aggregating the gateway processes failed');
        reply({ error: (err as Error).message });
      },
    );
  });
}

/** Waits past prom-client's own 5 s deadline for the workers' answers, so its error arrives first. */
const SCRAPE_TIMEOUT_MS = 6_000;

/**
 * In a cluster worker: offers `registry` to the primary's aggregation and returns the scrape of
 * the whole gateway. `local` names this process's series that are added as they are (see above).
 */
export function clusterScrape(registry: Registry, local: readonly string[]): () => Promise<string> {
  // Once per registry: the operators' routes are built again on a registry reload, and a second
  // listener would answer the primary twice.
  const made = scrapes.get(registry);
  if (made !== undefined) return made;
  const scrape = makeClusterScrape(registry, local);
  scrapes.set(registry, scrape);
  return scrape;
}

const scrapes = new WeakMap<Registry, () => Promise<string>>();

function makeClusterScrape(registry: Registry, local: readonly string[]): () => Promise<string> {
  AggregatorRegistry.setRegistries([registry]);
  // Constructing one installs prom-client's worker-side listener that answers the primary.
  new AggregatorRegistry();
  const pending = new Map<number, { resolve(text: string): void; reject(err: Error): void }>();
  let nextId = 0;
  process.on('message', (message: unknown) => {
    if (!isMessage<ScrapeAnswer>(message, SCRAPE_ANSWER)) return;
    const waiter = pending.get(message.id);
    pending.delete(message.id);
    if (message.text !== undefined) waiter?.resolve(message.text);
    else waiter?.reject(new Error(`metrics aggregation failed: ${message.error ?? 'no answer'}`));
  });

  const askPrimary = (): Promise<string> =>
    new Promise((resolve, reject) => {
      const id = (nextId += 1);
      const timer = setTimeout(() => {
        pending.delete(id);
        reject(new Error('metrics aggregation: no answer from the primary'));
      }, SCRAPE_TIMEOUT_MS);
      pending.set(id, {
        resolve: (text) => (clearTimeout(timer), resolve(text)),
        reject: (err) => (clearTimeout(timer), reject(err)),
      });
      process.send?.({ type: SCRAPE_REQUEST, id } satisfies ScrapeRequest);
    });

  return async () => {
    const [summed, ...own] = await Promise.all([askPrimary(), ...local.map((name) => (registry.getSingleMetric(name) ? registry.getSingleMetricAsString(name) : ''))]);
    return [summed.trimEnd(), ...own.filter((text) => text !== '')].join('\n') + '\n';
  };
}
