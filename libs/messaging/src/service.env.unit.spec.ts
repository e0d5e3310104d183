import { describe, expect, it } from 'vitest';
import { jetStreamOptionsFromEnv, streamMaxBytesFromEnv, streamReplicasFromEnv } from './service.env';

describe('the bus settings from the environment', () => {
  it('reads a cluster: several servers, the stream replicas and its size bound', () => {
    const o = jetStreamOptionsFromEnv('svc', {
      RSTAR_NATS_URL: 'nats://a:4222,nats://b:4222,nats://c:4222', RSTAR_STREAM_REPLICAS: '3', RSTAR_STREAM_MAX_BYTES: '150000000000',
    });
    expect(o).toMatchObject({ servers: 'nats://a:4222,nats://b:4222,nats://c:4222', replicas: 3, maxBytes: 150_000_000_000, name: 'svc' });
  });

  it('leaves replicas and the bound unset when the variables are unset or empty', () => {
    expect(streamReplicasFromEnv({})).toBeUndefined();
    expect(streamReplicasFromEnv({ RSTAR_STREAM_REPLICAS: '' })).toBeUndefined();
    expect(streamMaxBytesFromEnv({})).toBeUndefined();
  });

  it('refuses bad values with the variable named and the fix', () => {
    for (const bad of ['0', '6', '2.5', 'three']) expect(() => streamReplicasFromEnv({ RSTAR_STREAM_REPLICAS: bad })).toThrow(/RSTAR_STREAM_REPLICAS is ".*": must be an integer 1\.\.5/);
    for (const bad of ['-1', '0', '1e400', '10GB']) expect(() => streamMaxBytesFromEnv({ RSTAR_STREAM_MAX_BYTES: bad })).toThrow(/RSTAR_STREAM_MAX_BYTES is ".*": must be a positive integer of bytes/);
  });
});
