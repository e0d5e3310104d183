import { Kafka, logLevel, type KafkaConfig } from 'kafkajs';

/** One exported message as read back. */
export interface ExportedMessage {
  partition: number;
  offset: number;
  key: string;
  headers: Record<string, string>;
  /** The event envelope (JSON). */
  value: string;
}

/**
 * Read every message of `topic` that is there now (up to each partition's high watermark at the call),
 * in partition and offset order, with a throwaway consumer group. For checks and benchmarks: what the
 * export wrote, compared with the archive. @throws Error naming the partitions still short after `timeoutMs`.
 */
export async function readTopicToEnd(kafkaConfig: KafkaConfig, topic: string, timeoutMs = 120_000): Promise<ExportedMessage[]> {
  const kafka = new Kafka({ logLevel: logLevel.NOTHING, ...kafkaConfig });
  const admin = kafka.admin();
  await admin.connect();
  const highs = new Map((await admin.fetchTopicOffsets(topic)).map((o) => [o.partition, Number(o.high)]));
  await admin.disconnect();
  const out: ExportedMessage[] = [];
  const next = new Map([...highs.keys()].map((p) => [p, 0]));
  const done = () => [...highs].every(([p, h]) => (next.get(p) ?? 0) >= h);
  if (done()) return out;
  const consumer = kafka.consumer({ groupId: `rstar-topic-reader-${process.pid}-${Date.now().toString(36)}`, readUncommitted: false });
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    let finish!: () => void;
    const finished = new Promise<void>((r) => (finish = r));
    await consumer.run({
      autoCommit: false,
      eachMessage: async ({ partition, message }) => {
        const offset = Number(message.offset);
        if (offset >= (highs.get(partition) ?? 0)) return;
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(message.headers ?? {})) headers[k] = String(v);
        out.push({ partition, offset, key: message.key?.toString() ?? '', headers, value: message.value?.toString() ?? '' });
        next.set(partition, offset + 1);
        if (done()) finish();
      },
    });
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, rej) => {
      timer = setTimeout(() => {
        const short = [...highs].filter(([p, h]) => (next.get(p) ?? 0) < h).map(([p, h]) => `partition ${p}: ${next.get(p)} of ${h}`);
        rej(new Error(`reading ${topic} timed out after ${timeoutMs} ms (${short.join(', ')})`));
      }, timeoutMs);
    });
    await Promise.race([finished, timeout]).finally(() => clearTimeout(timer));
  } finally {
    await consumer.disconnect().catch(() => undefined);
  }
  return out.sort((a, b) => a.partition - b.partition || a.offset - b.offset);
}
