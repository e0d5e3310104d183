/** Injection token of the {@link Runtime} (bus + event store) the control plane serves. */
export const RUNTIME = Symbol('RUNTIME');
