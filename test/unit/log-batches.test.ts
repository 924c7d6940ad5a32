import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { batchedLines } from '../../src/observability/logger';

/** The busy logger's batches: lines reach the destination whole, in order, once a batch is full or flushed, and at exit. */
describe('batched log lines', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'log-batches-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('hands a batch over once it holds the batch size, and the rest at a flush, in order', () => {
    const file = join(dir, 'out.log');
    const out = pino.destination({ dest: file, sync: true });
    const logger = pino({ base: null, timestamp: false }, batchedLines(out, 150));
    const written = (): string[] => readFileSync(file, 'utf8').split('\n').filter(Boolean);

    logger.info('first');
    logger.info('second');
    expect(written()).toEqual([]);
    for (let i = 0; i < 6; i += 1) logger.info(`line ${i}`);
    const handedOver = written();
    expect(handedOver.length).toBeGreaterThan(0);
    expect(handedOver.length).toBeLessThan(8);
    logger.flush();
    expect(written().map((line) => (JSON.parse(line) as { msg: string }).msg)).toEqual(['first', 'second', ...[0, 1, 2, 3, 4, 5].map((i) => `line ${i}`)]);
  });

  it('writes the batch under way when the process exits without a flush', () => {
    const logger = join(__dirname, '../../src/observability/logger.ts');
    const script = `const { createBusyLogger } = require(${JSON.stringify(logger)}); const l = createBusyLogger({ level: 'info', name: 't' }); for (let i = 0; i < 3; i += 1) l.info('line ' + i); process.exit(0);`;
    const stdout = execFileSync(process.execPath, ['--import', 'tsx', '-e', script], { encoding: 'utf8' });
    expect(stdout.split('\n').filter(Boolean).map((line) => (JSON.parse(line) as { msg: string }).msg)).toEqual(['line 0', 'line 1', 'line 2']);
  });
});
