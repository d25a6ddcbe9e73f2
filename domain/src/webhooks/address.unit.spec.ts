import { describe, expect, it } from 'vitest';
import { checkResolved, classifyAddress, refusedAddress } from './address';

const strict = { allowPrivate: false };
const open = { allowPrivate: true };

describe('webhook target addresses', () => {
  it.each([
    ['8.8.8.8', 'public'],
    ['1.1.1.1', 'public'],
    ['2606:4700:4700::1111', 'public'],
    ['2001:4860:4860::8888', 'public'],
  ])('%s is public', (a, c) => expect(classifyAddress(a)).toBe(c));

  it.each([
    // loopback
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['::1', 'loopback'],
    // RFC 1918
    ['10.0.0.1', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    // link-local and cloud metadata
    ['169.254.169.254', 'link-local'],
    ['169.254.0.1', 'link-local'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    // any-local and 0.0.0.0/8
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['::', 'unspecified'],
    // multicast
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['ff02::1', 'multicast'],
    // CGNAT
    ['100.64.0.1', 'cgnat'],
    ['100.127.255.255', 'cgnat'],
    // unique-local (includes the fd00:ec2::254 metadata address)
    ['fc00::1', 'unique-local'],
    ['fd12:3456::1', 'unique-local'],
    ['fd00:ec2::254', 'unique-local'],
    // reserved
    ['240.0.0.1', 'reserved'],
    ['255.255.255.255', 'reserved'],
    ['192.0.2.1', 'reserved'],
    ['198.18.0.1', 'reserved'],
    ['203.0.113.9', 'reserved'],
    ['2001:db8::1', 'reserved'],
    ['fec0::1', 'reserved'],
    ['100::1', 'reserved'],
    ['2001:0:4136:e378::1', 'reserved'],
  ])('%s is %s', (a, c) => expect(classifyAddress(a)).toBe(c));

  it.each([
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:169.254.169.254', 'link-local'],
    ['::ffff:a9fe:a9fe', 'link-local'],
    ['::ffff:10.1.2.3', 'private'],
    ['::ffff:100.64.1.1', 'cgnat'],
    ['::ffff:224.0.0.1', 'multicast'],
    ['::ffff:0.0.0.0', 'unspecified'],
    ['::127.0.0.1', 'loopback'],
    ['::ffff:0:127.0.0.1', 'loopback'],
    ['64:ff9b::a9fe:a9fe', 'link-local'],
    ['2002:7f00:1::1', 'loopback'],
    ['::ffff:8.8.8.8', 'public'],
    ['[::ffff:127.0.0.1]', 'loopback'],
  ])('IPv4-mapped/embedded %s unwraps to %s', (a, c) => expect(classifyAddress(a)).toBe(c));

  it('WEBHOOK_ALLOW_PRIVATE_TARGETS opens loopback and RFC 1918 only', () => {
    for (const a of ['127.0.0.1', '::1', '10.0.0.1', '192.168.0.5', '172.20.1.1', '::ffff:127.0.0.1']) {
      expect(refusedAddress(a, strict)).not.toBeNull();
      expect(refusedAddress(a, open)).toBeNull();
    }
    for (const a of [
      '169.254.169.254',
      '::ffff:169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '224.0.0.1',
      'fc00::1',
      'fe80::1',
      '240.0.0.1',
      '::',
    ])
      expect(refusedAddress(a, open)).not.toBeNull();
  });

  it('a DNS answer passes only when non-empty and every address passes', () => {
    expect(checkResolved([], strict)).toEqual({ ok: false, reason: 'unresolvable' });
    expect(checkResolved(['8.8.8.8'], strict)).toEqual({ ok: true });
    expect(checkResolved(['8.8.8.8', '10.0.0.1'], strict)).toMatchObject({
      ok: false,
      reason: 'private',
      address: '10.0.0.1',
    });
    expect(checkResolved(['not-an-ip'], strict)).toMatchObject({ ok: false, reason: 'invalid' });
  });
});
