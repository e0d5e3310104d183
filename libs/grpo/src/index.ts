export * from './errors';
export * from './prng';
export * from './roc-penalties';
export * from './roc.resampler';
export * from './advantages';
export * from './clipped-loss';
export * from './training-batch.builder';
export * from './batch-v2.writer';
