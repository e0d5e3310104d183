export * from './until';
