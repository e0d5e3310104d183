/** tool-execution service: the sandbox behind HTTP, NATS request/reply and the event bus. */
export { ToolExecutionHandler, type ToolExecutionHandlerOptions } from './tool-execution.handler';
export { NatsExecuteResponder, TOOL_EXECUTE_SUBJECT, TOOL_EXECUTE_QUEUE } from './nats-execute.responder';
export { ToolExecutionMetrics, executeMeasured } from './tool-execution.metrics';
export { startToolExecution, type ToolExecution, type ToolExecutionOptions } from './tool-execution.app';
export { ExecuteController, MAX_BATCH } from './execute.controller';
