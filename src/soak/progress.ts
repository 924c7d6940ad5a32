/**
 * A plain progress bar on stderr: redrawn in place on a terminal, a line per tenth otherwise
 * (a log file or a test's captured output).
 */
export class ProgressBar {
  private done = 0;
  private lastDraw = 0;
  private lastTenth = -1;

  constructor(
    private readonly total: number,
    private readonly label: string,
    private readonly stream: NodeJS.WriteStream = process.stderr,
  ) {}

  get fraction(): number {
    return this.total === 0 ? 1 : this.done / this.total;
  }

  tick(): void {
    this.done += 1;
    const now = Date.now();
    if (this.stream.isTTY) {
      if (now - this.lastDraw < 100 && this.done < this.total) return;
      this.lastDraw = now;
      const width = 30;
      const filled = Math.round(this.fraction * width);
      this.stream.write(`\r${this.label} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${this.done}/${this.total}`);
      if (this.done >= this.total) this.stream.write('\n');
      return;
    }
    const tenth = Math.floor(this.fraction * 10);
    if (tenth !== this.lastTenth) {
      this.lastTenth = tenth;
      this.stream.write(`${this.label}: ${this.done}/${this.total}\n`);
    }
  }
}
