import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ModelConfig } from '@rstar/contracts';
import { PolicyError, PolicyModel, type GenerationResult } from '@rstar/policy';
import { BuiltinEngineError, EngineRequestError } from './builtin-engine.errors';
import { createEngineMetrics } from './builtin-engine.metrics';
import { GenerationScheduler, type ScheduledRequest } from './generation.scheduler';
import type { ApiTokenSet } from '@rstar/security';
import { authorizeEngineRequest } from './engine-route.scopes';

/** Options of {@link startBuiltinEngine}. */
export interface BuiltinEngineOptions {
  /** TCP port (0 = any free port). */
  port: number;
  host?: string;
  /** Checkpoint to serve; without it a fresh model is created from `modelConfig` and `seed`. */
  checkpointDir?: string;
  modelConfig?: Partial<ModelConfig>;
  /** KV-cache capacity in tokens (`max_total_num_tokens`); requests reserve prompt + max_new_tokens. */
  kvCapacityTokens: number;
  seed?: number;
  /** How long the first request of a batch waits for company, ms. Default 5. */
  batchWindowMs?: number;
  maxBatch?: number;
  /** Served model name (`/v1/models`); default the checkpoint directory or `rstar-builtin`. */
  modelName?: string;
  /**
   * Bearer tokens the engine accepts (constant-time check; scopes per route in `ENGINE_ROUTE_SCOPES`:
   * admin routes `admin`, generation `execute`, information `read`; health and metrics open). None or
   * empty = open, as in standalone runs where only this process reaches it.
   */
  apiTokens?: ApiTokenSet;
}

/** A running engine: its base URL, the model and scheduler (for in-process use), and `close()`. */
export interface BuiltinEngine {
  url: string;
  port: number;
  model: PolicyModel;
  scheduler: GenerationScheduler;
  close(): Promise<void>;
}

type Json = Record<string, unknown>;

async function readJson(req: IncomingMessage): Promise<Json> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const raw = Buffer.concat(chunks).toString('utf8');
  if (raw.trim() === '') return {};
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch (e) {
    throw new EngineRequestError(`body is not a JSON object (${(e as Error).message})`, 'body');
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new EngineRequestError('body is not a JSON object (not an object)', 'body');
  return v as Json;
}

function send(res: ServerResponse, status: number, body: unknown, type = 'application/json'): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

const num = (v: unknown, field: string, dflt: number, check: (x: number) => boolean, hint: string): number => {
  if (v === undefined || v === null) return dflt;
  if (typeof v !== 'number' || !Number.isFinite(v) || !check(v)) throw new EngineRequestError(`${field} must be ${hint}, got ${JSON.stringify(v)}`, field);
  return v;
};

const strList = (v: unknown, field: string): string[] => {
  if (v === undefined || v === null) return [];
  const arr = typeof v === 'string' ? [v] : v;
  if (!Array.isArray(arr) || arr.some((s) => typeof s !== 'string')) throw new EngineRequestError(`${field} must be a string or a list of strings`, field);
  return arr as string[];
};

const idList = (v: unknown, field: string): number[] => {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || v.some((x) => !Number.isInteger(x))) throw new EngineRequestError(`${field} must be a list of integer token ids`, field);
  return v as number[];
};

/**
 * Start the built-in engine: the tiny policy served over SGLang's native HTTP API (`/generate`,
 * `/abort_request`, `/get_server_info`, `/update_weights_from_disk`, `/flush_cache`, `/health`, `/metrics`)
 * and vLLM's OpenAI-compatible `/v1/completions` + `/v1/models`, so the real adapters run against it.
 * Concurrent requests are batched ({@link GenerationScheduler}); KV capacity is enforced, never evicted.
 */
export async function startBuiltinEngine(opts: BuiltinEngineOptions): Promise<BuiltinEngine> {
  if (!Number.isInteger(opts.kvCapacityTokens) || opts.kvCapacityTokens <= 0) {
    throw new EngineRequestError(`kvCapacityTokens must be a positive integer, got ${opts.kvCapacityTokens}`, 'kvCapacityTokens');
  }
  const model = opts.checkpointDir ? await PolicyModel.load(opts.checkpointDir) : await PolicyModel.create(opts.modelConfig ?? {}, opts.seed ?? 0);
  const tok = model.tokenizer;
  let modelPath = opts.checkpointDir ?? null;
  const modelName = opts.modelName ?? 'rstar-builtin';
  const scheduler = new GenerationScheduler(model, opts.kvCapacityTokens, { batchWindowMs: opts.batchWindowMs, maxBatch: opts.maxBatch });
  const metrics = createEngineMetrics(() => scheduler.stats());
  let ridCounter = 0;

  /** Parse one prompt (`input_ids` list or `text`) into token ids. */
  const promptIds = (input: unknown, field: string): number[] => {
    if (typeof input === 'string') return tok.encode(input);
    if (Array.isArray(input) && input.every((x) => Number.isInteger(x))) return input as number[];
    throw new EngineRequestError(`${field} must be a string or a list of integer token ids`, field);
  };

  /** Run one request; abort it when the client disconnects before the answer (vLLM semantics). */
  const run = (res: ServerResponse, r: ScheduledRequest): Promise<GenerationResult> => {
    const onClose = () => {
      if (!res.writableEnded) scheduler.abort(r.rid);
    };
    res.on('close', onClose);
    return scheduler.submit(r);
  };

  /** Output text like SGLang: eos/stop token dropped (skip_special_tokens), matched stop string trimmed. */
  const outText = (g: GenerationResult, keepSpecial: boolean, noStopTrim: boolean): string => {
    const ids = !keepSpecial && typeof g.matchedStop === 'number' ? g.tokenIds.slice(0, -1) : g.tokenIds;
    let text = tok.decode(ids);
    if (!noStopTrim && typeof g.matchedStop === 'string' && text.endsWith(g.matchedStop)) text = text.slice(0, -g.matchedStop.length);
    return text;
  };

  const finishInfo = (g: GenerationResult): Json =>
    g.finishReason === 'stop' ? { type: 'stop', matched: g.matchedStop } : g.finishReason === 'length' ? { type: 'length', length: g.tokenIds.length } : { type: 'abort', message: 'Abort requested' };

  async function generate(body: Json, res: ServerResponse): Promise<void> {
    if (body.stream) throw new EngineRequestError('stream is not supported by the built-in engine (send stream: false)', 'stream');
    const sp = (body.sampling_params ?? {}) as Json;
    if (typeof sp !== 'object' || Array.isArray(sp)) throw new EngineRequestError('sampling_params must be an object', 'sampling_params');
    const raw = body.input_ids ?? body.text;
    if (raw === undefined) throw new EngineRequestError('send input_ids (token ids) or text', 'input_ids');
    const batched = Array.isArray(raw) && raw.length > 0 && (Array.isArray(raw[0]) || typeof raw[0] === 'string');
    const inputs = batched ? (raw as unknown[]) : [raw];
    const rids = Array.isArray(body.rid) ? (body.rid as unknown[]) : inputs.map((_, i) => (body.rid !== undefined && inputs.length === 1 ? body.rid : `${body.rid ?? 'req'}-${ridCounter++}-${i}`));
    const seed = sp.sampling_seed ?? sp.seed;
    const sampling = {
      temperature: num(sp.temperature, 'sampling_params.temperature', 1, (x) => x >= 0, 'a number >= 0'),
      topP: num(sp.top_p, 'sampling_params.top_p', 1, (x) => x > 0 && x <= 1, 'in (0, 1]'),
      maxNewTokens: num(sp.max_new_tokens, 'sampling_params.max_new_tokens', 128, (x) => Number.isInteger(x) && x >= 0, 'a non-negative integer'),
      stop: strList(sp.stop, 'sampling_params.stop'),
      stopTokenIds: idList(sp.stop_token_ids, 'sampling_params.stop_token_ids'),
      ignoreEos: sp.ignore_eos === true,
    };
    const baseSeed = num(seed, 'sampling_params.seed', 0, Number.isInteger, 'an integer');
    const prompts = inputs.map((x, i) => promptIds(x, batched ? `input_ids[${i}]` : body.input_ids !== undefined ? 'input_ids' : 'text'));
    const results = await Promise.all(prompts.map((ids, i) => run(res, { rid: String(rids[i]), inputIds: ids, sampling: { ...sampling, seed: baseSeed + i } })));
    const out = results.map((g, i) => ({
      text: outText(g, sp.skip_special_tokens === false, sp.no_stop_trim === true),
      output_ids: g.tokenIds,
      meta_info: {
        id: String(rids[i]),
        finish_reason: finishInfo(g),
        prompt_tokens: prompts[i].length,
        completion_tokens: g.tokenIds.length,
        cached_tokens: 0,
        weight_version: model.hash,
        ...(body.return_logprob ? { output_token_logprobs: g.tokenIds.map((id, k) => [g.logprobs[k], id, body.return_text_in_logprobs ? tok.tokenText(id) : null]) } : {}),
      },
    }));
    send(res, 200, batched ? out : out[0]);
  }

  async function completions(body: Json, res: ServerResponse): Promise<void> {
    if (body.stream) throw new EngineRequestError('stream is not supported by the built-in engine (send stream: false)', 'stream');
    if (body.n !== undefined && body.n !== 1) throw new EngineRequestError('n must be 1 on the built-in engine', 'n');
    if (body.echo) throw new EngineRequestError('echo is not supported by the built-in engine', 'echo');
    const p = body.prompt;
    const batched = Array.isArray(p) && p.length > 0 && (Array.isArray(p[0]) || typeof p[0] === 'string');
    const inputs = batched ? (p as unknown[]) : [p];
    const prompts = inputs.map((x, i) => promptIds(x, batched ? `prompt[${i}]` : 'prompt'));
    const sampling = {
      temperature: num(body.temperature, 'temperature', 1, (x) => x >= 0, 'a number >= 0'),
      topP: num(body.top_p, 'top_p', 1, (x) => x > 0 && x <= 1, 'in (0, 1]'),
      maxNewTokens: num(body.max_tokens, 'max_tokens', 16, (x) => Number.isInteger(x) && x >= 0, 'a non-negative integer'),
      stop: strList(body.stop, 'stop'),
      stopTokenIds: idList(body.stop_token_ids, 'stop_token_ids'),
      ignoreEos: body.ignore_eos === true,
    };
    const seed = num(body.seed, 'seed', 0, Number.isInteger, 'an integer');
    const wantLp = body.logprobs !== undefined && body.logprobs !== null;
    const id = `cmpl-${ridCounter++}`;
    const results = await Promise.all(prompts.map((ids, i) => run(res, { rid: `${id}-${i}`, inputIds: ids, sampling: { ...sampling, seed: seed + i } })));
    const tokStr = (t: number) => (body.return_tokens_as_token_ids ? `token_id:${t}` : tok.tokenText(t));
    const choices = results.map((g, i) => {
      const tokens = g.tokenIds.map(tokStr);
      let off = 0;
      const offsets = g.tokenIds.map((t) => {
        const o = off;
        off += tok.tokenText(t).length;
        return o;
      });
      return {
        index: i,
        text: outText(g, body.skip_special_tokens === false, false),
        logprobs: wantLp ? { tokens, token_logprobs: g.logprobs, top_logprobs: tokens.map((t, k) => ({ [t]: g.logprobs[k] })), text_offset: offsets } : null,
        finish_reason: g.finishReason,
        stop_reason: g.finishReason === 'stop' && g.matchedStop !== null && g.matchedStop !== tok.eosId ? g.matchedStop : null,
        ...(body.return_token_ids ? { token_ids: g.tokenIds, prompt_token_ids: prompts[i] } : {}),
      };
    });
    const completion = results.reduce((a, g) => a + g.tokenIds.length, 0);
    const prompt = prompts.reduce((a, x) => a + x.length, 0);
    send(res, 200, {
      id, object: 'text_completion', created: Math.floor(Date.now() / 1000), model: modelName, choices,
      usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion },
    });
  }

  const serverInfo = () => ({
    max_total_num_tokens: scheduler.kvCapacityTokens,
    context_length: model.config.context,
    model_path: modelPath,
    served_model_name: modelName,
    weight_version: model.hash,
    vocab_size: tok.vocabSize,
    eos_token_id: tok.eosId,
    max_running_requests: opts.maxBatch ?? 64,
    engine: 'rstar-builtin',
    model_config: model.config,
    num_parameters: model.numParams,
    ...scheduler.stats(),
    internal_states: [{ max_total_num_tokens: scheduler.kvCapacityTokens }],
  });

  const routes: Record<string, (req: IncomingMessage, res: ServerResponse) => Promise<void>> = {
    'GET /health': async (_q, res) => send(res, 200, ''),
    'GET /health_generate': async (_q, res) => send(res, 200, ''),
    'GET /get_server_info': async (_q, res) => send(res, 200, serverInfo()),
    'GET /server_info': async (_q, res) => send(res, 200, serverInfo()),
    'GET /get_model_info': async (_q, res) => send(res, 200, { model_path: modelPath, is_generation: true, tokenizer_path: null }),
    'GET /metrics': async (_q, res) => send(res, 200, await metrics.metrics(), metrics.contentType),
    'GET /v1/models': async (_q, res) =>
      send(res, 200, { object: 'list', data: [{ id: modelName, object: 'model', owned_by: 'rstar', max_model_len: model.config.context, root: modelPath }] }),
    'POST /generate': async (req, res) => generate(await readJson(req), res),
    'POST /v1/completions': async (req, res) => completions(await readJson(req), res),
    'POST /abort_request': async (req, res) => {
      const body = await readJson(req);
      if (body.abort_all) scheduler.abortAll();
      else if (typeof body.rid === 'string') scheduler.abort(body.rid);
      else throw new EngineRequestError('send {"rid": "<request id>"} or {"abort_all": true}', 'rid');
      send(res, 200, '');
    },
    'POST /update_weights_from_disk': async (req, res) => {
      const body = await readJson(req);
      if (typeof body.model_path !== 'string' || body.model_path === '') throw new EngineRequestError('model_path must name a checkpoint directory', 'model_path');
      const path = body.model_path;
      try {
        const hash = await scheduler.exclusive(() => model.loadWeightsFrom(path));
        modelPath = path;
        send(res, 200, { success: true, message: `Succeeded to update model weights (${hash}).`, weight_version: hash, num_paused_requests: 0 });
      } catch (e) {
        if (!(e instanceof PolicyError)) throw e;
        send(res, 400, { success: false, message: e.message, code: e.code });
      }
    },
    'POST /flush_cache': async (_q, res) => send(res, 200, 'Cache flushed.'),
    'POST /reset_prefix_cache': async (_q, res) => send(res, 200, ''),
  };

  // No request or headers timeout: an engine's clients (policy-serving, pass@1 evaluation) keep
  // thousands of requests in flight on one busy event loop, and Node's defaults (60 s headers, 300 s
  // request) once answered 408 to a request in the middle of a long evaluation. SGLang's server sets none.
  //
  // Idle keep-alive connections are closed by the client only (keepAliveTimeout 0): with Node's default
  // (the server closes a connection idle for 5 s) a client whose event loop stalled past that — a loaded
  // machine, a GC pause, a long synchronous step — sends its next request on a connection the server has
  // already closed and gets ECONNRESET / "other side closed" for a request that never ran. Clients close
  // their own idle connections (undici after 4 s), so nothing leaks.
  const server = createServer({ requestTimeout: 0, headersTimeout: 0, keepAliveTimeout: 0 }, (req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const route = `${req.method} ${path}`;
    const handler = routes[route];
    const refused = authorizeEngineRequest(opts.apiTokens, route, req);
    if (refused) {
      if (refused.status === 401) res.setHeader('WWW-Authenticate', 'Bearer realm="rstar-engine"');
      send(res, refused.status, { error: { message: refused.reason, code: refused.status === 401 ? 'unauthorized' : 'forbidden' } });
      return;
    }
    if (!handler) {
      send(res, 404, { error: { message: `no route ${req.method} ${path}`, code: 'not_found' } });
      return;
    }
    handler(req, res).catch((e: unknown) => {
      if (res.headersSent) return;
      if (e instanceof BuiltinEngineError) send(res, e.status, { error: { message: e.message, code: e.code, field: e.field } });
      else if (e instanceof PolicyError) send(res, 400, { error: { message: e.message, code: e.code, field: e.field } });
      else send(res, 500, { error: { message: e instanceof Error ? e.message : String(e), code: 'internal' } });
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    // A deep accept queue (the kernel caps it at net.core.somaxconn): while a batch computes, the event
    // loop does not accept, and connections beyond Node's default of 511 would be reset.
    server.listen({ port: opts.port, host: opts.host ?? '127.0.0.1', backlog: 4096 }, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://${opts.host ?? '127.0.0.1'}:${port}`,
    port,
    model,
    scheduler,
    close: async () => {
      scheduler.abortAll();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      model.dispose();
    },
  };
}
