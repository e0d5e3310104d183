import { readFileSync } from 'node:fs';
import { formatChainReport, type ChainReport, type EventStore } from '@rstar/event-store';
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
}

/** What `rstar replay verify` checks of the archive itself: the hash chain and, with trusted keys, the signatures. */
export interface IntegrityReport {
  ok: boolean;
  chain: ChainReport;
  signatures: SignatureReport | null;
}

/**
 * Check a run's archive: the hash chain of every stream (`store.verifyChain`) and, when `trustedKeysFile`
 * is given (JSON `{keyId: public key PEM}`, e.g. `trusted-keys.json` of `rstar security init`), each signed
 * event's producer signature over its stored envelope. `ok` = the chain holds and no signature is invalid
 * (unsigned events are counted, not failed: an open-bus run has none).
 */
export async function checkArchiveIntegrity(store: EventStore, runId: string, trustedKeysFile?: string): Promise<IntegrityReport> {
  const verifier = trustedKeysFile ? new EventVerifier({ trustedKeys: parseTrustedKeys(readFileSync(trustedKeysFile, 'utf8'), '--trusted-keys') }) : null;
  const sig: SignatureReport = { valid: 0, unsigned: 0, invalid: 0, firstInvalid: null };
  const chain = await store.verifyChain(runId, {
    onRow: (r) => {
      if (!verifier) return;
      const envelope = { id: r.id, type: r.type, version: r.version, runId: r.runId, streamId: r.streamId, data: r.data, meta: r.meta };
      const check = verifier.verify(envelope);
      if (check.ok) sig.valid++;
      else if (check.code === 'unsigned_event') sig.unsigned++;
      else {
        sig.invalid++;
        if (!sig.firstInvalid || r.globalPosition < sig.firstInvalid.globalPosition) sig.firstInvalid = { eventId: r.id, globalPosition: r.globalPosition, reason: `${check.code}: ${check.reason}` };
      }
    },
  });
  return { ok: chain.ok && sig.invalid === 0, chain, signatures: verifier ? sig : null };
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
        : `signatures: ${s.valid} valid, ${s.unsigned} unsigned`,
    );
  }
  return lines.join('\n');
}
