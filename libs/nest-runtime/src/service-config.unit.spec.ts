import { describe, expect, it } from 'vitest';
import { baseServiceEnv, parseServiceEnv, ServiceConfigError } from './service-config';

describe('baseServiceEnv: the stream settings of a NATS cluster', () => {
  const schema = baseServiceEnv(3000);

  it('parses RSTAR_STREAM_REPLICAS and RSTAR_STREAM_MAX_BYTES, unset or empty = not given', () => {
    expect(parseServiceEnv(schema, { RSTAR_STREAM_REPLICAS: '3', RSTAR_STREAM_MAX_BYTES: '150000000000' })).toMatchObject({ RSTAR_STREAM_REPLICAS: 3, RSTAR_STREAM_MAX_BYTES: 150_000_000_000 });
    const none = parseServiceEnv(schema, { RSTAR_STREAM_REPLICAS: '' });
    expect(none.RSTAR_STREAM_REPLICAS).toBeUndefined();
    expect(none.RSTAR_STREAM_MAX_BYTES).toBeUndefined();
  });

  it('refuses a bad value naming the variable and the fix', () => {
    for (const [name, value] of [['RSTAR_STREAM_REPLICAS', '7'], ['RSTAR_STREAM_REPLICAS', 'x'], ['RSTAR_STREAM_MAX_BYTES', '-5']]) {
      let err: unknown;
      try {
        parseServiceEnv(schema, { [name]: value });
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ServiceConfigError);
      expect((err as ServiceConfigError).field).toBe(name);
      expect((err as Error).message).toMatch(new RegExp(`^${name} is "${value}": .*; set it to `));
    }
  });
});
