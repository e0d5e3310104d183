import { readFileSync } from 'node:fs';
import { formatChainReport, type ChainReport, type CheckpointReport, type EventStore, type QuarantinedEvent } from '@rstar/event-store';
import { EventVerifier, parseTrustedKeys } from '@rstar/security';

/** Producer signatures of a run's archived events, checked against trusted keys. */
export interface SignatureReport {
  /** Events with a valid signature of a producer allowed to produce their type. */
  valid: number;
  /** Events without a signature (archived from an open bus, or before signing existed). */
  unsigned: number;
  invalid: number;
  /** The first invalid one by global position: event id and reason. */
  firstInvalid: { eventId: string; globalPosition: number; reason: string } | null;
  /** The first unsigned one by global position (a failure: with trusted keys every event must be signed). */
  firstUnsigned: { eventId: string; globalPosition: number } | null;
}

/** What `rstar replay verify` checks of the archive itself: the hash chain and, with trusted keys, the signatures. */
export interface IntegrityReport {
  ok: boolean;
  chain: ChainReport;
  signatures: SignatureReport | null;
  /** The run's signed chain checkpoints against its events. */
  checkpoints: CheckpointReport;
  /** Id collisions recorded against the run (an id archived with one content and published again with another): each an alarm. */
  collisions: Array<Pick<QuarantinedEvent, 'eventId' | 'reason'>>;
  /** Every reason the run fails, each naming the event, stream position or checkpoint. */
  problems: string[];
}

/** Options of {@link checkArchiveIntegrity}. */
export interface IntegrityOptions {
  /**
   * JSON file `{keyId: public key PEM}` (e.g. `trusted-keys.json` of `rstar security init`). Given, the run
   * is expected to be secured: every event signed by its type's producer, checkpoints signed by the archiver.
   */
  trustedKeysFile?: string;
  /** With trusted keys: accept a run that is not sealed yet (one still in progress; `--allow-unsealed`). */
  allowUnsealed?: boolean;
}

/**
 * Check a run's archive: the hash chain of every stream (`store.verifyChain`), the archiver's chain
 * checkpoints (`store.checkpoints.verify`: a cut tail, a rewritten or NULLed head, rows appended after the
 * seal) and the id collisions recorded against the run (`store.idCollisions`: each fails the run).
 * With `trustedKeysFile` the run must be secured (`replay verify --trusted-keys`): every event must carry
 * a valid signature of a trusted key of a principal that produces its type, every checkpoint must be
 * signed by the archiver, at least one must exist, and the run must be sealed (its end archived and
 * sealed) unless `allowUnsealed`; so stripping every signature, recomputing the chain and deleting the
 * checkpoints, or cutting a tail together with its checkpoints, both fail. Without trusted keys (an
 * open-bus run) signatures are not checked and only the checkpoints present are compared. Events without
 * a hash fail a run that has checkpoints (it was archived with the chain). `ok` = no problem.
 */
export async function checkArchiveIntegrity(store: EventStore, runId: string, opts: IntegrityOptions = {}): Promise<IntegrityReport> {
  const verifier = opts.trustedKeysFile ? new EventVerifier({ trustedKeys: parseTrustedKeys(readFileSync(opts.trustedKeysFile, 'utf8'), '--trusted-keys') }) : null;
  const sig: SignatureReport = { valid: 0, unsigned: 0, invalid: 0, firstInvalid: null, firstUnsigned: null };
  let ended = false;
  const chain = await store.verifyChain(runId, {
    onRow: (r) => {
      if (r.type === 'RunCompleted' || r.type === 'RunFailed') ended = true;
      if (!verifier) return;
      const envelope = { id: r.id, type: r.type, version: r.version, runId: r.runId, streamId: r.streamId, data: r.data, meta: r.meta };
      const check = verifier.verify(envelope);
      if (check.ok) sig.valid++;
      else if (check.code === 'unsigned_event') {
        sig.unsigned++;
        if (!sig.firstUnsigned || r.globalPosition < sig.firstUnsigned.globalPosition) sig.firstUnsigned = { eventId: r.id, globalPosition: r.globalPosition };
      } else {
        sig.invalid++;
        if (!sig.firstInvalid || r.globalPosition < sig.firstInvalid.globalPosition) sig.firstInvalid = { eventId: r.id, globalPosition: r.globalPosition, reason: `${check.code}: ${check.reason}` };
      }
    },
  });
  const checkpoints = await store.checkpoints.verify(runId, { verifier, ended, allowUnsealed: opts.allowUnsealed });
  const collisions = (await store.idCollisions(runId)).map((q) => ({ eventId: q.eventId, reason: q.reason }));
  const problems: string[] = [];
  if (!chain.ok) problems.push(chain.firstBreak!.message);
  if (sig.invalid) problems.push(`invalid signature: ${sig.firstInvalid!.eventId}: ${sig.firstInvalid!.reason}`);
  if (sig.unsigned) {
    problems.push(
      `${sig.unsigned} unsigned event(s) in a run verified with --trusted-keys, first ${sig.firstUnsigned!.eventId} (global position ${sig.firstUnsigned!.globalPosition}): ` +
        'every event of a secured run carries its producer\'s signature, so these were stripped or inserted (a run archived from an open bus is verified without --trusted-keys)',
    );
  }
  if (chain.unchained > 0 && checkpoints.checkpoints > 0) problems.push(`${chain.unchained} event(s) without a hash in a run archived with the chain (its hashes were removed)`);
  problems.push(...checkpoints.problems);
  for (const c of collisions) problems.push(`id collision: event ${c.eventId} was published again with different content (${c.reason}); the archive kept the first copy, the other is in the quarantine table: find which producer sent it`);
  return { ok: problems.length === 0, chain, signatures: verifier ? sig : null, checkpoints, collisions, problems };
}

/** Collisions listed one per line in the text report; --json holds them all. */
const MAX_COLLISION_LINES = 50;

/** The integrity report as text lines. */
export function formatIntegrity(r: IntegrityReport): string {
  const c = r.chain;
  const lines = [formatChainReport(c)];
  if (r.signatures) {
    const s = r.signatures;
    lines.push(
      s.invalid
        ? `signatures: ${s.invalid} INVALID — first: ${s.firstInvalid!.eventId}: ${s.firstInvalid!.reason} (${s.valid} valid, ${s.unsigned} unsigned)`
        : s.unsigned > 0
          ? `signatures: ${s.unsigned} UNSIGNED — first: ${s.firstUnsigned!.eventId} (${s.valid} valid; with --trusted-keys every event must be signed)`
          : `signatures: ${s.valid} valid, 0 unsigned`,
    );
  }
  const k = r.checkpoints;
  lines.push(
    k.problems.length
      ? `checkpoints: FAILED — ${k.problems.join('; ')}`
      : k.checkpoints
        ? `checkpoints: ok (${k.checkpoints}, ${k.sealed ? 'sealed' : `not sealed yet: ${k.uncovered} event(s) after the last one`})`
        : 'checkpoints: none (archived before checkpoints, by an archiver that wrote none, or a run too young for its first)',
  );
  if (r.collisions.length) {
    lines.push(`id collisions: ${r.collisions.length} — ALARM: an id published again with different content (the quarantine table holds the other copy)`);
    for (const c of r.collisions.slice(0, MAX_COLLISION_LINES)) lines.push(`  id collision: event ${c.eventId}: ${c.reason}`);
    if (r.collisions.length > MAX_COLLISION_LINES) lines.push(`  ... and ${r.collisions.length - MAX_COLLISION_LINES} more (all of them with --json)`);
  }
  if (r.chain.ok && r.chain.unchained > 0 && k.checkpoints > 0) lines.push(`hash chain: ${r.chain.unchained} event(s) WITHOUT a hash in a run archived with the chain`);
  return lines.join('\n');
}
