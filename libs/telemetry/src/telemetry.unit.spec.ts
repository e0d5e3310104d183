import { describe, expect, it } from 'vitest';
import { childTraceparent, counter, createLogger, metricsRegistry, parseTraceparent } from './index';

describe('telemetry', () => {
  it('logs one JSON object per line with component, level filter, child fields and flattened errors', () => {
    const lines: string[] = [];
    const log = createLogger('comp', { level: 'info', write: (l) => lines.push(l) }).child({ consumer: 'c1' });
    log.debug('hidden');
    log.warn('boom', { err: Object.assign(new Error('bad'), { code: 'x_code' }) });
    expect(lines).toHaveLength(1);
    const rec = JSON.parse(lines[0]);
    expect(rec).toMatchObject({ level: 'warn', component: 'comp', consumer: 'c1', msg: 'boom', err: { name: 'Error', message: 'bad', code: 'x_code' } });
  });

  it('continues a trace with a new span, starts one when there is none, rejects malformed headers', () => {
    const parent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const child = parseTraceparent(childTraceparent(parent))!;
    expect(child.traceId).toBe('0af7651916cd43dd8448eb211c80319c');
    expect(child.spanId).not.toBe('b7ad6b7169203331');
    expect(parseTraceparent(childTraceparent(null))).not.toBeNull();
    expect(parseTraceparent('00-00000000000000000000000000000000-b7ad6b7169203331-01')).toBeNull();
    expect(parseTraceparent('garbage')).toBeNull();
  });

  it('get-or-creates metrics on the shared registry', async () => {
    const a = counter('rstar_test_total', 'test', ['k']);
    const b = counter('rstar_test_total', 'test', ['k']);
    expect(a).toBe(b);
    a.inc({ k: 'v' }, 2);
    expect(await metricsRegistry.metrics()).toContain('rstar_test_total{k="v"} 2');
  });
});
