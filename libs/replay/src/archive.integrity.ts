import { readFileSync } from 'node:fs';
import { formatChainReport, type ChainReport, type CheckpointReport, type EventStore } from '@rstar/event-store';
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
  /** The first unsigned one by global position (a failure in a secured run: one whose other events are signed). */
  firstUnsigned: { eventId: string; globalPosition: number } | null;
}

/** What `rstar replay verify` checks of the archive itself: the hash chain and, with trusted keys, the signatures. */
export interface IntegrityReport {
  ok: boolean;
  chain: ChainReport;
  signatures: SignatureReport | null;
  /** The run's signed chain checkpoints against its events. */
  checkpoints: CheckpointReport;
  /** Every reason the run fails, each naming the event, stream position or checkpoint. */
  problems: string[];
}

/**
 * Check a run's archive: the hash chain of every stream (`store.verifyChain`), the archiver's chain
 * checkpoints (`store.checkpoints.verify`: a cut tail, a rewritten or NULLed head, rows appended after the
 * seal) and, when `trustedKeysFile` is given (JSON `{keyId: public key PEM}`, e.g. `trusted-keys.json` of
 * `rstar security init`), each event's producer signature over its stored envelope and the checkpoints'
 * signatures. `ok` = none of these fails. Unsigned events fail a secured run (one with signed events); an
 * open-bus run has none signed and is only counted. Events without a hash fail a run that has checkpoints
 * (it was archived with the chain).
 */
export async function checkArchiveIntegrity(store: EventStore, runId: string, trustedKeysFile?: string): Promise<IntegrityReport> {
  const verifier = trustedKeysFile ? new EventVerifier({ trustedKeys: parseTrustedKeys(readFileSync(trustedKeysFile, 'utf8'), '--trusted-keys') }) : null;
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
  const checkpoints = await store.checkpoints.verify(runId, { verifier: verifier && sig.valid > 0 ? verifier : null, ended });
  const problems: string[] = [];
  if (!chain.ok) problems.push(chain.firstBreak!.message);
  if (sig.invalid) problems.push(`invalid signature: ${sig.firstInvalid!.eventId}: ${sig.firstInvalid!.reason}`);
  if (sig.valid > 0 && sig.unsigned > 0) problems.push(`${sig.unsigned} unsigned event(s) in a secured run, first ${sig.firstUnsigned!.eventId} (global position ${sig.firstUnsigned!.globalPosition})`);
  if (chain.unchained > 0 && checkpoints.checkpoints > 0) problems.push(`${chain.unchained} event(s) without a hash in a run archived with the chain (its hashes were removed)`);
  problems.push(...checkpoints.problems);
  return { ok: problems.length === 0, chain, signatures: verifier ? sig : null, checkpoints, problems };
}

/** The integrity report as text lines. */
export function formatIntegrity(r: IntegrityReport): string {
  const c = r.chain;
  const lines = [formatChainReport(c)];
  if (r.signatures) {
    const s = r.signatures;
    lines.push(
      s.invalid
        ? `signatures: ${s.invalid} INVALID — first: ${s.firstInvalid!.eventId}: ${s.firstInvalid!.reason} (${s.valid} valid, ${s.unsigned} unsigned)`
        : s.valid > 0 && s.unsigned > 0
          ? `signatures: ${s.unsigned} UNSIGNED in a secured run — first: ${s.firstUnsigned!.eventId} (${s.valid} valid)`
          : `signatures: ${s.valid} valid, ${s.unsigned} unsigned`,
    );
  }
  const k = r.checkpoints;
  lines.push(
    k.problems.length
      ? `checkpoints: FAILED — ${k.problems.join('; ')}`
      : k.checkpoints
        ? `checkpoints: ok (${k.checkpoints}, ${k.sealed ? 'sealed' : 'not sealed yet'})`
        : 'checkpoints: none (archived before checkpoints, or by an archiver that wrote none)',
  );
  if (r.chain.ok && r.chain.unchained > 0 && k.checkpoints > 0) lines.push(`hash chain: ${r.chain.unchained} event(s) WITHOUT a hash in a run archived with the chain`);
  if (r.signatures && r.signatures.valid > 0 && r.signatures.unsigned > 0 && !r.signatures.invalid) lines.push('a secured run must not hold unsigned events');
  return lines.join('\n');
}
