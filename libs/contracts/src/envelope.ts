import { z } from 'zod';

/**
 * A producer's Ed25519 signature of an event (optional, added without a version bump; @rstar/security
 * makes and checks it): `keyId` names the signer (a principal, e.g. `optimization`), `sig` is the
 * base64url signature of the root of a Merkle tree over the events signed together; `size`, `index` and
 * `path` (base64url sibling hashes, leaf to root) prove this event is leaf `index` of `size` (absent: a
 * batch of one, whose root is the event's own leaf hash).
 */
export const EventSignatureSchema = z.object({
  keyId: z.string().min(1),
  sig: z.string().min(1),
  size: z.number().int().positive().optional(),
  index: z.number().int().nonnegative().optional(),
  path: z.array(z.string()).optional(),
});
export type EventSignature = z.infer<typeof EventSignatureSchema>;

/**
 * Metadata carried by every event (docs/design/architecture.md §3). `correlationId` ties every event of one run
 * (usually the run id); `causationId` is the id of the event whose handler produced this one;
 * `traceparent` is the W3C trace context so a trace crosses NATS hops; `signature` (optional) is the
 * producer's signature ({@link EventSignatureSchema}).
 */
export const EventMetaSchema = z.object({
  correlationId: z.string().min(1),
  causationId: z.string().min(1).nullable().default(null),
  traceparent: z.string().nullable().default(null),
  producer: z.string().min(1),
  recordedAt: z.string().datetime(),
  signature: EventSignatureSchema.optional(),
});
export type EventMeta = z.infer<typeof EventMetaSchema>;

/** The envelope without its `data`, validated before the type-specific schema is chosen. */
export const EnvelopeHeadSchema = z.object({
  id: z.string().min(1).max(512),
  type: z.string().min(1),
  version: z.number().int().positive(),
  runId: z.string().min(1),
  streamId: z.string().min(1),
  data: z.unknown(),
  meta: EventMetaSchema,
});
export type EnvelopeHead = z.infer<typeof EnvelopeHeadSchema>;

/** A typed event: `{ id, type, version, runId, streamId, data, meta }`. */
export interface EventEnvelope<T extends string = string, D = unknown> {
  id: string;
  type: T;
  version: number;
  runId: string;
  /** The aggregate this event belongs to (`run-<id>`, `rollout-<id>`, ...); the archive orders per stream. */
  streamId: string;
  data: D;
  meta: EventMeta;
}
