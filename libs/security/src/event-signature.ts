import { createPrivateKey, createPublicKey, sign, verify, type KeyObject } from 'node:crypto';
import { EVENT_TYPES, RstarError, type EventSignature, type EventType, type RstarEvent } from '@rstar/contracts';
import { canonicalJson } from './canonical-json';
import { leafHash, merkleTree, rootFromPath } from './merkle';
import { BUS_ROLES, isPrincipal } from './principals';

/** A signing or verification key that cannot be used; the message names the setting and the fix. */
export class SigningKeyError extends RstarError {
  constructor(message: string, field: string) {
    super('invalid_signing_key', message, field);
  }
}

/** Domain separation: what an rstar signature signs is never mistaken for another protocol's message. */
const SIGNED_PREFIX = Buffer.from('rstar-event-batch-v1\n', 'utf8');

/**
 * The bytes an event signature covers (before leaf hashing): the canonical JSON (RFC 8785, see
 * {@link canonicalJson}) of the envelope `{id, type, version, runId, streamId, data, meta}` with
 * `meta.signature` left out. Fields outside the envelope (an archive's positions) are not covered.
 * `event` may be the producer's object or the consumer's `JSON.parse` of the payload: both give the same
 * text, so a consumer verifies what the producer signed even when its own schema version would drop or
 * default a field.
 */
export function signedContent(event: { id: unknown; type: unknown; version: unknown; runId: unknown; streamId: unknown; data: unknown; meta: unknown }): string {
  const meta = { ...(event.meta as Record<string, unknown>) };
  delete meta.signature;
  return canonicalJson({ id: event.id, type: event.type, version: event.version, runId: event.runId, streamId: event.streamId, data: event.data, meta });
}

/** Options of {@link EventSigner}. */
export interface EventSignerOptions {
  /** The signer's key id: its principal name (`optimization`), which consumers look its public key up by. */
  keyId: string;
  /** Ed25519 private key: a KeyObject or PKCS#8 PEM text. */
  privateKey: KeyObject | string;
  /** Events per signature (one Merkle tree per chunk of a publish); default 32. 1 = a plain signature per event. */
  maxBatch?: number;
}

/**
 * Signs events with the producer's Ed25519 key (node:crypto). A publish of n events is signed in chunks
 * of `maxBatch`: each chunk's leaf hashes ({@link signedContent}) form an RFC 9162 Merkle tree, the
 * root is signed once, and each event carries the signature with its inclusion path in `meta.signature`
 * (`{keyId, sig, size, index, path}`; a chunk of one has an empty path and its root is its leaf). So every
 * event is verifiable on its own, and the signing cost of a bulk publish is one Ed25519 operation per
 * chunk instead of one per event.
 */
export class EventSigner {
  readonly keyId: string;
  private readonly key: KeyObject;
  private readonly maxBatch: number;

  constructor(opts: EventSignerOptions) {
    this.keyId = opts.keyId;
    this.key = typeof opts.privateKey === 'string' ? parsePrivateKey(opts.privateKey, 'RSTAR_SIGNING_KEY') : opts.privateKey;
    if (this.key.type !== 'private' || this.key.asymmetricKeyType !== 'ed25519') {
      throw new SigningKeyError(`the signing key of "${opts.keyId}" must be an Ed25519 private key, got ${this.key.asymmetricKeyType ?? this.key.type}`, 'RSTAR_SIGNING_KEY');
    }
    this.maxBatch = Math.max(1, Math.floor(opts.maxBatch ?? 32));
  }

  /** The public key consumers verify with, as SPKI PEM (for the trusted-keys file). */
  get publicKeyPem(): string {
    return createPublicKey(this.key).export({ type: 'spki', format: 'pem' }).toString();
  }

  /**
   * Sign a statement that is not an event (the archiver's chain checkpoints): Ed25519 over a domain
   * prefix and `content`, so a statement's signature can never pass for an event's or the reverse.
   */
  signStatement(domain: string, content: Buffer): string {
    return sign(null, Buffer.concat([Buffer.from(`rstar-statement:${domain}\n`), content]), this.key).toString('base64url');
  }

  /** Copies of `events` with `meta.signature` set (any earlier signature replaced); the inputs are not changed. */
  sign<E extends RstarEvent>(events: readonly E[]): E[] {
    const out: E[] = new Array(events.length);
    for (let from = 0; from < events.length; from += this.maxBatch) {
      const chunk = events.slice(from, from + this.maxBatch);
      const leaves = chunk.map((e) => leafHash(signedContent(e)));
      const { root, paths } = merkleTree(leaves);
      const sig = sign(null, Buffer.concat([SIGNED_PREFIX, root]), this.key).toString('base64url');
      chunk.forEach((e, i) => {
        const signature: EventSignature =
          chunk.length === 1
            ? { keyId: this.keyId, sig }
            : { keyId: this.keyId, sig, size: chunk.length, index: i, path: paths[i].map((p) => p.toString('base64url')) };
        out[from + i] = { ...e, meta: { ...e.meta, signature } };
      });
    }
    return out;
  }
}

/** Why an event's signature was refused (machine-readable). */
export type SignatureRefusal = 'unsigned_event' | 'unknown_signer' | 'signer_not_producer' | 'bad_signature';

/** The outcome of {@link EventVerifier.verify}. */
export type SignatureCheck = { ok: true; keyId: string } | { ok: false; code: SignatureRefusal; reason: string };

/** Options of {@link EventVerifier}. */
export interface EventVerifierOptions {
  /** Trusted public keys by key id; several per id while a key is rotated. */
  trustedKeys: ReadonlyMap<string, readonly KeyObject[]>;
  /** Event types whose consumers refuse an unsigned or wrongly signed event (default: every type). */
  requiredTypes?: readonly EventType[];
  /**
   * May `keyId` sign events of `type`? Default: the key id is a principal whose role produces the type
   * (`BUS_ROLES`), so a grader's key cannot vouch for a `PolicyUpdated`.
   */
  mayProduce?: (keyId: string, type: string) => boolean;
}

/** Verified roots remembered (by signature), so the other events of a verified batch cost no Ed25519 verify. */
const ROOT_CACHE = 4096;

/**
 * Checks event signatures against trusted public keys: the signer must be known, allowed to produce the
 * event's type, and its Ed25519 signature must cover the event's inclusion path's root.
 */
export class EventVerifier {
  readonly requiredTypes: ReadonlySet<string>;
  private readonly mayProduce: (keyId: string, type: string) => boolean;
  private readonly verifiedRoots = new Map<string, string>();

  constructor(private readonly opts: EventVerifierOptions) {
    this.requiredTypes = new Set(opts.requiredTypes ?? EVENT_TYPES);
    this.mayProduce = opts.mayProduce ?? ((keyId, type) => isPrincipal(keyId) && (BUS_ROLES[keyId].produces as readonly string[]).includes(type));
  }

  /** Whether events of `type` must carry a valid signature for this consumer. */
  requires(type: string): boolean {
    return this.requiredTypes.has(type);
  }

  /** True when one of `keyId`'s trusted keys made `sig` over `content` with {@link EventSigner.signStatement}. */
  verifyStatement(keyId: string, domain: string, content: Buffer, sig: string): boolean {
    const keys = this.opts.trustedKeys.get(keyId) ?? [];
    const message = Buffer.concat([Buffer.from(`rstar-statement:${domain}\n`), content]);
    return keys.some((k) => verify(null, message, k, Buffer.from(sig, 'base64url')));
  }

  /** Key ids this verifier trusts. */
  get keyIds(): string[] {
    return [...this.opts.trustedKeys.keys()];
  }

  /**
   * Verify one event: the producer's object or the consumer's `JSON.parse` of the payload (verify before
   * schema parsing drops or defaults fields the producer signed).
   */
  verify(event: { type?: unknown; meta?: unknown } & Record<string, unknown>): SignatureCheck {
    const meta = (event.meta ?? {}) as { signature?: Partial<EventSignature> };
    const s = meta.signature;
    const type = String(event.type);
    if (!s || typeof s !== 'object' || typeof s.keyId !== 'string' || typeof s.sig !== 'string') {
      return { ok: false, code: 'unsigned_event', reason: `${type} ${String(event.id)} carries no signature (meta.signature)` };
    }
    const keys = this.opts.trustedKeys.get(s.keyId);
    if (!keys?.length) return { ok: false, code: 'unknown_signer', reason: `${type} ${String(event.id)} is signed by "${s.keyId}", whose key is not trusted here` };
    if (!this.mayProduce(s.keyId, type)) {
      return { ok: false, code: 'signer_not_producer', reason: `${type} ${String(event.id)} is signed by "${s.keyId}", which does not produce ${type}` };
    }
    let root: Buffer | null;
    try {
      const leaf = leafHash(signedContent(event as never));
      const path = Array.isArray(s.path) ? s.path.map((p) => Buffer.from(String(p), 'base64url')) : [];
      root = rootFromPath(leaf, s.index ?? 0, s.size ?? 1, path);
    } catch (e) {
      return { ok: false, code: 'bad_signature', reason: `${type} ${String(event.id)}: ${(e as Error).message}` };
    }
    if (!root) return { ok: false, code: 'bad_signature', reason: `${type} ${String(event.id)}: the inclusion path does not fit index ${s.index} of ${s.size}` };
    const cacheKey = `${s.keyId}:${s.sig}`;
    const rootText = root.toString('base64url');
    if (this.verifiedRoots.get(cacheKey) === rootText) return { ok: true, keyId: s.keyId };
    const sig = Buffer.from(s.sig, 'base64url');
    const message = Buffer.concat([SIGNED_PREFIX, root]);
    if (!keys.some((k) => verify(null, message, k, sig))) {
      return { ok: false, code: 'bad_signature', reason: `${type} ${String(event.id)}: the signature of "${s.keyId}" does not match the event` };
    }
    if (this.verifiedRoots.size >= ROOT_CACHE) this.verifiedRoots.delete(this.verifiedRoots.keys().next().value!);
    this.verifiedRoots.set(cacheKey, rootText);
    return { ok: true, keyId: s.keyId };
  }
}

/** Parse an Ed25519 private key from PKCS#8 PEM. @throws SigningKeyError naming `field`. */
export function parsePrivateKey(pem: string, field: string): KeyObject {
  const refuse = (why: string) => new SigningKeyError(`${field} is not an Ed25519 private key in PKCS#8 PEM (${why}); generate keys with \`rstar security init\``, field);
  let k: KeyObject;
  try {
    k = createPrivateKey(pem);
  } catch (e) {
    throw refuse((e as Error).message);
  }
  if (k.asymmetricKeyType !== 'ed25519') throw refuse(`a ${k.asymmetricKeyType} key`);
  return k;
}

/**
 * Parse trusted public keys: JSON `{ "<keyId>": "<SPKI PEM>" | ["<PEM>", ...] }` (several while a key is
 * rotated). @throws SigningKeyError naming `field` and the key id.
 */
export function parseTrustedKeys(json: string, field: string): Map<string, KeyObject[]> {
  let obj: unknown;
  try {
    obj = JSON.parse(json);
  } catch (e) {
    throw new SigningKeyError(`${field} is not JSON (${(e as Error).message}); expected {"<keyId>": "<public key PEM>", ...}`, field);
  }
  if (!obj || typeof obj !== 'object' || Array.isArray(obj)) throw new SigningKeyError(`${field} must be a JSON object {"<keyId>": "<public key PEM>", ...}`, field);
  const out = new Map<string, KeyObject[]>();
  for (const [keyId, v] of Object.entries(obj as Record<string, unknown>)) {
    const pems = Array.isArray(v) ? v : [v];
    out.set(
      keyId,
      pems.map((pem, i) => {
        const refuse = (why: string) => new SigningKeyError(`${field}: key ${i + 1} of "${keyId}" is not an Ed25519 public key in SPKI PEM (${why})`, field);
        let k: KeyObject;
        try {
          k = createPublicKey(String(pem));
        } catch (e) {
          throw refuse((e as Error).message);
        }
        if (k.asymmetricKeyType !== 'ed25519') throw refuse(`a ${k.asymmetricKeyType} key`);
        return k;
      }),
    );
  }
  return out;
}
