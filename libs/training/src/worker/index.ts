export * from './worker-checkpoint.checker';
