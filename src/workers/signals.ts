/**
 * Wake-ups from the code that changes something to the workers of this process that act on it:
 * a service says "emails are due" without knowing whether (or which) dispatcher runs here. With
 * no subscriber the signal is dropped; workers of other processes find the work on their next poll.
 */
type SignalArgs = {
  /** Emails became due now (sent, rescheduled, released, resumed). */
  emailsDue: [];
  /** A campaign batch may be due now (scheduled, resumed). */
  campaignsDue: [];
  /** Automation runs may be due now (started by an event, an automation activated or resumed). */
  automationsDue: [];
  /** A domain's key or tracking settings changed, or it is gone: read it afresh before its next email. */
  domainChanged: [domainId: number];
  /** A domain's DNS records should be checked now (verification requested). */
  domainCheckDue: [domainId: number];
  /** Webhook calls became due now (an event was recorded, a call retried or a test sent). */
  webhookCallsDue: [];
  /** This process's dispatcher started (true) or finished (false) sending a run of batches. */
  dispatching: [busy: boolean];
};
export type SignalName = keyof SignalArgs;

export class Signals {
  private readonly listeners: { [S in SignalName]: Set<(...args: SignalArgs[S]) => void> } = {
    emailsDue: new Set(),
    campaignsDue: new Set(),
    automationsDue: new Set(),
    domainChanged: new Set(),
    domainCheckDue: new Set(),
    webhookCallsDue: new Set(),
    dispatching: new Set(),
  };

  emit<S extends SignalName>(signal: S, ...args: SignalArgs[S]): void {
    for (const listener of this.listeners[signal]) listener(...args);
  }

  /** Subscribes until the returned function is called. */
  on<S extends SignalName>(signal: S, listener: (...args: SignalArgs[S]) => void): () => void {
    const set = this.listeners[signal] as Set<(...args: SignalArgs[S]) => void>;
    set.add(listener);
    return () => set.delete(listener);
  }
}
