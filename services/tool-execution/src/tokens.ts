/** Nest injection tokens (explicit: tsx drops decorator metadata). */
export const SANDBOX_POOL = Symbol('SANDBOX_POOL');
export const TOOL_METRICS = Symbol('TOOL_METRICS');
