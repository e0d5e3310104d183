/** Nest injection tokens (explicit: tsx drops decorator metadata). */
export const SANDBOX_POOL = Symbol('SANDBOX_POOL');
export const TOOL_METRICS = Symbol('TOOL_METRICS');
/** The drop-in routes' defaults (`DropInRouteDefaults`), from the service's settings. */
export const DROP_IN_DEFAULTS = Symbol('DROP_IN_DEFAULTS');
