export * from './until';
export * from './sample-events';
export * from './local-server.process';
export * from './missing-tool';
export * from './trackers.env';
export * from './process.helpers';
export * from './nats-server.process';
export * from './synthetic-run.generator';
