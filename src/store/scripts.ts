import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RedisClient } from './redis';

/**
 * The store's atomic steps, one Lua file each under ./lua (`name-NKEYS.lua`, with a header listing
 * KEYS, ARGV and the output; shared helpers come in through `--- @include "includes/name"`, as in
 * BullMQ's commands/). They are registered on each connection with ioredis `defineCommand`, which
 * sends them by SHA1 and reloads them where Redis does not know them (NOSCRIPT after a restart or a
 * failover). Each script has one typed argument builder here: its argument contract lives in one
 * place on this side, beside the header on the other.
 */

const LUA_DIR = join(__dirname, 'lua');
const INCLUDE = /^--- @include "([^"]+)"$/gm;

/** The script's text with its includes in place (each include at most once). */
export function loadLua(file: string, included: Set<string> = new Set()): string {
  const text = readFileSync(join(LUA_DIR, `${file}.lua`), 'utf8');
  return text.replace(INCLUDE, (_line, name: string) => {
    if (included.has(name)) return '';
    included.add(name);
    return loadLua(name, included);
  });
}

/**
 * One call's arguments: the keys (as many as the file name says), then ARGV in the header's order.
 * A script that reads the members of a set as keys (`listsKeys`) gets those keys after the named
 * ones (`moreKeys`): every key a script touches is passed in KEYS, as Redis asks.
 */
export interface ScriptCall {
  readonly keys: readonly string[];
  readonly moreKeys?: readonly string[];
  readonly args: readonly string[];
}

export interface Script<I> {
  /** The file under lua/, without `.lua`. */
  readonly file: string;
  /**
   * ARGV goes as one argument, a JSON array of the strings (the script unpacks it with
   * `cjson.decode`): a hot script's ~30–60 arguments cost ioredis and Redis a bulk string each.
   */
  readonly packed: boolean;
  /** Takes `moreKeys` after its named keys (the header's KEYS[n+1..]). */
  readonly listsKeys: boolean;
  /** The ioredis command it is registered as. */
  readonly command: string;
  readonly numberOfKeys: number;
  readonly lua: string;
  build(input: I): ScriptCall;
}

const FILE_NAME = /^([a-z-]+)-(\d+)$/;

export function defineScript<I>(file: string, build: (input: I) => ScriptCall, options: { packed?: boolean; listsKeys?: boolean } = {}): Script<I> {
  const match = FILE_NAME.exec(file);
  if (match === null) throw new Error(`a script file is named name-NKEYS: ${file}`);
  const command = `wgw_${match[1]!.replace(/-/g, '_')}`;
  return { file, packed: options.packed ?? false, listsKeys: options.listsKeys ?? false, command, numberOfKeys: Number(match[2]), lua: loadLua(file), build };
}

type ScriptCommand = (...args: string[]) => Promise<unknown>;

/**
 * Registers scripts on a connection; a store does it once, when it is made. Not lazily at first
 * use: an auto-pipeline that already exists in that tick would lack the new command, and ioredis
 * then misaligns the pipeline's replies (ioredis issue 1931).
 */
export function registerScripts(redis: RedisClient, scripts: readonly Script<never>[]): void {
  const commands = redis as unknown as Record<string, ScriptCommand | undefined>;
  for (const script of scripts) {
    // Without numberOfKeys, ioredis takes the key count as the call's first argument.
    if (commands[script.command] === undefined) redis.defineCommand(script.command, { numberOfKeys: script.listsKeys ? undefined : script.numberOfKeys, lua: script.lua });
  }
}

/** Runs a script registered on the connection (registerScripts). */
export function runScript<I>(redis: RedisClient, script: Script<I>, input: I): Promise<unknown> {
  const { keys, moreKeys = [], args } = script.build(input);
  if (keys.length !== script.numberOfKeys) {
    throw new Error(`${script.file} takes ${script.numberOfKeys} keys, was given ${keys.length}`);
  }
  if (moreKeys.length > 0 && !script.listsKeys) throw new Error(`${script.file} takes no keys beyond its ${script.numberOfKeys}`);
  const command = (redis as unknown as Record<string, ScriptCommand | undefined>)[script.command];
  if (command === undefined) throw new Error(`${script.file} is not registered on this connection`);
  const allKeys = script.listsKeys ? [String(keys.length + moreKeys.length), ...keys, ...moreKeys] : keys;
  return command.apply(redis, script.packed ? [...allKeys, JSON.stringify(args)] : [...allKeys, ...args]);
}
