export * from './bus-tool.executor';
export * from './policy-version.gate';
export * from './policy-serving.handler';
export * from './rollout.batch';
export * from './policy.follower';
export * from './turn.journal';
export * from './engine-tokenizer.check';
export * from './partial-rollout.session';
