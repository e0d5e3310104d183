import { activeTraceIds } from './trace-context';

/** Log levels in increasing severity. */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
const LEVELS: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

/**
 * A structured logger: one JSON object per line, `{ts, level, component, msg, traceId?, spanId?, ...fields}`;
 * `traceId`/`spanId` name the span active when the line is written (OpenTelemetry), so a log line leads to its trace.
 */
export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  /** A logger whose lines also carry `fields` (e.g. `{consumer: 'archiver'}`). */
  child(fields: Record<string, unknown>): Logger;
}

export interface LoggerOptions {
  /** Minimum level written (default `RSTAR_LOG_LEVEL` or `info`). */
  level?: LogLevel;
  /** Where lines go (default: stderr, so stdout stays free for command output). */
  write?: (line: string) => void;
  fields?: Record<string, unknown>;
}

/**
 * Create a JSON-lines logger for `component`. Errors in `fields.err` are flattened to
 * `{name, message, code}` so a log line stays one line.
 */
export function createLogger(component: string, opts: LoggerOptions = {}): Logger {
  const envLevel = process.env.RSTAR_LOG_LEVEL as LogLevel | undefined;
  const min = LEVELS[opts.level ?? (envLevel && envLevel in LEVELS ? envLevel : 'info')];
  const write = opts.write ?? ((line: string) => process.stderr.write(line + '\n'));
  const base = { component, ...opts.fields };
  const emit = (level: LogLevel, msg: string, fields?: Record<string, unknown>): void => {
    if (LEVELS[level] < min) return;
    const rec: Record<string, unknown> = { ts: new Date().toISOString(), level, ...base, msg, ...activeTraceIds() };
    for (const [k, v] of Object.entries(fields ?? {})) rec[k] = v instanceof Error ? flattenError(v) : v;
    write(JSON.stringify(rec));
  };
  return {
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
    child: (fields) => createLogger(component, { ...opts, level: opts.level, write, fields: { ...opts.fields, ...fields } }),
  };
}

function flattenError(e: Error): Record<string, unknown> {
  const code = (e as { code?: unknown }).code;
  return { name: e.name, message: e.message, ...(code !== undefined ? { code } : {}) };
}
