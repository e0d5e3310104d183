export * from './hf-tiny.model';
export * from './hf-training.run';
