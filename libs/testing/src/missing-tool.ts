/**
 * Whether a suite that needs an installed tool (Jaeger, Kafka) should be skipped: only on a developer's
 * machine. Under CI (`CI=true`) it returns false, so the suite runs and fails loudly where it starts the
 * tool (its start function throws the same message), since CI's setup.sh must have installed it.
 * @param missing why the tool cannot run here (e.g. {@link jaegerMissing}), or null when it can.
 * @returns true to skip (and a warning on stderr naming the install command), false to run.
 */
export function skipUnlessCi(missing: string | null): boolean {
  if (!missing) return false;
  if (process.env.CI === 'true' || process.env.CI === '1') return false;
  process.stderr.write(`skipping (not in CI): ${missing}\n`);
  return true;
}
