import { isIP } from 'node:net';

/**
 * True when `host` only accepts connections from this machine: `localhost`, an IPv4 address in
 * 127.0.0.0/8 or `::1` (with or without URL brackets). Every other value (`0.0.0.0`, `::`, a LAN address,
 * a name) may be reached from the network.
 */
export function isLoopbackHost(host: string): boolean {
  const h = host.trim().toLowerCase().replace(/^\[(.*)\]$/, '$1');
  if (h === 'localhost' || h === '::1' || h === '0:0:0:0:0:0:0:1') return true;
  return isIP(h) === 4 && h.startsWith('127.');
}
