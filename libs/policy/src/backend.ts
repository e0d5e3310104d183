import * as tf from '@tensorflow/tfjs';

let ready: Promise<string> | null = null;

/**
 * Select the tfjs backend once per process: `wasm` (SIMD on, threads off in Node; POLICY-NOTES: the
 * pure-JS `cpu` backend is ~30x slower for training), falling back to `cpu` when wasm cannot start.
 * Resolves to the backend name in use. `RSTAR_TF_BACKEND=cpu` forces the fallback.
 */
export function initBackend(): Promise<string> {
  if (!ready) {
    ready = (async () => {
      if (process.env.RSTAR_TF_BACKEND !== 'cpu') {
        try {
          // Lazy: registering the wasm backend loads its binary, only needed once a model is built.
          await import('@tensorflow/tfjs-backend-wasm');
          if (await tf.setBackend('wasm')) {
            await tf.ready();
            return 'wasm';
          }
        } catch {
          // fall through to cpu: wasm binary missing or not loadable on this platform
        }
      }
      await tf.setBackend('cpu');
      await tf.ready();
      return 'cpu';
    })();
  }
  return ready;
}
