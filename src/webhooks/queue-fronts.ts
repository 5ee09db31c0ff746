/**
 * Where each webhook's queue began (claimDueCalls reads from there, past the finished calls a
 * queue piles up at its front), used only once it is sure to hold. A call's seq is drawn when its
 * transaction writes it, not when that commits: a call committed just after a read can sit behind
 * the front the read found. So what a claim found is used `lagMs` later, when every transaction
 * open at that read has long committed; until then the claims read from the last front that old.
 * Everything is forgotten every `maxAgeMs`, for a call put back ahead of a front by hand, or by a
 * transaction open longer than `lagMs`.
 */
export class QueueFronts {
  #used = new Map<string, string>();
  /** What claims found, oldest first, one a second at most. */
  #found: Array<{ at: number; fronts: Map<string, string> }> = [];
  #forgottenAt: number;

  constructor(
    private readonly options: { lagMs: number; maxAgeMs: number },
    private readonly now: () => number = Date.now,
  ) {
    this.#forgottenAt = now();
  }

  /** Fronts for the next claim, which moves them on: hand them back to `found`. */
  forClaim(): Map<string, string> {
    const now = this.now();
    if (now - this.#forgottenAt >= this.options.maxAgeMs) {
      this.#used = new Map();
      this.#found = [];
      this.#forgottenAt = now;
    }
    while (this.#found.length > 0 && now - this.#found[0]!.at >= this.options.lagMs) this.#used = this.#found.shift()!.fronts;
    return new Map(this.#used);
  }

  found(fronts: Map<string, string>): void {
    const now = this.now();
    const last = this.#found.at(-1);
    if (!last || now - last.at >= 1_000) this.#found.push({ at: now, fronts });
  }
}
