export * from './hf-sft.traces';
export * from './hf-sft.runner';
export * from './tokenizer.check';
export * from './hf-run.launcher';
export * from './hf-tiny.model';
export * from './hf-training.run';
