export * from './bus.port';
