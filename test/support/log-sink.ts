import { Writable } from 'node:stream';

/** A logger destination that keeps every line, for tests that read what was logged. */
export function logSink(): { readonly logs: string[]; readonly destination: Writable } {
  const logs: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      logs.push(chunk.toString('utf8'));
      callback();
    },
  });
  return { logs, destination };
}
