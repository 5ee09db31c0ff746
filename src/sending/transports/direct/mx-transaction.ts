import { dataBlock, positive, RelaySession, SessionFailure, type Reply } from '../relay-session.js';
import { bounced, deferred, saysSlowDown, type RecipientResult, type Remote } from './attempt.js';

/**
 * What one transaction with one server did: recipients it settled (delivered, bounced, or deferred
 * for good in this attempt), recipients worth trying at the next address (`retry`), the last
 * refusal, and whether the server asked us to slow down.
 */
export type Transacted = {
  settled: RecipientResult[];
  retry: string[];
  refusal: { reply: string; code: number | null } | null;
  slowDown: boolean;
  /** The replies owed to the next message's envelope, when it went out behind this message. */
  ahead: Promise<Reply>[] | null;
};

/** The envelope of the message to send behind this one on the same session (PIPELINING), if there is one. */
export type Lookahead = () => { from: string; recipients: string[] } | null;

const refusalOf = (reply: Reply) => ({ reply: reply.text, code: reply.code });

/**
 * One message to some recipients of one domain over an open session (RFC 5321 §3.3): MAIL FROM,
 * one RCPT TO each, DATA. Each recipient gets its own answer: a 5xx to its RCPT bounces it alone,
 * a 4xx sends it on to the next address; a 5xx after DATA bounces everyone taken, a 4xx sends them
 * on. A session lost before the final dot sends everyone on; after it the message may have arrived,
 * so its recipients are deferred to a later attempt rather than tried again at once.
 */
export async function transact(
  session: RelaySession,
  message: { from: string; recipients: string[]; body: Buffer },
  remote: Remote,
  pipelined: { envelopeReplies?: Promise<Reply>[]; lookahead?: Lookahead } = {},
): Promise<Transacted> {
  const { from, recipients, body } = message;
  let replies: Reply[];
  try {
    replies = await (pipelined.envelopeReplies ? Promise.all(pipelined.envelopeReplies) : session.sendEnvelope(session.envelopeCommands({ from, to: recipients })));
  } catch (error) {
    return lostBeforeData(error, recipients);
  }
  const [mail, ...rest] = replies as [Reply, ...Reply[]];
  if (!positive(mail)) {
    // A sender refused for good is not the recipients' fault: bounced, never suppressed.
    if (mail.code >= 500) return { settled: bounced(recipients, mail.text, mail.code, remote, false), retry: [], refusal: refusalOf(mail), slowDown: false, ahead: null };
    return { settled: [], retry: recipients, refusal: refusalOf(mail), slowDown: saysSlowDown(mail.code, mail.text), ahead: null };
  }
  const data = rest.length === recipients.length + 1 ? rest.pop()! : null;
  const settled: RecipientResult[] = [];
  const retry: string[] = [];
  const accepted: string[] = [];
  let refusal: Transacted['refusal'] = null;
  let slowDown = false;
  rest.forEach((reply, i) => {
    const address = recipients[i]!;
    if (positive(reply)) return accepted.push(address);
    refusal = refusalOf(reply);
    slowDown ||= saysSlowDown(reply.code, reply.text);
    if (reply.code >= 500) settled.push(...bounced([address], reply.text, reply.code, remote, true));
    else retry.push(address);
  });
  // Without PIPELINING the commands stop at the first refusal: the recipients never asked go on.
  retry.push(...recipients.slice(rest.length));
  if (accepted.length === 0 || data?.code !== 354) {
    if (data && data.code !== 354 && accepted.length > 0) {
      refusal = refusalOf(data);
      slowDown ||= saysSlowDown(data.code, data.text);
      if (data.code >= 500) settled.push(...bounced(accepted, data.text, data.code, remote, false));
      else retry.push(...accepted);
    }
    await endTransaction(session, data);
    return { settled, retry, refusal, slowDown, ahead: null };
  }
  // With PIPELINING the next message's envelope goes out behind this one's final dot, in one write.
  const next = session.pipelining ? (pipelined.lookahead?.() ?? null) : null;
  const nextCommands = next ? session.envelopeCommands({ from: next.from, to: next.recipients }) : [];
  const [finalReply, ...ahead] = session.send([...dataBlock(body), ...nextCommands], 1 + nextCommands.length, session.timeouts.dataEnd);
  for (const reply of ahead) reply.catch(() => undefined);
  const aheadOrNull = next ? ahead : null;
  let final: Reply;
  try {
    final = await finalReply!;
  } catch (error) {
    const failure = error as SessionFailure;
    return { settled: [...settled, ...deferred(accepted, `no reply after the message was sent: ${failure.message}`, failure.code ?? null, remote)], retry, refusal, slowDown, ahead: aheadOrNull };
  }
  if (positive(final)) {
    settled.push(...accepted.map((address): RecipientResult => ({ address, status: 'delivered', reply: final.text, remote })));
  } else {
    refusal = refusalOf(final);
    slowDown ||= saysSlowDown(final.code, final.text);
    if (final.code >= 500) settled.push(...bounced(accepted, final.text, final.code, remote, true));
    else retry.push(...accepted);
  }
  return { settled, retry, refusal, slowDown, ahead: aheadOrNull };
}

function lostBeforeData(error: unknown, recipients: string[]): Transacted {
  const failure = error instanceof SessionFailure ? error : new SessionFailure((error as Error).message);
  return {
    settled: [],
    retry: recipients,
    refusal: { reply: failure.message, code: failure.code },
    slowDown: saysSlowDown(failure.code, failure.message),
    ahead: null,
  };
}

/** Closes a DATA the server opened anyway (empty), or resets the transaction; a session that fails here is only not used again. */
async function endTransaction(session: RelaySession, data: Reply | null): Promise<void> {
  if (session.closed) return;
  const ending = data?.code === 354 ? session.send(dataBlock(Buffer.alloc(0)), 1)[0]! : session.command('RSET');
  await ending.then((reply) => positive(reply) || session.destroy(), () => session.destroy());
}
