import { Writable } from 'node:stream';
import { throttledErrorLog } from '../../src/observability/error-events';
import { createLogger } from '../../src/observability/logger';

it('logs a client error event at most once per interval, with how many it folded in', () => {
  const lines: string[] = [];
  const logger = createLogger({ level: 'info', name: 't', destination: new Writable({ write: (c: Buffer, _e, cb) => (lines.push(c.toString('utf8')), cb()) }) });
  let now = 0;
  const onError = throttledErrorLog(logger, 'redis error', 10_000, () => now);
  onError(new Error('ECONNREFUSED'));
  now = 5_000;
  onError(new Error('ECONNREFUSED'));
  onError(new Error('ECONNREFUSED'));
  now = 10_000;
  onError(new Error('ECONNRESET'));
  logger.flush();
  const logged = lines.join('').trim().split('\n').map((l) => JSON.parse(l) as { msg: string; suppressed: number; err: { message: string } });
  expect(logged.map((l) => [l.msg, l.suppressed, l.err.message])).toEqual([
    ['redis error', 0, 'ECONNREFUSED'],
    ['redis error', 2, 'ECONNRESET'],
  ]);
});
