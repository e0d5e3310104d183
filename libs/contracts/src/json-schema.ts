import { z } from 'zod';
import { EVENT_CONTRACTS, EVENT_TYPES } from './events';
import { RunConfigSchema } from './run-config';

/** JSON Schema of every event's data (keyed `<type>@v<version>`) and of the run config, for review snapshots. */
export function exportJsonSchemas(): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const t of EVENT_TYPES) {
    const c = EVENT_CONTRACTS[t];
    out[`${t}@v${c.version}`] = { subject: c.subject, data: z.toJSONSchema(c.data, { io: 'input' }) };
  }
  out['RunConfig'] = z.toJSONSchema(RunConfigSchema, { io: 'input' });
  return out;
}
