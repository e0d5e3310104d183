export * from './trainer-worker.errors';
export * from './trainer-worker.client';
export * from './worker.trainer';
