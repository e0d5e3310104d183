export * from './logger';
export * from './metrics';
export * from './traceparent';
