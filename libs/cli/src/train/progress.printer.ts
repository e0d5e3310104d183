import { SingleBar, Presets } from 'cli-progress';
import { fmtDuration, STEP_LINE_LEGEND, stepSummaryLine, type TrainProgress } from '@rstar/training-report';

/**
 * Renders {@link TrainProgress}: a progress bar per phase (SFT traces, SFT, evaluations) with elapsed time
 * and ETA when stderr is a TTY, otherwise a line every 10% of a phase with the same figures; one summary
 * line per RL step on stdout (0-based steps, with the time left for the RL steps), preceded once by the
 * legend of its fields.
 */
export class ProgressPrinter {
  private bar: SingleBar | null = null;
  private phase = '';
  private lastPct = -1;
  private phaseStart = 0;
  private legendShown = false;
  private rlStart = 0;
  private rlDone = 0;

  constructor(
    private readonly tty = !!process.stderr.isTTY,
    private readonly out: (s: string) => void = (s) => void process.stdout.write(s),
    private readonly err: NodeJS.WritableStream = process.stderr,
    private readonly now: () => number = Date.now,
  ) {}

  readonly onProgress = (p: TrainProgress): void => {
    switch (p.phase) {
      case 'message':
        this.end();
        this.out(`${p.text}\n`);
        return;
      case 'sft':
        return this.tick('sft', p.step, p.steps, `loss ${p.loss.toFixed(3)}`);
      case 'sft-traces':
        return this.tick('sft traces', p.done, p.total, '');
      case 'eval-before':
      case 'eval-after':
        return this.tick(p.phase, p.done, p.total, '');
      case 'rl': {
        this.end();
        if (!this.legendShown) {
          this.legendShown = true;
          this.out(`${STEP_LINE_LEGEND}\n`);
        }
        // ETA from the mean wall time of the steps this process ran (a resumed run starts counting anew).
        if (this.rlDone === 0) this.rlStart = this.now() - (p.metrics.timeStepMs ?? 0);
        this.rlDone++;
        const left = p.steps - 1 - p.step;
        const eta = left > 0 ? ((this.now() - this.rlStart) / 1000 / this.rlDone) * left : 0;
        this.out(`${stepSummaryLine(p, eta)}\n`);
        return;
      }
    }
  };

  private tick(phase: string, value: number, total: number, info: string): void {
    if (phase !== this.phase) {
      this.end();
      this.phase = phase;
      this.lastPct = -1;
      this.phaseStart = this.now();
      if (this.tty) {
        this.bar = new SingleBar(
          { format: `${phase.padEnd(12)} [{bar}] {value}/{total} | {duration_formatted} elapsed | ETA {eta_formatted} {info}`, hideCursor: true, stream: this.err, etaBuffer: 50 },
          Presets.shades_classic,
        );
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
        const elapsed = (this.now() - this.phaseStart) / 1000;
        const eta = value > 0 ? (elapsed / value) * (total - value) : null;
        this.err.write(`${phase} ${value}/${total} | ${fmtDuration(elapsed)} elapsed | ETA ${eta === null ? '-' : fmtDuration(eta)}${info ? ` | ${info}` : ''}\n`);
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
