type Waiting<T> = { items: T[]; resolve: () => void; reject: (error: unknown) => void };

/**
 * Group commit: the writes of concurrent callers joined into one statement. While fewer than
 * `maxInFlight` statements run, a write goes out on the next turn of the event loop with whatever
 * else arrived in that turn, so a lone caller waits for nothing; once that many run, callers queue
 * and the next statement takes every one of them (up to `maxItems` rows). Under load a request then
 * costs a share of one round trip and one commit instead of its own.
 *
 * Each caller learns its own fate: when a joined statement fails, each caller's rows are written
 * again on their own, so one caller's bad rows never fail another's. With `failTogether`, a joined
 * write that fails fails all its callers: for writes that fail only with the database, whose
 * callers' rows would fail again alone.
 */
export class GroupedWrites<T> {
  private readonly queue: Waiting<T>[] = [];
  private inFlight = 0;
  private scheduled = false;

  private readonly maxItems: number;
  private readonly failTogether: boolean;

  constructor(
    private readonly write: (items: T[]) => Promise<void>,
    private readonly maxInFlight: number,
    options: { maxItems?: number; failTogether?: boolean } = {},
  ) {
    this.maxItems = options.maxItems ?? 1000;
    this.failTogether = options.failTogether ?? false;
  }

  add(items: T[]): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ items, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.inFlight >= this.maxInFlight || this.queue.length === 0) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      while (this.inFlight < this.maxInFlight && this.queue.length > 0) this.start(this.takeGroup());
    });
  }

  private takeGroup(): Waiting<T>[] {
    const group: Waiting<T>[] = [];
    let rows = 0;
    while (this.queue.length > 0 && (group.length === 0 || rows + this.queue[0]!.items.length <= this.maxItems)) {
      const next = this.queue.shift()!;
      rows += next.items.length;
      group.push(next);
    }
    return group;
  }

  private start(group: Waiting<T>[]): void {
    this.inFlight++;
    void this.writeGroup(group).finally(() => {
      this.inFlight--;
      this.schedule();
    });
  }

  private async writeGroup(group: Waiting<T>[]): Promise<void> {
    if (group.length === 1) return this.writeAlone(group[0]!);
    try {
      await this.write(group.flatMap((waiting) => waiting.items));
    } catch (error) {
      if (this.failTogether) for (const waiting of group) waiting.reject(error);
      else await Promise.all(group.map((waiting) => this.writeAlone(waiting)));
      return;
    }
    for (const waiting of group) waiting.resolve();
  }

  private async writeAlone(waiting: Waiting<T>): Promise<void> {
    try {
      await this.write(waiting.items);
      waiting.resolve();
    } catch (error) {
      waiting.reject(error);
    }
  }
}
