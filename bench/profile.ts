import { readFileSync } from 'node:fs';

/**
 * Reads the .cpuprofile files `node --cpu-prof` writes at exit (one per gateway process) and
 * ranks functions by self time, summed over the processes. Idle time is left out of the shares.
 */
interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

interface CpuProfile {
  nodes: { id: number; callFrame: CallFrame }[];
  samples: number[];
  timeDeltas: number[];
}

export interface HotFunction {
  readonly name: string;
  readonly location: string;
  readonly selfMs: number;
  /** Share of the non-idle samples, in percent. */
  readonly percent: number;
}

export interface ProfileSummary {
  readonly files: number;
  readonly busyMs: number;
  readonly idleMs: number;
  readonly top: readonly HotFunction[];
}

function location(frame: CallFrame, root: string): string {
  if (frame.url === '') return '';
  const path = frame.url.replace(/^file:\/\//, '');
  const modules = path.lastIndexOf('node_modules/');
  const short = modules >= 0 ? path.slice(modules) : path.startsWith(root) ? path.slice(root.length + 1) : path;
  return `${short}:${frame.lineNumber + 1}`;
}

export function summariseProfiles(files: readonly string[], root: string, limit = 15): ProfileSummary {
  const self = new Map<string, { name: string; location: string; us: number }>();
  let idleUs = 0;
  let busyUs = 0;
  for (const file of files) {
    const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
    const frames = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
    profile.samples.forEach((nodeId, i) => {
      const frame = frames.get(nodeId);
      const us = profile.timeDeltas[i] ?? 0;
      if (frame === undefined) return;
      if (frame.functionName === '(idle)') {
        idleUs += us;
        return;
      }
      busyUs += us;
      const where = location(frame, root);
      const name = frame.functionName === '' ? '(anonymous)' : frame.functionName;
      const key = `${name} ${where}`;
      const entry = self.get(key) ?? { name, location: where, us: 0 };
      entry.us += us;
      self.set(key, entry);
    });
  }
  const top = [...self.values()]
    .sort((a, b) => b.us - a.us)
    .slice(0, limit)
    .map((e) => ({ name: e.name, location: e.location, selfMs: Math.round(e.us / 1000), percent: busyUs === 0 ? 0 : Math.round((e.us / busyUs) * 1000) / 10 }));
  return { files: files.length, busyMs: Math.round(busyUs / 1000), idleMs: Math.round(idleUs / 1000), top };
}
