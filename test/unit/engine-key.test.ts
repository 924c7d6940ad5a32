import { bearerOwner } from '../../src/http/auth';

describe('the engine found by its Bearer key', () => {
  const studioA = { id: 'studio-a', keys: ['key-a', 'next-a'] };
  const studioB = { id: 'studio-b', keys: ['key-b'] };
  const owner = bearerOwner([studioA, studioB]);

  it('finds each key\'s own engine, either key of a rotation', () => {
    expect(owner('Bearer key-a')).toBe(studioA);
    expect(owner('Bearer next-a')).toBe(studioA);
    expect(owner('Bearer key-b')).toBe(studioB);
  });

  it('takes the scheme in any letter case and spaces around the key', () => {
    expect(owner('bearer key-b')).toBe(studioB);
    expect(owner('BEARER   key-b ')).toBe(studioB);
  });

  it('finds nobody for a wrong, partial, longer or missing key', () => {
    for (const header of ['Bearer key-c', 'Bearer key-', 'Bearer key-aa', 'Bearer KEY-A', 'Bearer ', 'Basic key-a', 'key-a', '', undefined]) {
      expect(owner(header)).toBeUndefined();
    }
  });

  it('finds nobody when no engine has a key', () => {
    expect(bearerOwner([])('Bearer key-a')).toBeUndefined();
  });
});
