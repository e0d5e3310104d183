import { SingleBar, Presets } from 'cli-progress';
import { stepSummaryLine, type TrainProgress } from '@rstar/training';

/**
 * Renders {@link TrainProgress}: a progress bar per phase (SFT traces, SFT, evaluations) when stderr is a TTY,
 * otherwise a line every 10% of a phase; always one summary line per RL step on stdout.
 */
export class ProgressPrinter {
  private bar: SingleBar | null = null;
  private phase = '';
  private lastPct = -1;

  constructor(private readonly tty = !!process.stderr.isTTY) {}

  readonly onProgress = (p: TrainProgress): void => {
    switch (p.phase) {
      case 'message':
        this.end();
        process.stdout.write(`${p.text}\n`);
        return;
      case 'sft':
        return this.tick('sft', p.step, p.steps, `loss ${p.loss.toFixed(3)}`);
      case 'sft-traces':
        return this.tick('sft traces', p.done, p.total, '');
      case 'eval-before':
      case 'eval-after':
        return this.tick(p.phase, p.done, p.total, '');
      case 'rl':
        this.end();
        process.stdout.write(`${stepSummaryLine(p)}\n`);
        return;
    }
  };

  private tick(phase: string, value: number, total: number, info: string): void {
    if (phase !== this.phase) {
      this.end();
      this.phase = phase;
      this.lastPct = -1;
      if (this.tty) {
        this.bar = new SingleBar({ format: `${phase.padEnd(12)} [{bar}] {value}/{total} {info}`, hideCursor: true, stream: process.stderr }, Presets.shades_classic);
        this.bar.start(total, 0, { info: '' });
      }
    }
    if (this.bar) {
      this.bar.setTotal(total);
      this.bar.update(value, { info });
    } else {
      const pct = Math.floor((value / Math.max(1, total)) * 10);
      if (pct !== this.lastPct) {
        this.lastPct = pct;
        process.stderr.write(`${phase} ${value}/${total} ${info}\n`);
      }
    }
  }

  /** Close the current bar (before printing a line or at the end). */
  end(): void {
    this.bar?.stop();
    this.bar = null;
    this.phase = '';
  }
}
