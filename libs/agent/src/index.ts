export * from './template';
export * from './agent.errors';
export * from './ports';
export * from './tool-call.parser';
export * from './tool-response.formatter';
export * from './rollout.state';
export * from './rollout.runner';
export * from './char.tokenizer';
