export * from './workers.errors';
export * from './workers.python';
export * from './python.process';
export * from './worker.launchers';
export * from './trainer-worker.errors';
export * from './trainer-worker.client';
