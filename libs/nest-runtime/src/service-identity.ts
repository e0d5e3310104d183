/** Injection token of the service's name (e.g. `tool-execution`), used in logs, health and client names. */
export const SERVICE_NAME = Symbol('SERVICE_NAME');
