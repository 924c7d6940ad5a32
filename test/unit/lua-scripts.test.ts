import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { keysFor } from '../../src/store/keys';
import { defineScript, loadLua } from '../../src/store/scripts';

/** The store's Lua files keep the shape their headers promise (src/store/lua, BullMQ-style). */
const LUA_DIR = join(__dirname, '..', '..', 'src', 'store', 'lua');
const files = readdirSync(LUA_DIR).filter((f) => f.endsWith('.lua')).map((f) => f.slice(0, -'.lua'.length));

function header(text: string): string {
  const match = /^--\[\[([\s\S]*?)\]\]/.exec(text);
  if (match === null) throw new Error('no header');
  return match[1]!;
}

function code(text: string): string[] {
  return text.replace(/^--\[\[[\s\S]*?\]\]/, '').split('\n').filter((line) => !line.trim().startsWith('--'));
}

describe.each(files)('%s.lua', (file) => {
  const text = readFileSync(join(LUA_DIR, `${file}.lua`), 'utf8');

  test('its header lists as many KEYS as its name says, and the output', () => {
    const script = defineScript(file, () => ({ keys: [], args: [] }));
    const listed = header(text).match(/^\s*KEYS\[\d+\]/gm) ?? [];
    expect(listed).toHaveLength(script.numberOfKeys);
    expect(header(text)).toMatch(/Output:/);
  });

  test('reads KEYS and ARGV only into named locals', () => {
    const raw = code(text).filter((line) => /\b(KEYS|ARGV)\[/.test(line) && !/^\s*local\s/.test(line));
    expect(raw).toEqual([]);
  });

  test('every include resolves, once', () => {
    const lua = loadLua(file);
    expect(lua).not.toMatch(/@include/);
    for (const fn of lua.match(/^local function (\w+)/gm) ?? []) {
      expect(lua.split(fn)).toHaveLength(2);
    }
  });
});

test('a file name without its key count is refused', () => {
  expect(() => defineScript('claim', () => ({ keys: [], args: [] }))).toThrow(/name-NKEYS/);
});

test('a script touches only the keys it is passed: the key layout hands no key prefix to build one from', () => {
  const keys = keysFor('wgw');
  expect(Object.keys(keys).filter((name) => /prefix/i.test(name))).toEqual([]);
  for (const file of files) {
    const lua = loadLua(file);
    // Every key argument of a command is a named local taken from KEYS, never text joined in the script.
    expect(lua.match(/redis\.call\('[A-Z]+', [^,)]*\.\./g) ?? []).toEqual([]);
  }
});
