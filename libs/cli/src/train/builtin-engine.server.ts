import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PolicyError, type GenerateOptions, type GenerationResult, type PolicyModel } from '@rstar/policy';

/** Options of {@link startLocalBuiltinEngine}. */
export interface LocalEngineOptions {
  /** Loopback port; 0 (default) = a free one. */
  port?: number;
  /** Most requests decoded together in one batch (default 128). */
  maxBatch?: number;
  /** KV-cache capacity reported to the scheduler, in tokens (default 64 contexts of the model). */
  kvCapacityTokens?: number;
}

/** A running built-in engine: its base URL and how to stop it. */
export interface LocalEngine {
  url: string;
  /** Weight version loaded (the number of weight updates applied). */
  readonly updates: number;
  close(): Promise<void>;
}

interface Pending {
  inputIds: number[];
  opts: GenerateOptions;
  rid: string;
  resolve: (r: GenerationResult) => void;
  reject: (e: Error) => void;
}

/** A request the engine cannot serve; answered with HTTP 400 and this message. */
export class EngineRequestError extends Error {
  readonly code = 'engine_bad_request';
  constructor(message: string, readonly field: string) {
    super(message);
    this.name = 'EngineRequestError';
  }
}

function readBody(req: IncomingMessage): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const s = Buffer.concat(chunks).toString('utf8');
      try {
        resolve(s ? (JSON.parse(s) as Record<string, unknown>) : {});
      } catch {
        reject(new EngineRequestError('request body is not JSON', 'body'));
      }
    });
    req.on('error', reject);
  });
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const s = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(s) });
  res.end(s);
}

/**
 * The tiny built-in policy behind SGLang's native HTTP API (`POST /generate` with `input_ids`,
 * `sampling_params`, `return_logprob`; `GET /get_server_info` with `max_total_num_tokens`;
 * `POST /update_weights_from_disk {model_path}`; `POST /flush_cache`; `POST /abort_request {rid}`;
 * `GET /health`), so standalone training drives the policy through the real SGLang adapter
 * (ARCHITECTURE §5 policy-serving). Requests that arrive while a batch decodes are queued and decoded
 * together in the next batch (batched KV-cache sampling is ~50x cheaper per token than one row at a
 * time, POLICY-NOTES). A weight update waits for the running batch, so no rollout turn mixes versions.
 *
 * Written for `rstar train` while services/policy-serving's own built-in engine is not available; it
 * speaks the same API, so swapping it out changes no caller.
 */
export async function startLocalBuiltinEngine(model: PolicyModel, opts: LocalEngineOptions = {}): Promise<LocalEngine> {
  const queue: Pending[] = [];
  const aborted = new Set<string>();
  let busy: Promise<void> | null = null;
  let updates = 0;
  let closing = false;
  const maxBatch = opts.maxBatch ?? 128;
  const capacity = opts.kvCapacityTokens ?? model.config.context * 64;

  const pump = (): void => {
    if (busy || queue.length === 0 || closing) return;
    const batch = queue.splice(0, maxBatch);
    busy = (async () => {
      try {
        const rows = batch.map((p) => ({ ...p.opts, yieldEveryStep: true, isAborted: (row: number) => aborted.has(batch[row].rid) }));
        const out = await model.generate(batch.map((p) => p.inputIds), rows);
        batch.forEach((p, i) => p.resolve(out[i]));
      } catch (e) {
        batch.forEach((p) => p.reject(e as Error));
      } finally {
        batch.forEach((p) => aborted.delete(p.rid));
        busy = null;
        setImmediate(pump);
      }
    })();
  };

  const generate = async (body: Record<string, unknown>): Promise<unknown> => {
    const ids = body.input_ids;
    if (!Array.isArray(ids) || ids.length === 0 || !ids.every((x) => Number.isInteger(x))) {
      throw new EngineRequestError('input_ids must be a non-empty array of token ids', 'input_ids');
    }
    const sp = (body.sampling_params ?? {}) as Record<string, unknown>;
    const room = model.config.context - ids.length;
    if (room <= 0) throw new EngineRequestError(`input_ids has ${ids.length} tokens; the context is ${model.config.context}`, 'input_ids');
    const maxNew = Math.min(Number(sp.max_new_tokens ?? 64), room);
    model.checkSequences([ids as number[]], 'input_ids');
    const opts: GenerateOptions = {
      temperature: Number(sp.temperature ?? 1),
      topP: Number(sp.top_p ?? 1),
      seed: Number(sp.sampling_seed ?? 0),
      maxNewTokens: maxNew,
      stop: Array.isArray(sp.stop) ? (sp.stop as string[]) : undefined,
    };
    const rid = typeof body.rid === 'string' ? body.rid : `r${Math.random()}`;
    const r = await new Promise<GenerationResult>((resolve, reject) => {
      queue.push({ inputIds: ids as number[], opts, rid, resolve, reject });
      pump();
    });
    const text = model.tokenizer.decode(r.tokenIds);
    return {
      text,
      output_ids: r.tokenIds,
      meta_info: {
        finish_reason: { type: r.finishReason },
        prompt_tokens: ids.length,
        completion_tokens: r.tokenIds.length,
        output_token_logprobs: r.tokenIds.map((t, i) => [r.logprobs[i], t, null]),
      },
    };
  };

  const server: Server = createServer((req, res) => {
    void (async () => {
      try {
        const path = (req.url ?? '/').split('?')[0];
        if (path === '/health') return send(res, 200, { ok: true });
        if (path === '/get_server_info') return send(res, 200, { max_total_num_tokens: capacity, model_path: 'builtin', weight_updates: updates });
        if (req.method !== 'POST') return send(res, 404, { error: `no route ${req.method} ${path}` });
        const body = await readBody(req);
        if (path === '/generate') return send(res, 200, await generate(body));
        if (path === '/abort_request') {
          if (typeof body.rid === 'string') aborted.add(body.rid);
          return send(res, 200, { success: true });
        }
        if (path === '/flush_cache') return send(res, 200, { success: true });
        if (path === '/update_weights_from_disk') {
          const dir = body.model_path;
          if (typeof dir !== 'string' || !dir) throw new EngineRequestError('model_path must be a checkpoint directory', 'model_path');
          while (busy) await busy;
          await model.loadWeightsFrom(dir);
          updates++;
          return send(res, 200, { success: true, message: `loaded ${dir}` });
        }
        return send(res, 404, { error: `no route POST ${path}` });
      } catch (e) {
        const status = e instanceof EngineRequestError || e instanceof PolicyError ? 400 : 500;
        send(res, status, { error: (e as Error).message, success: false, message: (e as Error).message });
      }
    })();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    get updates() {
      return updates;
    },
    close: async () => {
      closing = true;
      for (const p of queue.splice(0)) p.reject(new Error('engine closed'));
      if (busy) await busy.catch(() => undefined);
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
