export * from './until';
export * from './local-server.process';
