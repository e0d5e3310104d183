import { describe, expect, it } from 'vitest';
import { makeEvent } from '@rstar/contracts';
import { dedupeId, eventIdOfMsgId } from './dedupe-id';

const ev = (error: string, producer = 'optimization') => makeEvent('RunFailed', { runId: 'r', streamId: 'run-r', key: 'r', producer, data: { error } });

describe('dedupeId: the Nats-Msg-Id of an event', () => {
  it('is the same for copies that differ only in meta, and differs for another content under the same id', () => {
    const a = ev('boom');
    const again = { ...ev('boom', 'someone-else'), meta: { ...a.meta, traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' } };
    expect(dedupeId('rstar.run.failed', again)).toBe(dedupeId('rstar.run.failed', a));
    expect(dedupeId('rstar.run.failed', ev('other'))).not.toBe(dedupeId('rstar.run.failed', a));
    expect(dedupeId('rstar.tool.completed', a)).not.toBe(dedupeId('rstar.run.failed', a));
    expect(dedupeId('rstar.run.failed', a)).toMatch(/^rstar\.run\.failed\|RunFailed:r\|sha256:[A-Za-z0-9_-]{43}$/);
  });

  it('gives back the event id for logs and dead letters, also of a raw publish', () => {
    expect(eventIdOfMsgId(dedupeId('rstar.run.failed', ev('x')))).toBe('RunFailed:r');
    expect(eventIdOfMsgId('rstar.tool.completed|ToolCallCompleted:a:b')).toBe('ToolCallCompleted:a:b');
    expect(eventIdOfMsgId(null)).toBe('');
  });
});
