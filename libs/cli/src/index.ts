/**
 * @rstar/cli: the `rstar` command (src/main.ts; `pnpm bench` lives in benchmarks/). It is an application:
 * nothing imports it; the logic it runs lives in the libs (standalone training in @rstar/training).
 */
export { ProgressPrinter } from './train/progress.printer';
