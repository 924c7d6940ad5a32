import { TRIM_EVERY, trimsIndexes } from '../../src/store/record-indexes';

/** Id shapes an engine may use: prefixed counters, big numbers counting down, zero-padded counters. */
const shapes = [(i: number) => `b-${i}`, (i: number) => String(18446744073709551615n - BigInt(i)), (i: number) => `${i}`.padStart(20, '0')];
const ids = shapes.map((shape) => Array.from({ length: 32_000 }, (_, i) => shape(i)));

describe('which claims trim the operators indexes', () => {
  test.each(ids.map((list) => [list[1]!, list]))('one id in TRIM_EVERY (ids like %s), the same answer every time', (_example, list) => {
    const share = list.filter(trimsIndexes).length / list.length;
    expect(share).toBeGreaterThan(0.8 / TRIM_EVERY);
    expect(share).toBeLessThan(1.2 / TRIM_EVERY);
    expect(list.map(trimsIndexes)).toEqual(list.map(trimsIndexes));
  });

  test.each(ids.map((list) => [list[1]!, list]))('no long run of consecutive ids without a trim (ids like %s): a player index outgrows its cap by that run at most', (_example, list) => {
    let run = 0;
    let longest = 0;
    for (const id of list) {
      run = trimsIndexes(id) ? 0 : run + 1;
      longest = Math.max(longest, run);
    }
    // 32,000 fair draws of 1 in 16 give a longest run of ~160.
    expect(longest).toBeLessThan(TRIM_EVERY * 12);
  });
});
