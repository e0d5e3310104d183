export { Archiver, connectRuntime, type Runtime, type RuntimeOptions } from '@rstar/messaging';
export * from './tokens';
export * from './runs.controller';
export * from './health.controller';
export * from './control-plane.module';
export * from './control-plane.app';
