'use strict';
/**
 * Loaded into every gateway process by `npm run bench -- --alloc` (node --require; cluster workers
 * inherit it): the first SIGUSR2 starts V8's sampling heap profiler on every allocation, those the
 * GC has collected since included, and writes $BENCH_ALLOC_DIR/<pid>.started once it runs; the
 * second writes the profile to $BENCH_ALLOC_DIR/<pid>.heapprofile. Bench code only: src/ knows
 * nothing of it.
 */
const { Session } = require('node:inspector');
const { writeFileSync } = require('node:fs');
const { join } = require('node:path');

const out = (extension) => join(process.env.BENCH_ALLOC_DIR ?? '.', `${process.pid}.${extension}`);
const session = new Session();
session.connect();
let sampling = false;
process.on('SIGUSR2', () => {
  if (!sampling) {
    sampling = true;
    session.post('HeapProfiler.enable', () =>
      session.post('HeapProfiler.startSampling', { samplingInterval: 1024, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true }, (err) => {
        if (err === null) writeFileSync(out('started'), '');
        else process.stderr.write(`alloc-sampler: sampling not started: ${err.message}\n`);
      }),
    );
    return;
  }
  sampling = false;
  session.post('HeapProfiler.stopSampling', (err, result) => {
    if (err === null) writeFileSync(out('heapprofile'), JSON.stringify(result.profile));
    else process.stderr.write(`alloc-sampler: no profile: ${err.message}\n`);
  });
});
