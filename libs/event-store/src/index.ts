export * from './errors';
export * from './migrations';
export * from './position';
export * from './event-store';
export * from './pglite.server';
export * from './copy-append';
export * from './append.plan';
export * from './hash-chain';
