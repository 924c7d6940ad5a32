#!/usr/bin/env node
/**
 * The registry this project installs from serves only the platform builds of native packages
 * that its machines use (linux x64/arm64): `npm install` then leaves the other platforms' optional
 * packages (@swc/core-darwin-arm64, …) out of package-lock.json, and `npm ci` refuses a lockfile
 * whose optional dependencies are missing. This adds each missing one as an optional entry with the
 * os/cpu its name states, so `npm ci` skips it on this platform without fetching it.
 * Run after every `npm install`: `node scripts/complete-lockfile.js`.
 */
const { readFileSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');

const OS = ['darwin', 'linux', 'win32', 'freebsd', 'android', 'openbsd', 'netbsd', 'sunos', 'aix', 'openharmony'];
const CPU = ['arm64', 'x64', 'ia32', 'arm', 'ppc64', 's390x', 'riscv64', 'loong64', 'mips64el', 'wasm32'];

function platformOf(name) {
  const parts = name.split('/').pop().split('-');
  const os = OS.find((o) => parts.includes(o));
  const cpu = CPU.find((c) => parts.includes(c)) ?? (parts.includes('x86') ? 'ia32' : undefined);
  return { os, cpu };
}

const path = join(__dirname, '..', 'package-lock.json');
const lock = JSON.parse(readFileSync(path, 'utf8'));
let added = 0;
for (const [key, entry] of Object.entries(lock.packages)) {
  for (const [dep, version] of Object.entries(entry.optionalDependencies ?? {})) {
    const base = key === '' ? '' : `${key}/`;
    const nested = `${base}node_modules/${dep}`;
    const hoisted = `node_modules/${dep}`;
    if (lock.packages[nested] || lock.packages[hoisted]) continue;
    const { os, cpu } = platformOf(dep);
    if (os === undefined && cpu === undefined) continue; // not a platform build: leave it to npm
    lock.packages[hoisted] = {
      version: /^\d/.test(version) ? version.replace(/^[\^~=]/, '') : version,
      ...(entry.dev ? { dev: true } : {}),
      optional: true,
      ...(os ? { os: [os] } : {}),
      ...(cpu ? { cpu: [cpu] } : {}),
    };
    added += 1;
  }
}
lock.packages = Object.fromEntries(Object.entries(lock.packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a.localeCompare(b))));
writeFileSync(path, `${JSON.stringify(lock, null, 2)}\n`);
console.log(`complete-lockfile: ${added} optional platform entries added`);
