import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PolicyModel } from '@rstar/policy';
import { SglangAdapter } from '../sglang.adapter';
import { VllmAdapter } from '../vllm.adapter';
import { startBuiltinEngine, type BuiltinEngine } from './builtin-engine.server';
import { until } from '@rstar/testing';

const CFG = { layers: 1, dModel: 16, heads: 2, context: 64, ffMult: 2 };
const CAPACITY = 100;

async function post(url: string, body: unknown): Promise<{ status: number; json: any }> {
  const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const text = await r.text();
  return { status: r.status, json: text ? JSON.parse(text) : null };
}


describe('built-in engine over real HTTP (SGLang + vLLM shapes)', () => {
  let eng: BuiltinEngine;
  const tmp = mkdtempSync(join(tmpdir(), 'rstar-engine-'));
  let prompt: number[];

  beforeAll(async () => {
    eng = await startBuiltinEngine({ port: 0, modelConfig: CFG, kvCapacityTokens: CAPACITY, seed: 1, batchWindowMs: 2 });
    prompt = eng.model.tokenizer.encode('What is 2 * 3?');
  });
  afterAll(async () => {
    await eng?.close();
    rmSync(tmp, { recursive: true, force: true });
  });

  it('reports health, server info (KV capacity) and metrics', async () => {
    expect((await fetch(`${eng.url}/health`)).status).toBe(200);
    const info = (await (await fetch(`${eng.url}/get_server_info`)).json()) as any;
    expect(info.max_total_num_tokens).toBe(CAPACITY);
    expect(info.context_length).toBe(CFG.context);
    const metrics = await (await fetch(`${eng.url}/metrics`)).text();
    expect(metrics).toMatch(/sglang:num_running_reqs 0/);
    expect(metrics).toMatch(/rstar_engine_kv_tokens_in_use 0/);
    expect(metrics).toContain(`vllm:cache_config_info{block_size="1",num_gpu_blocks="${CAPACITY}"} 1`);
  });

  it('POST /generate returns SGLang-shaped output with per-token logprobs of the model', async () => {
    const body = { input_ids: prompt, rid: 'r1', return_logprob: true, sampling_params: { temperature: 1, top_p: 0.9, max_new_tokens: 12, seed: 5, ignore_eos: true } };
    const a = await post(`${eng.url}/generate`, body);
    expect(a.status).toBe(200);
    const { output_ids, meta_info, text } = a.json;
    expect(output_ids).toHaveLength(12);
    expect(meta_info).toMatchObject({ id: 'r1', prompt_tokens: prompt.length, completion_tokens: 12, finish_reason: { type: 'length' } });
    expect(meta_info.output_token_logprobs.map((e: unknown[]) => e[1])).toEqual(output_ids);
    expect(text).toBe(eng.model.tokenizer.decode(output_ids));
    const ref = eng.model.sequenceLogprobs([[...prompt, ...output_ids]])[0].slice(prompt.length);
    meta_info.output_token_logprobs.forEach((e: number[], i: number) => expect(e[0]).toBeCloseTo(ref[i], 4));
    // Same seed, same tokens; `text` input is accepted too.
    const b = await post(`${eng.url}/generate`, { ...body, input_ids: undefined, text: 'What is 2 * 3?' });
    expect(b.json.output_ids).toEqual(output_ids);
  });

  it('batches concurrent requests into one generation', async () => {
    const before = eng.scheduler.stats().batches;
    let release!: () => void;
    const hold = eng.scheduler.exclusive(() => new Promise<void>((r) => (release = r)));
    await until(() => release !== undefined, 'the scheduler pause');
    const reqs = [0, 1, 2, 3].map((i) => post(`${eng.url}/generate`, { input_ids: prompt, sampling_params: { max_new_tokens: 4, seed: i, temperature: 0 } }));
    await until(() => eng.scheduler.stats().queued === 4, 'four queued requests');
    release();
    await hold;
    const out = await Promise.all(reqs);
    expect(out.every((r) => r.status === 200)).toBe(true);
    expect(eng.scheduler.stats().batches - before).toBe(1);
    // Greedy rows of one batch agree with each other.
    expect(new Set(out.map((r) => JSON.stringify(r.json.output_ids))).size).toBe(1);
  });

  it('enforces KV capacity: rejects what can never fit, queues what does not fit now', async () => {
    const big = await post(`${eng.url}/generate`, { input_ids: prompt, sampling_params: { max_new_tokens: 1000 } });
    expect(big.status).toBe(200); // capped by the context window: prompt + (64 - prompt) = 64 <= 100
    const long = new Array(60).fill(prompt[0]);
    const tooBig = await startBuiltinEngine({ port: 0, modelConfig: CFG, kvCapacityTokens: 50, seed: 1 });
    try {
      const r = await post(`${tooBig.url}/generate`, { input_ids: long, sampling_params: { max_new_tokens: 2 } });
      expect(r.status).toBe(400);
      expect(r.json.error.code).toBe('kv_capacity_exceeded');
    } finally {
      await tooBig.close();
    }
    // Two requests of 60 reserved tokens each cannot share a 100-token cache: two batches, both answered.
    const before = eng.scheduler.stats().batches;
    let release!: () => void;
    const hold = eng.scheduler.exclusive(() => new Promise<void>((r) => (release = r)));
    await until(() => release !== undefined, 'the scheduler pause');
    const two = [0, 1].map(() => post(`${eng.url}/generate`, { input_ids: prompt, sampling_params: { max_new_tokens: 60 - prompt.length, temperature: 0 } }));
    await until(() => eng.scheduler.stats().queued === 2, 'two queued requests');
    release();
    await hold;
    const res = await Promise.all(two);
    expect(res.map((r) => r.status)).toEqual([200, 200]);
    expect(eng.scheduler.stats().batches - before).toBe(2);
  });

  it('aborts a queued request and a running one by rid', async () => {
    let release!: () => void;
    const hold = eng.scheduler.exclusive(() => new Promise<void>((r) => (release = r)));
    await until(() => release !== undefined, 'the scheduler pause');
    const queued = post(`${eng.url}/generate`, { input_ids: prompt, rid: 'q1', sampling_params: { max_new_tokens: 5 } });
    await until(() => eng.scheduler.stats().queued === 1, 'a queued request');
    expect((await post(`${eng.url}/abort_request`, { rid: 'q1' })).status).toBe(200);
    expect((await queued).json.meta_info.finish_reason.type).toBe('abort');
    release();
    await hold;

    const max = CFG.context - prompt.length;
    const running = post(`${eng.url}/generate`, { input_ids: prompt, rid: 'run1', sampling_params: { max_new_tokens: max, ignore_eos: true } });
    await until(() => eng.scheduler.stats().running === 1, 'a running request');
    await post(`${eng.url}/abort_request`, { rid: 'run1' });
    const r = (await running).json;
    expect(r.meta_info.finish_reason.type).toBe('abort');
    expect(r.output_ids.length).toBeLessThan(max);
  });

  it('reloads weights from disk and refuses a bad path', async () => {
    const other = await PolicyModel.create(CFG, 99);
    const dir = join(tmp, 'ck');
    const { hash } = other.save(dir);
    const [want] = await other.generate([prompt], [{ temperature: 0, maxNewTokens: 8, ignoreEos: true }]);
    other.dispose();
    const up = await post(`${eng.url}/update_weights_from_disk`, { model_path: dir });
    expect(up.json).toMatchObject({ success: true, weight_version: hash });
    const info = (await (await fetch(`${eng.url}/get_server_info`)).json()) as any;
    expect(info).toMatchObject({ weight_version: hash, model_path: dir });
    const g = await post(`${eng.url}/generate`, { input_ids: prompt, sampling_params: { temperature: 0, max_new_tokens: 8, ignore_eos: true } });
    expect(g.json.output_ids).toEqual(want.tokenIds);
    const bad = await post(`${eng.url}/update_weights_from_disk`, { model_path: join(tmp, 'missing') });
    expect(bad.status).toBe(400);
    expect(bad.json.success).toBe(false);
    expect((await fetch(`${eng.url}/flush_cache`, { method: 'POST' })).status).toBe(200);
  });

  it('answers bad input with 400 naming the field', async () => {
    const r = await post(`${eng.url}/generate`, { input_ids: prompt, sampling_params: { temperature: -1 } });
    expect(r.status).toBe(400);
    expect(r.json.error.field).toBe('sampling_params.temperature');
    const v = await post(`${eng.url}/generate`, { input_ids: [1, 2, 99999] });
    expect(v.status).toBe(400);
    expect(v.json.error.code).toBe('invalid_policy_input');
  });

  it('POST /v1/completions speaks the vLLM/OpenAI shape with token ids and logprobs', async () => {
    const r = await post(`${eng.url}/v1/completions`, { model: 'rstar-builtin', prompt, max_tokens: 6, temperature: 0, logprobs: 1, return_tokens_as_token_ids: true, return_token_ids: true, ignore_eos: true });
    expect(r.status).toBe(200);
    const c = r.json.choices[0];
    expect(r.json.object).toBe('text_completion');
    expect(c.token_ids).toHaveLength(6);
    expect(c.logprobs.tokens).toEqual(c.token_ids.map((t: number) => `token_id:${t}`));
    expect(c.logprobs.token_logprobs).toHaveLength(6);
    expect(c.finish_reason).toBe('length');
    expect(r.json.usage).toEqual({ prompt_tokens: prompt.length, completion_tokens: 6, total_tokens: prompt.length + 6 });
  });

  it('serves the SGLang and vLLM adapters of policy-serving', async () => {
    const req = { inputIds: prompt, rid: 'ad1', sampling: { temperature: 0, topP: 1, seed: 3, maxNewTokens: 5 } };
    const sg = new SglangAdapter('builtin-0', eng.url, undefined, 'builtin');
    expect(await sg.serverInfo()).toEqual({ kvCapacityTokens: CAPACITY });
    expect(await sg.health()).toBe(true);
    const a = await sg.generate(req);
    const vl = new VllmAdapter('vllm-0', eng.url);
    expect(await vl.serverInfo()).toEqual({ kvCapacityTokens: CAPACITY });
    const b = await vl.generate({ ...req, rid: 'ad2' });
    expect(b.tokenIds).toEqual(a.tokenIds);
    expect(a.logprobs).toHaveLength(a.tokenIds.length);
    b.logprobs.forEach((lp, i) => expect(lp).toBeCloseTo(a.logprobs[i], 5));
  });
});
