import { randomBytes } from 'node:crypto';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../config';

/** A start-up refusal the launcher prints as one line, without a stack trace. */
export class StartupError extends Error {
  override name = 'StartupError';
}

const SECRET_FILE = 'service-secret.key';
/** SERVICE_SECRET, when set, must carry at least this much key material. */
const MIN_SECRET_CHARS = 32;

/**
 * The service secret keys cursors, blind indexes and sealed payloads: replacing
 * it silently would make every sealed field unreadable and every sensitive
 * lookup miss. So a key is generated only for a log that is still empty; with
 * data present a missing or corrupt key file stops the start, naming the file.
 */
export function loadSecret(config: Config, hasData: boolean): Buffer {
  if (config.serviceSecret) {
    if (config.serviceSecret.length < MIN_SECRET_CHARS)
      throw new StartupError(
        `SERVICE_SECRET is too short: give at least ${MIN_SECRET_CHARS} characters of random key material`,
      );
    return Buffer.from(config.serviceSecret, 'utf8');
  }
  const file = join(config.dataDir, SECRET_FILE);
  let stat;
  try {
    stat = statSync(file);
  } catch {
    stat = undefined;
  }
  if (!stat) {
    if (hasData)
      throw new StartupError(
        `${file} is missing but ${config.dataDir} already holds data: restore the key file from backup ` +
          `(or set SERVICE_SECRET to the key in use). A new key would make sealed fields, sensitive lookups ` +
          `and cursors unreadable.`,
      );
    writeFileSync(file, randomBytes(32).toString('hex'), { mode: 0o600 });
  } else if (!stat.isFile())
    throw new StartupError(
      `${file} is not a file: remove what is there (a new key is generated only for an empty data ` +
        `directory) or restore the key file`,
    );
  const text = readFileSync(file, 'utf8').trim();
  if (!/^[0-9a-f]{64}$/i.test(text))
    throw new StartupError(
      `${file} is corrupt: it must hold 64 hexadecimal characters (32 bytes); restore it from ` +
        `backup${hasData ? '' : ', or delete it on this empty data directory to generate a new one'}`,
    );
  return Buffer.from(text, 'hex');
}
