/**
 * @rstar/cli: the `rstar` command (src/main.ts; `pnpm bench` lives in benchmarks/). It is an application:
 * nothing imports it; the logic it runs lives in the libs (standalone training in @rstar/training).
 */
export { ProgressPrinter } from './train/progress.printer';
export { checkGpuOverlays, GPU_OVERLAYS, kustomizeCommand, OverlayMismatchError, overlayProblems, PATH_READERS, renderOverlay, SERVICE_APP_ROOT, type RenderedObject } from './train/overlay.check';
