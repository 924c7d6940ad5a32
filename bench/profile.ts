import { readFileSync } from 'node:fs';

/**
 * Reads the CPU profiles bench/sampler.cjs writes (one per process of the server under test) and
 * ranks functions by self time, summed over the processes. Idle time is left out of the shares.
 * Also reads its allocation profiles: bytes allocated per request.
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

export interface AreaShare {
  /** `npm:<package>`, `node:<internal module>`, a folder of this repository, or a V8 pseudo-frame such as (garbage collector). */
  readonly area: string;
  readonly selfMs: number;
  readonly percent: number;
}

export interface ProfileSummary {
  readonly files: number;
  /** The requests answered while the profile ran: busy time per request is busyMs × 1000 / requests. */
  readonly requests: number;
  readonly busyMs: number;
  readonly idleMs: number;
  readonly top: readonly HotFunction[];
  /** Self time by where the code lives: which library, which node subsystem, which of our folders. */
  readonly areas: readonly AreaShare[];
}

function location(frame: CallFrame, root: string): string {
  if (frame.url === '') return '';
  const path = frame.url.replace(/^file:\/\//, '');
  const modules = path.lastIndexOf('node_modules/');
  const short = modules >= 0 ? path.slice(modules) : path.startsWith(root) ? path.slice(root.length + 1) : path;
  return `${short}:${frame.lineNumber + 1}`;
}

/** The library, node subsystem or repository folder a frame belongs to. */
function areaOf(frame: CallFrame, root: string): string {
  const url = frame.url.replace(/^file:\/\//, '');
  if (url === '') return frame.functionName.startsWith('(') ? frame.functionName : '(native)';
  const modules = url.lastIndexOf('node_modules/');
  if (modules >= 0) {
    const parts = url.slice(modules + 'node_modules/'.length).split('/');
    return `npm:${parts[0]?.startsWith('@') ? `${parts[0]}/${parts[1] ?? ''}` : (parts[0] ?? '')}`;
  }
  if (url.startsWith('node:')) return `node:${url.slice(5).replace(/^internal\//, '').split('/')[0] ?? ''}`;
  if (url.startsWith(root)) return url.slice(root.length + 1).split('/').slice(0, -1).join('/') || '.';
  return url;
}

const share = (us: number, busyUs: number): number => (busyUs === 0 ? 0 : Math.round((us / busyUs) * 1000) / 10);

export function summariseProfiles(files: readonly string[], root: string, requests: number, limit = 15): ProfileSummary {
  const self = new Map<string, { name: string; location: string; us: number }>();
  const areas = new Map<string, number>();
  let idleUs = 0;
  let busyUs = 0;
  for (const file of files) {
    const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
    const frames = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
    profile.samples.forEach((nodeId, i) => {
      const frame = frames.get(nodeId);
      const us = profile.timeDeltas[i] ?? 0;
      // The first sample's delta counts from the profiler's start, taken inside the sampler's own call.
      if (frame === undefined || i === 0) return;
      if (frame.functionName === '(idle)') {
        idleUs += us;
        return;
      }
      busyUs += us;
      const area = areaOf(frame, root);
      areas.set(area, (areas.get(area) ?? 0) + us);
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
    .map((e) => ({ name: e.name, location: e.location, selfMs: Math.round(e.us / 1000), percent: share(e.us, busyUs) }));
  // Every area (a few dozen at most): two servers' profiles are compared area by area.
  const byArea = [...areas.entries()]
    .sort((a, b) => b[1] - a[1])
    .map(([area, us]) => ({ area, selfMs: Math.round(us / 1000), percent: share(us, busyUs) }));
  return { files: files.length, requests, busyMs: Math.round(busyUs / 1000), idleMs: Math.round(idleUs / 1000), top, areas: byArea };
}

interface HeapNode {
  callFrame: CallFrame;
  selfSize: number;
  children: HeapNode[];
}

export interface AllocationSummary {
  readonly files: number;
  readonly requests: number;
  /** Bytes allocated per request, every process of the gateway together (V8's estimate from its samples). */
  readonly bytesPerRequest: number;
  readonly top: readonly { readonly name: string; readonly location: string; readonly bytesPerRequest: number }[];
  readonly areas: readonly { readonly area: string; readonly bytesPerRequest: number }[];
}

/**
 * Sums sampling heap profiles (HeapProfiler.stopSampling's `profile`, collected objects included)
 * over the processes: allocation per request, by function and by area, self sizes.
 */
export function summariseAllocations(files: readonly string[], root: string, requests: number, limit = 15): AllocationSummary {
  const self = new Map<string, { name: string; location: string; bytes: number }>();
  const areas = new Map<string, number>();
  let total = 0;
  const visit = (node: HeapNode): void => {
    total += node.selfSize;
    if (node.selfSize > 0) {
      const area = areaOf(node.callFrame, root);
      areas.set(area, (areas.get(area) ?? 0) + node.selfSize);
      const where = location(node.callFrame, root);
      const name = node.callFrame.functionName === '' ? '(anonymous)' : node.callFrame.functionName;
      const entry = self.get(`${name} ${where}`) ?? { name, location: where, bytes: 0 };
      entry.bytes += node.selfSize;
      self.set(`${name} ${where}`, entry);
    }
    for (const child of node.children) visit(child);
  };
  for (const file of files) visit((JSON.parse(readFileSync(file, 'utf8')) as { head: HeapNode }).head);
  const per = (bytes: number): number => (requests === 0 ? 0 : Math.round(bytes / requests));
  return {
    files: files.length,
    requests,
    bytesPerRequest: per(total),
    top: [...self.values()].sort((a, b) => b.bytes - a.bytes).slice(0, limit).map((e) => ({ name: e.name, location: e.location, bytesPerRequest: per(e.bytes) })),
    areas: [...areas.entries()].sort((a, b) => b[1] - a[1]).slice(0, limit).map(([area, bytes]) => ({ area, bytesPerRequest: per(bytes) })),
  };
}
