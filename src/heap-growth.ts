import v8 from 'node:v8';

/**
 * How far V8 lets the old generation grow past what was live at its last full collection before
 * collecting it again, for the whole process. Left to V8 the factor reaches 4: sending at full
 * speed promotes each claimed batch's rows and messages (they outlive two young collections), and
 * a process whose live data is ~50 MB let ~150 MB of them pile up, most of what its RSS grew by.
 * At 2, measured on a 100,000-contact campaign, an automation's send step and a campaign with a
 * webhook on (BENCHMARKS.md), the peaks fell by 35 to 110 MB and the rates did not move: a full
 * collection marks what is live, about the same however much garbage lies beside it, and does
 * most of it on threads of its own. Set at run time rather than on node's command line, which
 * refuses a flag that its V8 no longer knows.
 */
export function limitHeapGrowth(): void {
  v8.setFlagsFromString('--heap-growing-percent=100');
}
