import type { Config } from '../config.js';
import type { Db } from '../db/connection.js';
import { findCampaignStates, findRecipientValues, type CampaignState, type RecipientValues } from '../data/campaign-mail.js';
import type { ClaimedEmail } from '../data/emails.js';
import { addressOf, domainOf } from '../mail/address.js';
import { escapeHtml, htmlToText } from '../mail/html.js';
import { listUnsubscribeHeaders, unsubscribeUrl } from '../mail/links.js';
import type { RecipientTokens } from '../mail/tokens.js';
import { AnswerCache } from '../reuse-for.js';
import { unsubscribeAddress } from '../mail/verp.js';
import { outgoingEmail, type CampaignComposer, type CampaignMail } from '../sending/compose.js';
import { compileTemplate, renderTemplate, UNSUBSCRIBE_PLACEHOLDERS, type Template } from './template.js';

type Compiled = { subject: Template; html: Template; text: Template };

// Compiled templates are kept for this many campaigns; a campaign's body never changes.
const TEMPLATE_CACHE_SIZE = 100;

/**
 * Renders campaign mail at send time: per batch, one query for the campaigns' state (a paused or
 * deleted campaign's mail is not sent) and one for the recipients' current data; each campaign's
 * subject, body and text are compiled once per process.
 */
export class CampaignRenderer implements CampaignComposer {
  private readonly templates = new AnswerCache<string, Compiled>({ maxEntries: TEMPLATE_CACHE_SIZE });

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
    const states = await findCampaignStates(this.db, ids);
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

  private async contacts(state: CampaignState, ids: string[]): Promise<Map<string, RecipientValues>> {
    if (state.contact_book_id === null) return new Map();
    const rows = await findRecipientValues(this.db, { teamId: state.team_id, bookId: state.contact_book_id }, ids);
    return new Map(rows.map((row) => [row.id, row]));
  }

  private mailFor(email: ClaimedEmail, state: CampaignState, contact: RecipientValues | undefined): CampaignMail {
    if (state.status !== 'RUNNING' && state.status !== 'SENT') return { kind: 'hold' };
    if (!contact) return { kind: 'cancel', reason: 'contact deleted' };
    if (!contact.subscribed) return { kind: 'cancel', reason: 'contact unsubscribed' };
    const template = this.compiled(state);
    const unsubscribe = unsubscribeUrl(this.config.publicUrl, this.tokens, {
      teamId: email.team_id, campaignId: state.id, emailId: email.id, bookId: state.contact_book_id!, contactId: contact.id,
    });
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
          ...listUnsubscribeHeaders(unsubscribe, unsubscribeAddress({ emailId: email.id, tag: this.tokens.addressTag(email.id) }, domain, this.config.returnPathSubdomain)),
          Precedence: 'bulk',
        },
        attachments: [],
      },
    };
  }

  private compiled(state: CampaignState): Compiled {
    return this.templates.get(state.id, () => {
      // The preview text is the inbox's snippet: hidden first text of the body.
      const preview = state.preview_text
        ? `<div style="display:none;max-height:0;overflow:hidden;mso-hide:all">${escapeHtml(state.preview_text)}</div>`
        : '';
      return {
        subject: compileTemplate(state.subject),
        html: compileTemplate(/<body\b[^>]*>/i.test(state.html) ? state.html.replace(/<body\b[^>]*>/i, (body) => body + preview) : preview + state.html),
        text: compileTemplate(htmlToText(state.html)),
      };
    });
  }
}
