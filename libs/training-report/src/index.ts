export * from './run.report';
export * from './ablation.report';
export * from './svg.plot';
export * from './step-summary.line';
export * from './run.result';
