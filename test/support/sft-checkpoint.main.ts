/**
 * Trains the default test SFT checkpoint into `.rstar/cache/` unless it is cached (ensureSftCheckpoint: the
 * same lock, so test files that need it wait for this process instead of training it themselves). Started
 * in the background by the test sequencer (test/sequencer.mts) when a run includes a file that needs it;
 * runnable by hand too: `node --import tsx test/support/sft-checkpoint.main.ts`. Exit code 1 on failure,
 * with the error on stderr (a test file that then calls ensureSftCheckpoint trains it and reports the error).
 */
import { ensureSftCheckpoint } from './sft-checkpoint';

const t0 = Date.now();
ensureSftCheckpoint().then(
  (dir) => {
    process.stdout.write(`sft-checkpoint: ${dir} ready after ${((Date.now() - t0) / 1000).toFixed(0)} s\n`);
    process.exit(0);
  },
  (e: Error) => {
    process.stderr.write(`sft-checkpoint: ${e.stack ?? e.message}\n`);
    process.exit(1);
  },
);
