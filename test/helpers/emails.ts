import { expectOk, type TestServer } from './server.js';
import { waitFor } from './wait.js';

export const statusesOf = (email: { emailEvents: { status: string }[] }) => email.emailEvents.map((event) => event.status);

/** Polls GET /v1/emails/{id} until the email satisfies the predicate; fails after the timeout. */
export function waitForEmail(server: Pick<TestServer, 'call'>, key: string, id: string, predicate: (email: any) => boolean, timeoutMs?: number): Promise<any> {
  return waitFor(`email ${id} in the expected state`, () => expectOk(server, key, 'GET', `/v1/emails/${id}`), predicate, timeoutMs);
}

/** Done with sending: nothing more will happen to it without outside feedback. */
export const settled = (email: { latestStatus: string }) => !['QUEUED', 'SCHEDULED', 'DELIVERY_DELAYED'].includes(email.latestStatus);

/**
 * Waits until the dispatcher is done with these emails (with none named: with every email): none
 * is claimed, none is due. What has not left by then is not going to, so a check that something
 * was not sent belongs after this.
 */
export async function dispatcherDone(server: Pick<TestServer, 'deps'>, ids?: string[], timeoutMs = 30_000): Promise<void> {
  if (ids?.length === 0) return;
  const busy = async () => {
    let query = server.deps.db
      .selectFrom('emails')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where((eb) => eb.or([eb('claimed_by', 'is not', null), eb('send_at', '<=', new Date())]));
    if (ids) query = query.where('id', 'in', ids);
    return Number((await query.executeTakeFirstOrThrow()).n);
  };
  await waitFor('the dispatcher done with the mail', busy, (n) => n === 0, timeoutMs);
}
