export * from './trainer-worker.errors';
export * from './trainer-worker.client';
export * from './worker.trainer';
export * from './worker-checkpoint.checker';
