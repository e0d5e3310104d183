export * from './until';
export * from './trackers.env';
