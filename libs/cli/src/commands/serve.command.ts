import type { Command } from 'commander';
import { startBuiltinEngine } from '@rstar/engines';
import { securityFromEnv } from '@rstar/security';
import { CliInputError } from '../cli.errors';

/**
 * `rstar serve engine --port P [--checkpoint DIR] [--kv-capacity TOKENS]`: the built-in policy behind
 * SGLang's HTTP API (+ vLLM's `/v1/completions`), until SIGINT/SIGTERM. With bearer tokens
 * (`RSTAR_API_TOKENS[_FILE]` or `RSTAR_SECRETS_DIR`) its routes need them: admin routes `admin`,
 * generation `execute`, information `read` (health and metrics stay open); without, it warns that it is open.
 */
export function register(program: Command): void {
  const serve = program.command('serve').description('run a server');
  serve
    .command('engine')
    .description('serve the built-in policy over an SGLang-compatible HTTP API')
    .option('--port <n>', 'TCP port (SGLang\'s default)', '30000')
    .option('--host <addr>', 'bind address', '127.0.0.1')
    .option('--checkpoint <dir>', 'checkpoint to serve (default: a freshly initialised model; a distributed run pushes its own start weights to every engine before its first step)')
    .option('--kv-capacity <tokens>', 'KV-cache capacity in tokens (max_total_num_tokens)', '16384')
    .option('--seed <n>', 'init seed when no checkpoint is given', '0')
    .action(async (o: { port: string; host: string; checkpoint?: string; kvCapacity: string; seed: string }) => {
      const port = Number(o.port);
      const kv = Number(o.kvCapacity);
      if (!Number.isInteger(port) || port < 0 || port > 65535) throw new CliInputError(`--port must be an integer in [0, 65535], got "${o.port}"`);
      if (!Number.isInteger(kv) || kv <= 0) throw new CliInputError(`--kv-capacity must be a positive integer number of tokens, got "${o.kvCapacity}"`);
      const seed = Number(o.seed);
      if (!Number.isInteger(seed) || seed < 0) throw new CliInputError(`--seed must be a non-negative integer, got "${o.seed}"`);
      const { apiTokens } = securityFromEnv(process.env, 'engine');
      if (apiTokens.size === 0) process.stderr.write('rstar serve engine: WARNING: no API tokens (RSTAR_API_TOKENS_FILE): every route, weight reloads included, is open to anyone who reaches the port\n');
      const eng = await startBuiltinEngine({ port, host: o.host, checkpointDir: o.checkpoint, kvCapacityTokens: kv, seed, apiTokens });
      process.stdout.write(`built-in engine on ${eng.url} (${eng.model.numParams} parameters, KV capacity ${kv} tokens, checkpoint ${o.checkpoint ?? 'none'})\n`);
      await new Promise<void>((resolve) => {
        process.once('SIGINT', resolve);
        process.once('SIGTERM', resolve);
      });
      await eng.close();
    });
}
