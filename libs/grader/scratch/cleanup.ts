import { JetStreamBus } from '@rstar/messaging';
(async () => {
  const bus = await JetStreamBus.connect({ servers: 'nats://127.0.0.1:4222', name: 'cleanup' });
  const info = await bus.jsm.consumers.info(bus.stream, 'reward-grading').catch((e) => String(e));
  if (typeof info !== 'string' && info.created.startsWith('2026-11-30T03:41:15')) console.log('deleted', await bus.jsm.consumers.delete(bus.stream, 'reward-grading'));
  console.log(typeof info === 'string' ? info : { name: info.name, created: info.created, pending: info.num_pending, waiting: info.num_waiting, ack_pending: info.num_ack_pending });
  await bus.close();
})();
