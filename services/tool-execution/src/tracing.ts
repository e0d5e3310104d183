import { startTracing } from '@rstar/telemetry';

// Imported first by main.ts: OpenTelemetry's instrumentations patch http, express and pg as they load.
startTracing('tool-execution');
