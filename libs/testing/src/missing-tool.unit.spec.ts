import { afterEach, describe, expect, it, vi } from 'vitest';
import { skipUnlessCi } from './missing-tool';

describe('skipUnlessCi', () => {
  const ci = process.env.CI;
  afterEach(() => {
    if (ci === undefined) delete process.env.CI;
    else process.env.CI = ci;
    vi.restoreAllMocks();
  });

  it('runs the suite when the tool is installed', () => {
    expect(skipUnlessCi(null)).toBe(false);
  });

  it('skips with a warning naming the install command outside CI', () => {
    delete process.env.CI;
    const write = vi.spyOn(process.stderr, 'write').mockReturnValue(true);
    expect(skipUnlessCi('Kafka is not installed: run bash infra/local/install-kafka.sh')).toBe(true);
    expect(String(write.mock.calls[0][0])).toContain('install-kafka.sh');
  });

  it('never skips in CI, so the suite fails where it starts the missing tool', () => {
    process.env.CI = 'true';
    expect(skipUnlessCi('Jaeger is not installed')).toBe(false);
  });
});
