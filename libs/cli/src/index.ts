/**
 * @rstar/cli: the `rstar` command (src/main.ts) and `pnpm bench` (src/bench.ts). It is an application:
 * nothing imports it; the logic it runs lives in the libs (standalone training in @rstar/training).
 */
export { ProgressPrinter } from './train/progress.printer';
