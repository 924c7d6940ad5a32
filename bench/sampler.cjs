'use strict';
/**
 * Loaded into every process of a server under test by `npm run bench -- --profile` or `--alloc`
 * (node --require; cluster workers inherit it), so that only the measured load is sampled, not
 * start-up or warm-up. The first SIGUSR2 starts the sampling ($BENCH_SAMPLE = cpu: V8's CPU
 * profiler; alloc: its sampling heap profiler on every allocation, those the GC has collected
 * since included) and writes $BENCH_SAMPLE_DIR/<pid>.started once it runs; the second writes
 * <pid>.cpuprofile or <pid>.heapprofile there. Bench code only: src/ knows nothing of it.
 */
const { Session } = require('node:inspector');
const { renameSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');

const cpu = process.env.BENCH_SAMPLE === 'cpu';
const out = (extension) => join(process.env.BENCH_SAMPLE_DIR ?? '.', `${process.pid}.${extension}`);
/** Written whole, then renamed: the bench waits for the name, and must never read half a profile. */
function publish(extension, text) {
  writeFileSync(out(`${extension}.part`), text);
  renameSync(out(`${extension}.part`), out(extension));
}
const fail = (what) => (err) => process.stderr.write(`sampler: ${what}: ${err.message}\n`);
const session = new Session();
session.connect();

function start(done) {
  if (cpu) {
    session.post('Profiler.enable', () => session.post('Profiler.start', done));
    return;
  }
  const options = { samplingInterval: 1024, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true };
  session.post('HeapProfiler.enable', () => session.post('HeapProfiler.startSampling', options, done));
}

function stop(done) {
  session.post(cpu ? 'Profiler.stop' : 'HeapProfiler.stopSampling', done);
}

let sampling = false;
process.on('SIGUSR2', () => {
  if (!sampling) {
    sampling = true;
    start((err) => (err === null ? publish('started', '') : fail('sampling not started')(err)));
    return;
  }
  sampling = false;
  stop((err, result) => (err === null ? publish(cpu ? 'cpuprofile' : 'heapprofile', JSON.stringify(result.profile)) : fail('no profile')(err)));
});
