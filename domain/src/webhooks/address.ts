import { isIP } from 'node:net';

/**
 * The address rules of webhook targets (spec "Webhook operations", rule 4;
 * decisions §6 and §9): every address a hostname resolves to must be publicly
 * routable. IPv4-mapped, IPv4-compatible, NAT64 and 6to4 IPv6 forms are
 * unwrapped to the IPv4 address they carry first, so `::ffff:127.0.0.1` is
 * loopback. `allowPrivate` (WEBHOOK_ALLOW_PRIVATE_TARGETS=1) opens loopback and
 * RFC 1918 only; everything else below stays refused.
 */
export type AddressClass =
  | 'public'
  | 'loopback'
  | 'private'
  | 'link-local'
  | 'unspecified'
  | 'multicast'
  | 'cgnat'
  | 'unique-local'
  | 'reserved'
  | 'invalid';

/** The classes WEBHOOK_ALLOW_PRIVATE_TARGETS=1 opens. */
const OPENED_BY_ALLOW_PRIVATE: ReadonlySet<AddressClass> = new Set(['loopback', 'private']);

export interface AddressPolicy {
  allowPrivate: boolean;
}

/** Null when the address may be a webhook target, else the class that refuses it. */
export function refusedAddress(address: string, policy: AddressPolicy): AddressClass | null {
  const c = classifyAddress(address);
  if (c === 'public') return null;
  if (policy.allowPrivate && OPENED_BY_ALLOW_PRIVATE.has(c)) return null;
  return c;
}

/**
 * Checks a whole DNS answer: it must be non-empty and every address must pass
 * (one refused address refuses the host: a client could connect to any of them).
 */
export function checkResolved(
  addresses: readonly string[],
  policy: AddressPolicy,
): { ok: true } | { ok: false; reason: AddressClass | 'unresolvable'; address?: string } {
  if (addresses.length === 0) return { ok: false, reason: 'unresolvable' };
  for (const a of addresses) {
    const r = refusedAddress(a, policy);
    if (r) return { ok: false, reason: r, address: a };
  }
  return { ok: true };
}

export function classifyAddress(address: string): AddressClass {
  const a = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const kind = isIP(a);
  if (kind === 4) return classifyV4(parseV4(a)!);
  if (kind === 6) {
    const bytes = parseV6(a);
    if (!bytes) return 'invalid';
    return classifyV6(bytes);
  }
  return 'invalid';
}

/** The IPv4 address an IPv6 form carries (mapped, compatible, NAT64, 6to4), or null. */
export function embeddedV4(bytes: Uint8Array): number[] | null {
  const zero = (from: number, to: number) => bytes.slice(from, to).every((b) => b === 0);
  // ::ffff:a.b.c.d (mapped) and ::ffff:0:a.b.c.d (translated)
  if (zero(0, 10) && bytes[10] === 0xff && bytes[11] === 0xff) return [...bytes.slice(12, 16)];
  if (zero(0, 8) && bytes[8] === 0xff && bytes[9] === 0xff && zero(10, 12)) return [...bytes.slice(12, 16)];
  // ::a.b.c.d (compatible, deprecated); :: and ::1 are themselves
  if (zero(0, 12) && !(zero(12, 15) && bytes[15] <= 1)) return [...bytes.slice(12, 16)];
  // 64:ff9b::/96 (NAT64)
  if (bytes[0] === 0 && bytes[1] === 0x64 && bytes[2] === 0xff && bytes[3] === 0x9b && zero(4, 12))
    return [...bytes.slice(12, 16)];
  // 2002::/16 (6to4): the IPv4 address is in bits 16-47
  if (bytes[0] === 0x20 && bytes[1] === 0x02) return [...bytes.slice(2, 6)];
  return null;
}

function classifyV4([a, b, c]: number[]): AddressClass {
  if (a === 0) return 'unspecified'; // 0.0.0.0/8
  if (a === 127) return 'loopback';
  if (a === 10 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168)) return 'private';
  if (a === 169 && b === 254) return 'link-local'; // includes 169.254.169.254 (cloud metadata)
  if (a === 100 && b >= 64 && b <= 127) return 'cgnat';
  if (a >= 224 && a <= 239) return 'multicast';
  if (a >= 240) return 'reserved'; // 240/4 and 255.255.255.255
  if (a === 192 && b === 0 && (c === 0 || c === 2)) return 'reserved'; // IETF assignments, TEST-NET-1
  if (a === 192 && b === 88 && c === 99) return 'reserved'; // 6to4 relay anycast
  if (a === 198 && (b === 18 || b === 19)) return 'reserved'; // benchmarking
  if ((a === 198 && b === 51 && c === 100) || (a === 203 && b === 0 && c === 113)) return 'reserved'; // TEST-NET-2/3
  return 'public';
}

function classifyV6(bytes: Uint8Array): AddressClass {
  const v4 = embeddedV4(bytes);
  if (v4) return classifyV4(v4);
  const allZero = bytes.every((b) => b === 0);
  if (allZero) return 'unspecified';
  if (bytes.slice(0, 15).every((b) => b === 0) && bytes[15] === 1) return 'loopback';
  if (bytes[0] === 0xff) return 'multicast';
  if ((bytes[0] & 0xfe) === 0xfc) return 'unique-local'; // fc00::/7
  // fe80::/10 (fd00:ec2::254 is unique-local above)
  if (bytes[0] === 0xfe && (bytes[1] & 0xc0) === 0x80) return 'link-local';
  if (bytes[0] === 0xfe && (bytes[1] & 0xc0) === 0xc0) return 'reserved'; // fec0::/10 site-local
  if ((bytes[0] & 0xe0) !== 0x20) return 'reserved'; // outside 2000::/3 global unicast
  // documentation
  if (bytes[0] === 0x20 && bytes[1] === 0x01 && bytes[2] === 0x0d && bytes[3] === 0xb8) return 'reserved';
  // 2001::/23 IETF (Teredo, benchmarking, ORCHID)
  if (bytes[0] === 0x20 && bytes[1] === 0x01 && bytes[2] < 0x02) return 'reserved';
  return 'public';
}

function parseV4(s: string): number[] | null {
  const parts = s.split('.');
  if (parts.length !== 4) return null;
  const n = parts.map((p) => (/^\d{1,3}$/.test(p) ? Number(p) : NaN));
  return n.every((x) => x >= 0 && x <= 255) ? n : null;
}

/** 16 bytes of an IPv6 literal (with `::` and an optional dotted IPv4 tail), or null. */
export function parseV6(s: string): Uint8Array | null {
  let text = s.toLowerCase();
  let tail: number[] = [];
  const dotted = text.match(/^(.*:)(\d+\.\d+\.\d+\.\d+)$/);
  if (dotted) {
    const v4 = parseV4(dotted[2]);
    if (!v4) return null;
    tail = v4;
    text = dotted[1].endsWith('::') ? dotted[1] : dotted[1].slice(0, -1);
  }
  const halves = text.split('::');
  if (halves.length > 2) return null;
  const groups = (h: string) => (h === '' ? [] : h.split(':'));
  const head = groups(halves[0]);
  const rest = halves.length === 2 ? groups(halves[1]) : [];
  const want = 8 - tail.length / 2;
  const fill = halves.length === 2 ? want - head.length - rest.length : 0;
  if (fill < 0 || (halves.length === 1 && head.length !== want)) return null;
  const all = [...head, ...Array(fill).fill('0'), ...rest];
  const out = new Uint8Array(16);
  for (let i = 0; i < all.length; i++) {
    if (!/^[0-9a-f]{1,4}$/.test(all[i])) return null;
    const v = parseInt(all[i], 16);
    out[i * 2] = v >> 8;
    out[i * 2 + 1] = v & 0xff;
  }
  tail.forEach((b, i) => (out[12 + i] = b));
  return out;
}
