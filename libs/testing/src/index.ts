export * from './until';
export * from './sample-events';
