import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';

/**
 * Vitest global setup: make sure the real Postgres and NATS servers that the integration tests use are
 * running (infra/local/start.sh starts them on loopback when they do not answer), and export their URLs.
 * Tests never mock them.
 */
export default function setup(): void {
  if (process.env.RSTAR_TEST_SKIP_INFRA === '1') return;
  const out = execFileSync('bash', [resolve(__dirname, '../infra/local/start.sh')], { encoding: 'utf8' });
  for (const line of out.split('\n')) {
    const m = /^export (\w+)=(.*)$/.exec(line.trim());
    if (m && !process.env[m[1]]) process.env[m[1]] = m[2];
  }
}
