import { Command } from 'commander';
import { register } from '../../cli/src/commands/grade.command';
const p = new Command('rstar'); register(p); p.parseAsync(process.argv).catch((e) => { console.error(e.message); process.exit(1); });
