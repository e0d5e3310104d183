/**
 * Runs `work` for a delivered message and extends the message's ack deadline (`ctx.working()`, JetStream
 * `+WPI`) every third of `ackWaitMs` while it runs, so a consumer may use a short ack wait (a dead process's
 * messages come back soon) without a slow live handler's message being redelivered under it.
 * `ackWaitMs` is the consumer's ack wait in ms; the beat is never more often than every 100 ms.
 * @returns what `work` resolves with; rejects with what it rejects with (the beat stops either way).
 */
export async function withHeartbeat<T>(ctx: { working(): void }, ackWaitMs: number, work: () => Promise<T>): Promise<T> {
  const beat = setInterval(() => ctx.working(), Math.max(100, Math.floor(ackWaitMs / 3)));
  try {
    return await work();
  } finally {
    clearInterval(beat);
  }
}
