import { sql } from 'kysely';
import type { Config } from '../config.js';
import type { Db } from '../db/connection.js';
import type { CampaignStatus } from '../db/schema.js';
import type { ClaimedEmail } from '../data/emails.js';
import { domainOf } from '../email-address.js';
import { unsubscribeUrl } from '../feedback/links.js';
import { unsubscribeAddress } from '../feedback/verp.js';
import type { RecipientTokens } from '../feedback/tokens.js';
import { htmlToText } from '../sending/html-to-text.js';
import { addressOf, outgoingEmail, type OutgoingEmail } from '../sending/message.js';
import { compileTemplate, escapeHtml, renderTemplate, UNSUBSCRIBE_PLACEHOLDERS, type Template } from './template.js';

/** What becomes of a claimed campaign email: its message, or why it is not sent now. */
export type CampaignMail =
  | { kind: 'send'; message: OutgoingEmail }
  | { kind: 'hold' }
  | { kind: 'cancel'; reason: string };

type Compiled = { subject: Template; html: Template; text: Template };

type CampaignState = {
  id: string;
  team_id: number;
  status: CampaignStatus;
  subject: string;
  html: string;
  preview_text: string | null;
  contact_book_id: string | null;
  variables: string[] | null;
};

type ContactValues = { id: string; email: string; first_name: string | null; last_name: string | null; properties: Record<string, string>; subscribed: boolean };

// Compiled templates are kept for this many campaigns; a campaign's body never changes.
const TEMPLATE_CACHE_SIZE = 100;

/**
 * Renders campaign mail at send time: per batch, one query for the campaigns' state (a paused or
 * deleted campaign's mail is not sent) and one for the recipients' current data; each campaign's
 * subject, body and text are compiled once per process.
 */
export class CampaignRenderer {
  private readonly templates = new Map<string, Compiled>();

  constructor(
    private readonly db: Db,
    private readonly config: Pick<Config, 'publicUrl' | 'returnPathSubdomain'>,
    private readonly tokens: RecipientTokens,
  ) {}

  async prepare(batch: ClaimedEmail[]): Promise<Map<string, CampaignMail>> {
    const mail = new Map<string, CampaignMail>();
    const ofCampaign = batch.filter((email) => email.campaign_id !== null);
    if (ofCampaign.length === 0) return mail;
    const ids = [...new Set(ofCampaign.map((email) => email.campaign_id!))];
    // campaigns_id, then the contact_books primary key: a few probes.
    const { rows: states } = await sql<CampaignState>`
      SELECT c.id, c.team_id, c.status, c.subject, c.html, c.preview_text, c.contact_book_id, b.variables
      FROM campaigns c LEFT JOIN contact_books b ON b.team_id = c.team_id AND b.id = c.contact_book_id
      WHERE c.id = ANY(${ids}::text[])`.execute(this.db);
    const campaigns = new Map(states.map((state) => [state.id, state]));
    for (const state of states) {
      const emails = ofCampaign.filter((email) => email.campaign_id === state.id);
      const contacts = await this.contacts(state, emails.map((email) => email.contact_id!));
      for (const email of emails) mail.set(email.id, this.mailFor(email, state, contacts.get(email.contact_id!)));
    }
    for (const email of ofCampaign) {
      if (!campaigns.has(email.campaign_id!)) mail.set(email.id, { kind: 'cancel', reason: 'campaign deleted' });
    }
    return mail;
  }

  /** The recipients' data as it is now (contacts primary key, one probe each). */
  private async contacts(state: CampaignState, ids: string[]): Promise<Map<string, ContactValues>> {
    if (state.contact_book_id === null) return new Map();
    const { rows } = await sql<ContactValues>`
      SELECT id, email, first_name, last_name, properties, subscribed FROM contacts
      WHERE team_id = ${state.team_id} AND contact_book_id = ${state.contact_book_id} AND id = ANY(${ids}::text[])`.execute(this.db);
    return new Map(rows.map((row) => [row.id, row]));
  }

  private mailFor(email: ClaimedEmail, state: CampaignState, contact: ContactValues | undefined): CampaignMail {
    if (state.status !== 'RUNNING' && state.status !== 'SENT') return { kind: 'hold' };
    if (!contact) return { kind: 'cancel', reason: 'contact deleted' };
    if (!contact.subscribed) return { kind: 'cancel', reason: 'contact unsubscribed' };
    const template = this.compiled(state);
    const unsubscribe = unsubscribeUrl(this.config.publicUrl, this.tokens, { t: email.team_id, m: state.id, e: email.id, b: state.contact_book_id!, c: contact.id });
    const values = new Map<string, string>([
      ['email', contact.email],
      ['firstname', contact.first_name ?? ''],
      ['lastname', contact.last_name ?? ''],
      ...UNSUBSCRIBE_PLACEHOLDERS.map((name) => [name.toLowerCase(), unsubscribe] as [string, string]),
    ]);
    for (const variable of state.variables ?? []) values.set(variable.toLowerCase(), contact.properties[variable] ?? '');
    const domain = domainOf(addressOf(email.from_address));
    return {
      kind: 'send',
      message: {
        ...outgoingEmail(email),
        subject: renderTemplate(template.subject, values, false),
        html: renderTemplate(template.html, values, true),
        text: renderTemplate(template.text, values, false),
        headers: {
          'List-Unsubscribe': `<${unsubscribe}>, <mailto:${unsubscribeAddress(email.id, domain, this.config.returnPathSubdomain)}?subject=unsubscribe>`,
          'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
          Precedence: 'bulk',
        },
        attachments: [],
      },
    };
  }

  private compiled(state: CampaignState): Compiled {
    let compiled = this.templates.get(state.id);
    if (!compiled) {
      // The preview text is the inbox's snippet: hidden first text of the body.
      const preview = state.preview_text
        ? `<div style="display:none;max-height:0;overflow:hidden;mso-hide:all">${escapeHtml(state.preview_text)}</div>`
        : '';
      compiled = {
        subject: compileTemplate(state.subject),
        html: compileTemplate(/<body\b[^>]*>/i.test(state.html) ? state.html.replace(/<body\b[^>]*>/i, (body) => body + preview) : preview + state.html),
        text: compileTemplate(htmlToText(state.html)),
      };
      if (this.templates.size >= TEMPLATE_CACHE_SIZE) this.templates.delete(this.templates.keys().next().value!);
      this.templates.set(state.id, compiled);
    }
    return compiled;
  }
}
