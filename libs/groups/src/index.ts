export * from './group.collector';
export * from './resampling.handler';
