export { ToolExecutionHandler, type ToolExecutionHandlerOptions } from './tool-execution.handler';
export { NatsExecuteResponder, TOOL_EXECUTE_SUBJECT, TOOL_EXECUTE_QUEUE } from './nats-execute.responder';
export { ToolExecutionMetrics, executeMeasured } from './tool-execution.metrics';
