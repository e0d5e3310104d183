import { createHash, generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EVENT_CONTRACTS, EVENT_TYPES, makeEvent, parseEvent, type RstarEvent } from '@rstar/contracts';
import { ApiTokenConfigError, ApiTokenSet, generateApiToken, tokenDigest } from './api-tokens';
import { canonicalJson, CanonicalJsonError } from './canonical-json';
import { EventSigner, EventVerifier, parseTrustedKeys, signedContent } from './event-signature';
import { leafHash, merkleTree, rootFromPath } from './merkle';
import { renderNatsAuthConfig } from './nats-config.renderer';
import { consumerFilters, inboxPrefixOf, natsPermissions } from './nats-permissions';
import { BUS_ROLES, consumedBy, PRINCIPALS, producersOf, durablesOf, ownerOfDurable } from './principals';
import { generateSecrets } from './secrets.generator';
import { SecurityConfigError, securityFromEnv } from './security.settings';

const run = 'run-sec';
const policyUpdate = (key = '1') =>
  makeEvent('PolicyUpdated', { runId: run, streamId: `run-${run}`, key, producer: 'optimization', data: { version: Number(key), checkpointUri: `/ckpt/${key}`, checkpointHash: 'h' } });
const turns = (n: number) =>
  Array.from({ length: n }, (_, i) =>
    makeEvent('TurnGenerated', {
      runId: run,
      streamId: `rollout-r${i}`,
      key: `r${i}:0`,
      producer: 'policy-serving',
      data: { rolloutId: `r${i}`, turn: 0, tokenIds: [1, 2, i], logprobs: [-0.5, -1.25, -2], text: `t${i} "q" ü`, finishReason: 'stop', engineId: 'e' },
    }),
  );

describe('canonical JSON (RFC 8785 for event values)', () => {
  it('sorts keys recursively, drops undefined members, writes numbers and strings as ECMAScript does', () => {
    expect(canonicalJson({ b: 1, a: [3, { d: undefined, c: 'x' }], e: null })).toBe('{"a":[3,{"c":"x"}],"b":1,"e":null}');
    // RFC 8785 §3.2.2.3 number samples and key order by UTF-16 code units (§3.2.3).
    expect(canonicalJson([Number('333333333.33333329'), 1e30, 4.5, 0.002, 1e-27, -0])).toBe('[333333333.3333333,1e+30,4.5,0.002,1e-27,0]');
    const rfcKeys = { '\u20ac': 1, '\r': 2, '\ufb33': 3, '1': 4, '\ud83d\ude00': 5, '\u0080': 6, '\u00f6': 7 };
    expect(canonicalJson(rfcKeys)).toBe('{"\\r":2,"1":4,"\u0080":6,"\u00f6":7,"\u20ac":1,"\ud83d\ude00":5,"\ufb33":3}');
    expect(canonicalJson('a\u2028\n"\\')).toBe(JSON.stringify('a\u2028\n"\\'));
  });

  it('gives a producer object and its parsed payload the same text', () => {
    const e = turns(1)[0];
    expect(canonicalJson(JSON.parse(JSON.stringify(e)))).toBe(canonicalJson(e));
  });

  it('refuses values JSON cannot carry, naming the field', () => {
    expect(() => canonicalJson({ a: { b: Number.NaN } })).toThrow(CanonicalJsonError);
    expect(() => canonicalJson({ a: { b: Number.NaN } })).toThrow(/a\.b is NaN/);
    expect(() => canonicalJson({ n: 1n })).toThrow(/n is a bigint/);
  });
});

describe('the producer/consumer table and NATS permissions derived from the contracts', () => {
  it('every contract type has a producer and a consumer; DeadLettered may come from every consumer', () => {
    for (const t of EVENT_TYPES) {
      expect(producersOf(t).length, `${t} has a producer`).toBeGreaterThan(0);
      expect(consumedBy('control-plane'), `the archiver consumes ${t}`).toContain(t);
    }
    for (const p of PRINCIPALS) if (consumedBy(p).length) expect(BUS_ROLES[p].produces, p).toContain('DeadLettered');
    expect(producersOf('PolicyUpdated')).toEqual(['optimization']);
    expect(producersOf('RewardAssigned')).toEqual(['reward-grading']);
  });

  it('a service may publish exactly the subjects of the types it produces, under the deployment prefix', () => {
    const p = natsPermissions('reward-grading', { subjectPrefix: 'px', stream: 'S1' });
    const eventSubjects = p.publish.allow.filter((s) => s.startsWith('px.'));
    expect(eventSubjects.sort()).toEqual(['px.dlq', 'px.reward.assigned']);
    expect(p.publish.allow).not.toContain('px.policy.updated');
    expect(p.publish.allow).not.toContain('$JS.API.>');
    expect(p.publish.allow.some((s) => s.startsWith('$JS.API.STREAM.CREATE'))).toBe(false);
    expect(p.publish.allow).toContain('$JS.API.CONSUMER.CREATE.S1.reward-grading.px.rollout.completed');
    expect(p.publish.allow).toContain('$JS.ACK.S1.reward-grading.>');
    expect(p.publish.allow).toContain('$JS.API.CONSUMER.MSG.NEXT.S1.reward-grading');
    // Nothing on a consumer it does not own.
    expect(p.publish.allow.filter((s) => /^\$JS\.(API\.CONSUMER|ACK)/.test(s)).every((s) => s.includes('.reward-grading'))).toBe(true);
    expect(p.subscribe.allow).toEqual([`${inboxPrefixOf('reward-grading')}.>`, ]);
    expect(p.allowResponses).toBe(false);
  });

  it('only the control plane manages the stream; tool-execution answers tool.execute', () => {
    for (const pr of PRINCIPALS) {
      const allow = natsPermissions(pr).publish.allow;
      expect(allow.includes('$JS.API.STREAM.CREATE.RSTAR'), pr).toBe(pr === 'control-plane');
      expect(allow.some((s) => /STREAM\.(DELETE|PURGE)|MSG\.DELETE|\$JS\.API\.>/.test(s)), pr).toBe(false);
    }
    const te = natsPermissions('tool-execution');
    expect(te.subscribe.allow).toContain('tool.execute');
    expect(te.allowResponses).toBe(true);
  });

  it('consumers belong to their owner: each service reads, acks and creates only its own durables (per replica where named so); the CLI any but theirs', () => {
    for (const pr of PRINCIPALS) expect(BUS_ROLES[pr].durables.length || BUS_ROLES[pr].ownsUnlistedDurables, pr).toBeTruthy();
    for (const pr of PRINCIPALS) if (!BUS_ROLES[pr].ownsUnlistedDurables) expect(BUS_ROLES[pr].durables.length, pr).toBe(BUS_ROLES[pr].subscriptions.length);
    const ps = natsPermissions('policy-serving', { instances: { 'policy-serving': ['ps-0', 'ps-1'] } }).publish.allow;
    expect(ps).toContain('$JS.API.CONSUMER.MSG.NEXT.RSTAR.policy-serving-turns-ps-1');
    expect(ps).not.toContain('$JS.API.CONSUMER.MSG.NEXT.RSTAR.policy-serving-turns-default');
    expect(durablesOf('policy-serving')).toContain('policy-serving-tool-results-default');
    expect(ownerOfDurable('archiver')).toBe('control-plane');
    const cli = natsPermissions('cli').publish;
    expect(cli.allow).toContain('$JS.API.CONSUMER.MSG.NEXT.RSTAR.*');
    for (const pr of PRINCIPALS.filter((x) => x !== 'cli')) for (const d of durablesOf(pr)) expect(cli.deny, d).toContain(`$JS.API.CONSUMER.MSG.NEXT.RSTAR.${d}`);
  });

  it('consumer filters follow the subscriptions: one type = its subject, several = the prefix', () => {
    expect(consumerFilters('policy-serving', 'rstar').sort()).toEqual(['rstar.policy.updated', 'rstar.rollout.requested', 'rstar.rollout.turn', 'rstar.tool.completed']);
    expect(consumerFilters('optimization', 'rstar')).toEqual(['rstar.run.started', 'rstar.>']);
    expect(consumerFilters('control-plane', 'rstar')).toEqual(['rstar.>']);
    for (const p of PRINCIPALS) for (const t of consumedBy(p)) expect(EVENT_CONTRACTS[t].subject.startsWith('rstar.')).toBe(true);
  });

  it('renders nkey users with quoted subjects (no $ variable expansion) and a TLS block on request', () => {
    const conf = renderNatsAuthConfig([{ principal: 'optimization', nkey: 'UABC' }], {}, { certFile: '/c.pem', keyFile: '/k.pem' });
    expect(conf).toContain('"nkey": "UABC"');
    expect(conf).toContain('"$JS.API.INFO"');
    expect(conf).toContain('"rstar.policy.updated"');
    expect(conf).toMatch(/tls: \{\s+"cert_file": "\/c.pem"/);
  });
});

describe('API tokens', () => {
  const t1 = generateApiToken();
  const t2 = generateApiToken();
  const set = ApiTokenSet.parse(`# comment\nread,execute ${t1} ci\nadmin ${tokenDigest(t2)} ops; read sha256:${createHash('sha256').update('x'.repeat(30)).digest('hex')}`);

  it('accepts a known token with the scope, 401 for none or an unknown one, 403 for a missing scope', () => {
    expect(set.size).toBe(3);
    expect(set.authorize(`Bearer ${t1}`, 'execute')).toEqual({ ok: true, name: 'ci' });
    expect(set.authorize(`bearer ${t2}`, 'admin')).toEqual({ ok: true, name: 'ops' });
    expect(set.authorize(`Bearer ${'x'.repeat(30)}`, 'read')).toMatchObject({ ok: true });
    expect(set.authorize(undefined, 'read')).toMatchObject({ ok: false, status: 401 });
    expect(set.authorize(`Basic ${t1}`, 'read')).toMatchObject({ ok: false, status: 401 });
    expect(set.authorize(`Bearer ${t1}x`, 'read')).toMatchObject({ ok: false, status: 401 });
    expect(set.authorize(`Bearer ${t1}`, 'admin')).toMatchObject({ ok: false, status: 403, reason: expect.stringContaining('lacks scope "admin"') });
  });

  it('refuses bad lists with the entry and the fix', () => {
    expect(() => ApiTokenSet.parse('write abcdefghijklmnopqrstuvwxyz')).toThrow(ApiTokenConfigError);
    expect(() => ApiTokenSet.parse('write abcdefghijklmnopqrstuvwxyz')).toThrow(/entry 1: unknown scope "write"/);
    expect(() => ApiTokenSet.parse('read short')).toThrow(/at least 22/);
    expect(() => ApiTokenSet.parse('read sha256:abc')).toThrow(/64 hex digits/);
  });
});

describe('Merkle inclusion paths (RFC 9162)', () => {
  it('every leaf of trees of 1..33 leaves leads to the root; a wrong index or leaf does not', () => {
    for (let n = 1; n <= 33; n++) {
      const leaves = Array.from({ length: n }, (_, i) => leafHash(`leaf ${i}`));
      const { root, paths } = merkleTree(leaves);
      for (let i = 0; i < n; i++) {
        expect(rootFromPath(leaves[i], i, n, paths[i])?.equals(root), `n=${n} i=${i}`).toBe(true);
        if (n > 1) expect(rootFromPath(leaves[i], (i + 1) % n, n, paths[i])?.equals(root) ?? false).toBe(false);
        expect(rootFromPath(leafHash('other'), i, n, paths[i])?.equals(root) ?? false).toBe(false);
      }
    }
  });
});

describe('event signatures', () => {
  const keys = (() => {
    const o = generateKeyPairSync('ed25519');
    const g = generateKeyPairSync('ed25519');
    return { opt: o, grader: g };
  })();
  const trusted = new Map([
    ['optimization', [keys.opt.publicKey]],
    ['reward-grading', [keys.grader.publicKey]],
    ['policy-serving', [keys.opt.publicKey]],
  ]);
  const verifier = new EventVerifier({ trustedKeys: trusted });

  it('a signed event verifies after a round trip through JSON and the contract parser keeps the signature', () => {
    const [signed] = new EventSigner({ keyId: 'optimization', privateKey: keys.opt.privateKey }).sign([policyUpdate()]);
    expect(signed.meta.signature).toMatchObject({ keyId: 'optimization' });
    const wire = JSON.parse(JSON.stringify(signed));
    expect(verifier.verify(wire)).toEqual({ ok: true, keyId: 'optimization' });
    expect(parseEvent(JSON.stringify(signed)).meta.signature).toEqual(signed.meta.signature);
  });

  it('signs a bulk publish in Merkle chunks: each event verifies on its own, one Ed25519 signature per chunk', () => {
    const signer = new EventSigner({ keyId: 'policy-serving', privateKey: keys.opt.privateKey, maxBatch: 8 });
    const signed = signer.sign(turns(20));
    expect(new Set(signed.map((e) => e.meta.signature!.sig)).size).toBe(3);
    expect(signed[19].meta.signature).toMatchObject({ size: 4, index: 3 });
    for (const e of signed) expect(verifier.verify(JSON.parse(JSON.stringify(e)))).toMatchObject({ ok: true });
  });

  it('refuses unsigned, tampered, unknown-signer and wrong-producer events, naming the event and reason', () => {
    const [signed] = new EventSigner({ keyId: 'optimization', privateKey: keys.opt.privateKey }).sign([policyUpdate('2')]);
    expect(verifier.verify(JSON.parse(JSON.stringify(policyUpdate('3'))))).toMatchObject({ ok: false, code: 'unsigned_event', reason: expect.stringContaining('PolicyUpdated:') });
    const tampered = JSON.parse(JSON.stringify(signed));
    tampered.data.checkpointUri = '/evil';
    expect(verifier.verify(tampered)).toMatchObject({ ok: false, code: 'bad_signature' });
    const [byGrader] = new EventSigner({ keyId: 'reward-grading', privateKey: keys.grader.privateKey }).sign([policyUpdate('4')]);
    expect(verifier.verify(JSON.parse(JSON.stringify(byGrader)))).toMatchObject({ ok: false, code: 'signer_not_producer' });
    const forged = JSON.parse(JSON.stringify(byGrader));
    forged.meta.signature.keyId = 'optimization';
    expect(verifier.verify(forged)).toMatchObject({ ok: false, code: 'bad_signature' });
    const [stranger] = new EventSigner({ keyId: 'stranger', privateKey: generateKeyPairSync('ed25519').privateKey }).sign([policyUpdate('5')]);
    expect(verifier.verify(JSON.parse(JSON.stringify(stranger)))).toMatchObject({ ok: false, code: 'unknown_signer' });
  });

  it('covers the envelope without the signature and nothing outside it', () => {
    const e = policyUpdate('6') as RstarEvent & { globalPosition?: number };
    const withPos = { ...e, globalPosition: 12 };
    expect(signedContent(withPos)).toBe(signedContent(e));
    expect(signedContent(e)).not.toContain('signature');
  });
});

describe('secrets and settings from the environment', () => {
  it('generates a secrets folder per principal that securityFromEnv reads back; required auth names what is missing', () => {
    const dir = mkdtempSync(join(tmpdir(), 'rstar-secrets-'));
    try {
      const out = join(dir, 's');
      const g = generateSecrets({ outDir: out, scope: { subjectPrefix: 'rstar' } });
      expect(Object.keys(g.principals).sort()).toEqual([...PRINCIPALS].sort());
      expect(statSync(join(out, 'optimization', 'signing.pem')).mode & 0o777).toBe(0o600);
      expect(readFileSync(join(out, 'optimization', 'api-tokens.txt'), 'utf8')).not.toContain(g.tokens.operator);
      expect(() => generateSecrets({ outDir: out })).toThrow(/not empty/);
      const s = securityFromEnv({ RSTAR_SECRETS_DIR: join(out, 'optimization'), RSTAR_REQUIRE_AUTH: 'true' }, 'optimization');
      expect(s).toMatchObject({ auth: { kind: 'nkey' }, inboxPrefix: '_INBOX_optimization', securedBus: true, requireAuth: true, engineApiKey: g.tokens['engine-client'] });
      // The engine key is the engines' alone; each service has a token of its own.
      expect(s.apiTokens.authorizeToken(g.tokens['engine-client'], 'read').ok).toBe(false);
      expect(s.apiTokens.authorizeToken(g.tokens['service-optimization'], 'read').ok).toBe(true);
      expect(s.apiTokens.authorizeToken(g.tokens['service-optimization'], 'execute').ok).toBe(false);
      expect(readFileSync(join(g.principals.optimization.dir, 'api-token'), 'utf8').trim()).toBe(g.tokens['service-optimization']);
      const engine = securityFromEnv({ RSTAR_SECRETS_DIR: g.engineDir }, 'engine');
      expect(engine.apiTokens.authorizeToken(g.tokens['engine-client'], 'admin').ok).toBe(true);
      expect(s.signer!.keyId).toBe('optimization');
      expect(s.apiTokens.authorize(`Bearer ${g.tokens.dashboard}`, 'read')).toMatchObject({ ok: true, name: 'dashboard' });
      const [signed] = s.signer!.sign([policyUpdate('7')]);
      const trusted = parseTrustedKeys(readFileSync(join(out, 'trusted-keys.json'), 'utf8'), 'f');
      expect(new EventVerifier({ trustedKeys: trusted }).verify(JSON.parse(JSON.stringify(signed)))).toMatchObject({ ok: true });
      expect(securityFromEnv({}, 'optimization')).toMatchObject({ auth: null, signer: null, verifier: null, securedBus: false, requireAuth: false });
      expect(() => securityFromEnv({ RSTAR_REQUIRE_AUTH: 'true' }, 'optimization')).toThrow(SecurityConfigError);
      expect(() => securityFromEnv({ RSTAR_REQUIRE_AUTH: 'true' }, 'optimization')).toThrow(/NATS credentials .* a signing key .* API tokens/);
      expect(() => securityFromEnv({ RSTAR_NATS_NKEY_SEED: 'nope' }, 'optimization')).toThrow(/RSTAR_NATS_NKEY_SEED/);
      expect(() => securityFromEnv({ RSTAR_SIGNING_KEY_FILE: join(dir, 'missing.pem') }, 'optimization')).toThrow(/RSTAR_SIGNING_KEY_FILE: cannot read/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
