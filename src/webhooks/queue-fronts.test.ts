import { describe, expect, it } from 'vitest';
import { QueueFronts } from './queue-fronts.js';

/** QueueFronts on a clock the test moves. */
function frontsAt(options = { lagMs: 10_000, maxAgeMs: 60_000 }) {
  let now = 0;
  const fronts = new QueueFronts(options, () => now);
  return { fronts, advance: (ms: number) => (now += ms) };
}

/** One claim: the fronts it reads from, and the ones it finds (as claimDueCalls moves them on). */
function claim(fronts: QueueFronts, found: Record<string, string>): Record<string, string> {
  const used = fronts.forClaim();
  const readFrom = Object.fromEntries(used);
  for (const [key, seq] of Object.entries(found)) used.set(key, seq);
  fronts.found(used);
  return readFrom;
}

describe('QueueFronts', () => {
  it('a front is read from only once lagMs passed since it was found, so a call committed late behind it is still claimed', () => {
    const { fronts, advance } = frontsAt();
    expect(claim(fronts, { w: '100' })).toEqual({});
    advance(9_999);
    // Calls written before seq 100 may still be committing: the claims read the whole queue.
    expect(claim(fronts, { w: '150' })).toEqual({});
    advance(1);
    expect(claim(fronts, { w: '150' })).toEqual({ w: '100' });
    advance(10_000);
    expect(claim(fronts, { w: '200' })).toEqual({ w: '150' });
  });

  it('everything is forgotten after maxAgeMs: a call put back ahead of every front is claimed again', () => {
    const { fronts, advance } = frontsAt();
    for (let second = 0; second < 59; second++) {
      claim(fronts, { w: String(100 + second) });
      advance(1_000);
    }
    expect(claim(fronts, {}).w).toBeDefined();
    advance(1_000);
    expect(claim(fronts, { w: '500' })).toEqual({});
  });

  it('what claims found is kept once a second at most, however often they claim', () => {
    const { fronts, advance } = frontsAt({ lagMs: 2_000, maxAgeMs: 60_000 });
    for (let i = 0; i < 100; i++) {
      claim(fronts, { w: String(i) });
      advance(10);
    }
    advance(2_000 - 1_000);
    // The claim of time 0 (w: 0) is the one kept for the first second; those after it were dropped.
    expect(claim(fronts, {})).toEqual({ w: '0' });
  });
});
