/** One RFC 4180 line of an export (the tests' rows hold no line breaks inside fields). */
export function parseCsvLine(line: string): string[] {
  const out: string[] = [];
  const re = /(?:^|,)(?:"((?:[^"]|"")*)"|([^,]*))/g;
  for (let m = re.exec(line); m !== null && m.index < line.length; m = re.exec(line)) {
    out.push(m[1] !== undefined ? m[1].replace(/""/g, '"') : (m[2] ?? ''));
    if (re.lastIndex === m.index) re.lastIndex += 1;
  }
  return out;
}
