import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

/** Runs startTracing in a fresh process (it starts once per process) and reports whether http got patched. */
function patchedAfterStart(env: Record<string, string>): { enabled: boolean; httpPatched: boolean } {
  const script = `
    const { startTracing } = require(${JSON.stringify(resolve(__dirname, 'tracing.ts'))});
    const h = startTracing('tracing-disabled-test');
    const http = require('node:http');
    process.stdout.write(JSON.stringify({ enabled: h.enabled, httpPatched: Boolean(http.request.__wrapped || http.Server.prototype.emit.__wrapped) }));
    void h.shutdown().then(() => process.exit(0));
  `;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '-e', script], {
    env: { ...process.env, OTEL_TRACES_EXPORTER: 'none', ...env },
    encoding: 'utf8',
    timeout: 120_000,
  });
  if (r.status !== 0) throw new Error(`child failed (${r.status}): ${r.stderr}`);
  return JSON.parse(r.stdout) as { enabled: boolean; httpPatched: boolean };
}

describe('startTracing with OTEL_SDK_DISABLED', () => {
  it('patches nothing when disabled, and patches http when enabled (the control)', () => {
    expect(patchedAfterStart({ OTEL_SDK_DISABLED: 'true' })).toEqual({ enabled: false, httpPatched: false });
    expect(patchedAfterStart({ OTEL_SDK_DISABLED: 'false' })).toEqual({ enabled: true, httpPatched: true });
  });
});
