import { failureWindow } from '../../src/http/failure-window';

describe('failureWindow', () => {
  const limit = { max: 3, windowMs: 1000, maxKeys: 2 };

  it('holds a key back after max failures until the oldest leaves the window', () => {
    let now = 0;
    const w = failureWindow(limit, () => now);
    w.fail('a');
    now = 100;
    w.fail('a');
    expect(w.waitMs('a')).toBe(0);
    now = 200;
    w.fail('a');
    expect(w.waitMs('a')).toBe(800);
    expect(w.waitMs('b')).toBe(0);
    now = 1000;
    expect(w.waitMs('a')).toBe(0);
    w.fail('a');
    expect(w.waitMs('a')).toBe(100);
  });

  it('keeps at most maxKeys keys, forgetting the longest-known one', () => {
    const now = 0;
    const w = failureWindow(limit, () => now);
    for (const key of ['a', 'b', 'c']) for (let i = 0; i < 3; i += 1) w.fail(key);
    expect(w.waitMs('a')).toBe(0);
    expect(w.waitMs('b')).toBe(1000);
    expect(w.waitMs('c')).toBe(1000);
  });
});
