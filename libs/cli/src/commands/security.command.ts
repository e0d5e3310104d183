import type { Command } from 'commander';
import { JetStreamBus, securedBusOptionsFromEnv } from '@rstar/messaging';
import { generateApiToken, generateSecrets, isPrincipal, PRINCIPALS, renderNscCommands, tokenDigest, type InstanceIds } from '@rstar/security';
import { CliInputError } from '../cli.errors';

/**
 * `rstar security init|token|provision-stream|nsc`: the credentials of a secured deployment
 * (docs/security.md).
 * - `init --out DIR [--stream S] [--subject-prefix P] [--tls-cert F --tls-key F [--tls-ca F]]`: every
 *   principal's NATS nkey, Ed25519 signing key, trusted keys, HTTP tokens (as digests) and engine token,
 *   one folder per principal (its RSTAR_SECRETS_DIR), plus the nats-server users and permissions.
 * - `token [--scopes read,execute] [--name N]`: a new HTTP token and the line to add to api-tokens.txt.
 * - `provision-stream [--as control-plane]`: create or update the stream with the given principal's
 *   credentials (RSTAR_SECRETS_DIR etc.): the explicit provisioning step when the control plane is not up.
 * - `nsc [--stream S] [--subject-prefix P]`: the users and permissions as nsc commands (JWT accounts).
 */
export function register(program: Command): void {
  const sec = program.command('security').description('credentials and permissions of a secured deployment');

  sec
    .command('init')
    .description('generate NATS nkeys, signing keys, trusted keys, HTTP tokens and the nats-server permissions, one folder per principal')
    .requiredOption('--out <dir>', 'output folder (must be new or empty)')
    .option('--stream <name>', 'JetStream stream', 'RSTAR')
    .option('--subject-prefix <prefix>', 'subject prefix', 'rstar')
    .option('--tls-cert <file>', 'server certificate: adds a tls block for client connections')
    .option('--tls-key <file>', 'server key (with --tls-cert)')
    .option('--tls-ca <file>', 'CA the clients trust (copied to each principal as nats-ca.pem)')
    .option('--tls-verify-clients', 'require client certificates (mutual TLS)')
    .option('--instances <list>', 'replica ids (RSTAR_INSTANCE_ID) of a principal with per-replica consumers, e.g. policy-serving=ps-0,ps-1 (default: one replica, "default")')
    .action((o: { out: string; stream: string; subjectPrefix: string; tlsCert?: string; tlsKey?: string; tlsCa?: string; tlsVerifyClients?: boolean; instances?: string }) => {
      if (!!o.tlsCert !== !!o.tlsKey) throw new CliInputError('--tls-cert and --tls-key go together');
      const tls = o.tlsCert ? { certFile: o.tlsCert, keyFile: o.tlsKey!, caFile: o.tlsCa, verifyClients: o.tlsVerifyClients } : undefined;
      const g = generateSecrets({ outDir: o.out, scope: { stream: o.stream, subjectPrefix: o.subjectPrefix, instances: parseInstances(o.instances) }, tls });
      process.stdout.write(
        [
          `wrote the secrets of ${Object.keys(g.principals).length} principals to ${g.outDir}:`,
          ...Object.entries(g.principals).map(([p, v]) => `  ${p}: RSTAR_SECRETS_DIR=${v.dir}`),
          `  inference engines (rstar serve engine; SGLang --api-key is its engine-api-key): RSTAR_SECRETS_DIR=${g.engineDir}`,
          `  nats-server users and permissions: ${g.outDir}/nats-auth.conf (include it in the server configuration)`,
          `  HTTP tokens in clear: ${g.outDir}/operator-tokens.txt (hand them out, then delete the file)`,
          '',
        ].join('\n'),
      );
    });

  sec
    .command('token')
    .description('a new HTTP bearer token and its api-tokens.txt line')
    .option('--scopes <list>', 'comma-separated scopes: read, execute, admin', 'read')
    .option('--name <name>', 'who holds it', 'token')
    .action((o: { scopes: string; name: string }) => {
      const t = generateApiToken();
      process.stdout.write(`token: ${t}\napi-tokens.txt line: ${o.scopes} ${tokenDigest(t)} ${o.name}\n`);
    });

  sec
    .command('provision-stream')
    .description("create or update the stream as a principal that manages it (the control plane's credentials)")
    .option('--nats <url>', 'NATS server(s) (default env RSTAR_NATS_URL)')
    .option('--stream <name>', 'stream (default env RSTAR_STREAM or RSTAR)')
    .option('--subject-prefix <prefix>', 'subject prefix (default env RSTAR_SUBJECT_PREFIX or rstar)')
    .option('--as <principal>', 'whose credentials (RSTAR_SECRETS_DIR or RSTAR_NATS_*)', 'control-plane')
    .action(async (o: { nats?: string; stream?: string; subjectPrefix?: string; as: string }) => {
      if (!isPrincipal(o.as)) throw new CliInputError(`--as must be one of ${PRINCIPALS.join(', ')}, got "${o.as}"`);
      const servers = (o.nats ?? process.env.RSTAR_NATS_URL ?? 'nats://127.0.0.1:4222').split(',').map((s) => s.trim()).filter(Boolean);
      const bus = await JetStreamBus.connect({
        servers,
        stream: o.stream ?? (process.env.RSTAR_STREAM || undefined),
        subjectPrefix: o.subjectPrefix ?? (process.env.RSTAR_SUBJECT_PREFIX || undefined),
        name: `rstar-provision-${o.as}`,
        ...securedBusOptionsFromEnv(o.as),
        manageStream: true,
      });
      process.stdout.write(`stream ${bus.stream} (subjects ${bus.prefix}.>) is in place\n`);
      await bus.close();
    });

  sec
    .command('nsc')
    .description('the principals and their permissions as nsc commands, for decentralized JWT accounts')
    .option('--stream <name>', 'JetStream stream', 'RSTAR')
    .option('--subject-prefix <prefix>', 'subject prefix', 'rstar')
    .option('--account <name>', 'NATS account', 'RSTAR')
    .action((o: { stream: string; subjectPrefix: string; account: string }) => {
      process.stdout.write(renderNscCommands(PRINCIPALS, { stream: o.stream, subjectPrefix: o.subjectPrefix }, o.account));
    });
}

/**
 * `--instances policy-serving=ps-0,ps-1[;other=...]`: the replica ids whose per-replica durables the NATS
 * permissions grant. @throws Error naming the option for an unknown principal or a bad id.
 */
function parseInstances(text: string | undefined): InstanceIds {
  const out: InstanceIds = {};
  for (const part of (text ?? '').split(';').map((x) => x.trim()).filter(Boolean)) {
    const [name, ids] = part.split('=');
    if (!isPrincipal(name)) throw new CliInputError(`--instances: "${name}" is not a principal; known: ${PRINCIPALS.join(', ')}`);
    const list = (ids ?? '').split(',').map((x) => x.trim()).filter(Boolean);
    const bad = list.find((x) => !/^[A-Za-z0-9_-]{1,64}$/.test(x));
    if (!list.length || bad !== undefined) throw new CliInputError(`--instances: ${name} needs replica ids of letters, digits, "_" or "-" (as RSTAR_INSTANCE_ID), got "${ids ?? ''}"`);
    out[name] = list;
  }
  return out;
}
