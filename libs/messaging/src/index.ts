export * from './bus.port';
export * from './subjects';
export * from './backoff';
export * from './delivery';
export * from './in-process.bus';
export * from './jetstream.bus';
export * from './archiver';
export * from './runtime';
