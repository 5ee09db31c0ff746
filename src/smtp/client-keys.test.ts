import { describe, expect, it } from 'vitest';
import { clientKeys } from './client-keys.js';

describe('clientKeys', () => {
  it('an IPv4 client is its address in its /24, and its IPv4-mapped IPv6 forms are the same client', () => {
    const plain = clientKeys('192.0.2.77');
    expect(plain).toEqual({ client: '192.0.2.77', network: '192.0.2.0/24' });
    expect(clientKeys('::ffff:192.0.2.77')).toEqual(plain);
    expect(clientKeys('::FFFF:c000:24d')).toEqual(plain);
    expect(clientKeys('192.0.2.200').network).toBe(plain.network);
    expect(clientKeys('192.0.3.77').network).not.toBe(plain.network);
  });

  it('an IPv6 client is its /64, however it writes its address; the next /64 is another client', () => {
    const keys = clientKeys('2001:db8:1:2::1');
    expect(keys).toEqual({ client: '2001:db8:1:2::/64', network: '2001:db8:1:2::/64' });
    expect(clientKeys('2001:DB8:1:2:ffff:ffff:ffff:ffff')).toEqual(keys);
    expect(clientKeys('2001:0db8:0001:0002:0000:0000:0000:0009')).toEqual(keys);
    expect(clientKeys('2001:db8:1:3::1').client).not.toBe(keys.client);
  });
});
