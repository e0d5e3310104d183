export * from './archiver';
export * from './runtime';
