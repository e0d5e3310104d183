export * from './until';
export * from './local-server.process';
export * from './missing-tool';
