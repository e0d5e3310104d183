import { statSync } from 'node:fs';
import { CliInputError } from './cli.errors';

/**
 * Check a JSON-lines input path before any work starts (a sandbox pool, a model), so a typo is one clear
 * error. @throws Error naming the path and the fix when it does not exist or is not a regular file.
 */
export function assertReadableFile(file: string): void {
  let isFile: boolean;
  try {
    isFile = statSync(file).isFile();
  } catch {
    throw new CliInputError(`input file ${file} does not exist; pass a JSON-lines file or pipe the lines on stdin`);
  }
  if (!isFile) throw new CliInputError(`input ${file} is not a file; pass a JSON-lines file or pipe the lines on stdin`);
}
