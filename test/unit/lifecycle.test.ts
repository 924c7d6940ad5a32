import { CloseError, createClosers, startWith } from '../../src/lib/lifecycle';

/** The closer stack every process and harness closes through (src/lib/lifecycle.ts). */
describe('createClosers', () => {
  it('closes in reverse order of opening', async () => {
    const closed: string[] = [];
    const closers = createClosers();
    for (const name of ['redis', 'queues', 'server']) closers.defer(name, async () => void closed.push(name));
    await closers.closeAll();
    expect(closed).toEqual(['server', 'queues', 'redis']);
  });

  it('a step that fails is reported, every other step still runs, and closeAll rejects naming the failure', async () => {
    const closed: string[] = [];
    const reported: [string, unknown][] = [];
    const closers = createClosers((step, err) => reported.push([step, err]));
    closers.defer('redis', async () => void closed.push('redis'));
    closers.defer('wallet client', () => {
      throw new Error('pool already destroyed');
    });
    closers.defer('queues', async () => {
      throw new Error('queue close refused');
    });
    closers.defer('server', async () => void closed.push('server'));

    const result = closers.closeAll();
    await expect(result).rejects.toBeInstanceOf(CloseError);
    await expect(result).rejects.toMatchObject({ errors: [new Error('queue close refused'), new Error('pool already destroyed')] });
    expect(closed).toEqual(['server', 'redis']);
    expect(reported.map(([step]) => step)).toEqual(['queues', 'wallet client']);
  });

  it('is memoised: a second closeAll runs nothing again and shares the first outcome', async () => {
    let runs = 0;
    const closers = createClosers();
    closers.defer('redis', async () => {
      runs += 1;
    });
    const first = closers.closeAll();
    const second = closers.closeAll();
    expect(second).toBe(first);
    await first;
    await closers.closeAll();
    expect(runs).toBe(1);
  });

  it('refuses a step deferred after closing began', async () => {
    const closers = createClosers();
    await closers.closeAll();
    expect(() => closers.defer('late', () => undefined)).toThrow('defer("late") after closeAll()');
  });
});

describe('startWith', () => {
  it('a start that fails half-way closes what it opened, then throws the start error', async () => {
    const closed: string[] = [];
    const closers = createClosers(() => undefined);
    const start = startWith(closers, async () => {
      closers.defer('redis', async () => void closed.push('redis'));
      closers.defer('wallet client', async () => {
        throw new Error('close failed too');
      });
      closers.defer('queues', async () => void closed.push('queues'));
      throw new Error('listen EADDRINUSE');
    });
    await expect(start).rejects.toThrow('listen EADDRINUSE');
    expect(closed).toEqual(['queues', 'redis']);
  });

  it('a start that succeeds leaves everything open', async () => {
    const closed: string[] = [];
    const closers = createClosers();
    await expect(
      startWith(closers, async () => {
        closers.defer('redis', async () => void closed.push('redis'));
        return 'up';
      }),
    ).resolves.toBe('up');
    expect(closed).toEqual([]);
  });
});
