export * from './group.collector';
export * from './resampling.handler';
export * from './archive.source';
