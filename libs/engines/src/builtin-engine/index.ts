export * from './builtin-engine.errors';
export * from './generation.scheduler';
export { startBuiltinEngine, type BuiltinEngine, type BuiltinEngineOptions } from './builtin-engine.server';
