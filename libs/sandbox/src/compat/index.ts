/**
 * Drop-in request/response mapping for the services RL frameworks call today: SandboxFusion's
 * `POST /run_code` (verl's sandbox tool) and code-judge's `POST /run`, `/run/batch`, `/run/long-batch`
 * (rStar2's tool). Pure functions and zod schemas; the HTTP routes live in services/tool-execution.
 */
export * from './sandbox-fusion.compat';
export * from './code-judge.compat';
export { invalidFromZod } from './compat.errors';
