export * from './envelope';
export * from './events';
export * from './ids';
export * from './errors';
export * from './codec';
export * from './upcast';
export * from './run-config';
export * from './json-schema';
