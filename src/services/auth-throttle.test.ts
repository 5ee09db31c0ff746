import { describe, expect, it } from 'vitest';
import { AuthThrottle, BLOCK_MS, type Reservation } from './auth-throttle.js';

const MINUTE = 60_000;
// The addresses AuthThrottle remembers at most (MAX_ADDRESSES in auth-throttle.ts, not exported).
const MAX_ADDRESSES = 10_000;

/** A throttle on a clock the test moves. */
function throttleAt(limit: number, start = 1_700_000_000_000) {
  const clock = { now: start };
  const throttle = new AuthThrottle(limit, () => clock.now);
  return { throttle, clock, advance: (ms: number) => (clock.now += ms) };
}

describe('AuthThrottle', () => {
  it('the first failure answers at once, each later one 250 ms later than the last, up to 3 s', () => {
    const { throttle, advance } = throttleAt(100);
    const delays: number[] = [];
    for (let i = 0; i < 16; i++) {
      delays.push(throttle.fail('192.0.2.1'));
      advance(1_000);
    }
    expect(delays).toStrictEqual([0, 250, 500, 750, 1000, 1250, 1500, 1750, 2000, 2250, 2500, 2750, 3000, 3000, 3000, 3000]);
  });

  it('`limit` failures within a minute refuse the address for BLOCK_MS, and blockedUntil says until when', () => {
    const { throttle, clock, advance } = throttleAt(5);
    for (let i = 0; i < 4; i++) {
      throttle.fail('192.0.2.1');
      expect(throttle.blockedUntil('192.0.2.1')).toBeNull();
      advance(14_000);
    }
    // The fifth 56 s after the first: still within the minute.
    throttle.fail('192.0.2.1');
    const blockedAt = clock.now;
    expect(throttle.blockedUntil('192.0.2.1')).toBe(blockedAt + BLOCK_MS);
    advance(BLOCK_MS / 2);
    expect(throttle.blockedUntil('192.0.2.1')).toBe(blockedAt + BLOCK_MS);
  });

  it('failures spread over more than a minute never block, and the delay starts over with each minute', () => {
    const { throttle, advance } = throttleAt(3);
    const delays: number[] = [];
    for (let i = 0; i < 12; i++) {
      delays.push(throttle.fail('192.0.2.1'));
      expect(throttle.blockedUntil('192.0.2.1')).toBeNull();
      advance(MINUTE / 2);
    }
    expect(delays).toStrictEqual([0, 250, 0, 250, 0, 250, 0, 250, 0, 250, 0, 250]);
  });

  it('the block ends after BLOCK_MS, and the next failure counts from zero again', () => {
    const { throttle, clock, advance } = throttleAt(3);
    for (let i = 0; i < 3; i++) throttle.fail('192.0.2.1');
    const until = throttle.blockedUntil('192.0.2.1')!;
    expect(until).toBe(clock.now + BLOCK_MS);
    advance(BLOCK_MS - 1);
    expect(throttle.blockedUntil('192.0.2.1')).toBe(until);
    advance(1);
    expect(throttle.blockedUntil('192.0.2.1')).toBeNull();
    expect(throttle.fail('192.0.2.1')).toBe(0);
    expect(throttle.blockedUntil('192.0.2.1')).toBeNull();
    expect(throttle.fail('192.0.2.1')).toBe(250);
    expect(throttle.blockedUntil('192.0.2.1')).toBeNull();
  });

  it('a blocked address does not affect any other', () => {
    const { throttle } = throttleAt(3);
    for (let i = 0; i < 3; i++) throttle.fail('192.0.2.1');
    expect(throttle.blockedUntil('192.0.2.1')).not.toBeNull();
    expect(throttle.blockedUntil('192.0.2.2')).toBeNull();
    expect(throttle.blockedUntil('2001:db8::/64')).toBeNull();
    expect(throttle.fail('192.0.2.2')).toBe(0);
    expect(throttle.blockedUntil('192.0.2.2')).toBeNull();
  });

  it(`it remembers at most ${MAX_ADDRESSES} addresses that are not blocked, forgetting the oldest first`, () => {
    const { throttle } = throttleAt(1_000);
    const others = Array.from({ length: MAX_ADDRESSES }, (_, i) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`);
    throttle.fail('192.0.2.1');
    for (const address of others) throttle.fail(address);
    // One past the cap: the oldest is forgotten, so its next failure is a first one again
    // (and the address comes back as the newest, pushing out the next oldest).
    expect(throttle.fail('192.0.2.1')).toBe(0);
    expect(throttle.fail(others[0]!)).toBe(0);
    // The newer ones are still remembered.
    expect(throttle.fail(others[2]!)).toBe(250);
    expect(throttle.fail(others.at(-1)!)).toBe(250);

    // However many addresses fail, only the newest MAX_ADDRESSES are remembered.
    const many = Array.from({ length: 5 * MAX_ADDRESSES }, (_, i) => `m${i}`);
    for (const address of many) throttle.fail(address);
    expect(throttle.fail(many[4 * MAX_ADDRESSES - 1]!)).toBe(0);
    expect(throttle.fail(many.at(-1)!)).toBe(250);
  });

  it('a blocked address is never forgotten to make room, however many others fail', () => {
    const { throttle, clock } = throttleAt(2);
    throttle.fail('192.0.2.1');
    throttle.fail('192.0.2.1');
    const until = clock.now + BLOCK_MS;
    expect(throttle.blockedUntil('192.0.2.1')).toBe(until);
    for (let i = 0; i < 2 * MAX_ADDRESSES; i++) throttle.fail(`a${i}`);
    expect(throttle.blockedUntil('192.0.2.1')).toBe(until);
  });
});

describe('AuthThrottle.reserve', () => {
  const reserved = (outcome: Reservation | { blockedUntil: number }) => {
    if (!('giveBack' in outcome)) throw new Error(`refused until ${outcome.blockedUntil}`);
    return outcome;
  };

  it('counts each attempt before its outcome: of attempts all under way at once, the limit-th blocks every later one', () => {
    const { throttle, clock } = throttleAt(3);
    const outcomes = Array.from({ length: 5 }, () => throttle.reserve(['address 192.0.2.1', 'account a@example.test']));
    expect(outcomes.slice(0, 3).map((outcome) => ('delay' in outcome ? outcome.delay : null))).toStrictEqual([0, 250, 500]);
    expect(outcomes.slice(3)).toStrictEqual([{ blockedUntil: clock.now + BLOCK_MS }, { blockedUntil: clock.now + BLOCK_MS }]);
  });

  it('a key that is blocked refuses the attempt, and the other keys count nothing for it', () => {
    const { throttle } = throttleAt(2);
    throttle.fail('account a@example.test');
    throttle.fail('account a@example.test');
    expect(throttle.reserve(['address 192.0.2.1', 'account a@example.test'])).toHaveProperty('blockedUntil');
    expect(throttle.fail('address 192.0.2.1')).toBe(0);
  });

  it('an attempt given back is not counted, and lifts the block it caused', () => {
    const { throttle } = throttleAt(3);
    reserved(throttle.reserve(['k']));
    reserved(throttle.reserve(['k']));
    const last = reserved(throttle.reserve(['k']));
    expect(throttle.blockedUntil('k')).not.toBeNull();
    last.giveBack();
    expect(throttle.blockedUntil('k')).toBeNull();
    // Two failures stand: the next attempt is the third, and blocks again.
    expect(reserved(throttle.reserve(['k'])).delay).toBe(500);
    expect(throttle.blockedUntil('k')).not.toBeNull();
  });

  it('an attempt given back after its minute ended takes nothing from the next minute', () => {
    const { throttle, advance } = throttleAt(3);
    const old = reserved(throttle.reserve(['k']));
    advance(MINUTE);
    reserved(throttle.reserve(['k']));
    reserved(throttle.reserve(['k']));
    old.giveBack();
    reserved(throttle.reserve(['k']));
    expect(throttle.blockedUntil('k')).not.toBeNull();
  });
});
