export * from './ports';
export * from './step.plan';
export * from './step.metrics';
export * from './run.resume';
export * from './step.collector';
export * from './optimization.handler';
export * from './builtin.trainer';
export * from './step.prometheus';
