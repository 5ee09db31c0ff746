import { CSRF_FIELD, csrfTokenFor, SESSION_COOKIE } from '../../src/dashboard/session.js';
import type { Role } from '../../src/people/caller.js';
import { invitePerson, PASSWORD } from './browser.js';
import { requestFrom } from './client-address.js';
import type { TestServer } from './server.js';

export type Answer = { status: number; location: string | null; text: string };

let clients = 0;
/** A loopback address of its own for each client, so that one client's failures do not slow another's answers. */
const nextAddress = () => {
  const n = clients++;
  return `127.0.${100 + Math.floor(n / 250)}.${(n % 250) + 1}`;
};

/**
 * A browser without a browser: plain HTTP form posts from a loopback address, keeping the
 * cookies the server sets (by name, whatever their path) and following no redirect, so a test sees
 * every answer and every cookie as the server gave it.
 */
export class FormClient {
  readonly cookies = new Map<string, string>();

  constructor(
    private readonly baseUrl: string,
    private readonly from = nextAddress(),
  ) {}

  async get(path: string): Promise<Answer> {
    return this.send('GET', path);
  }

  /** A form posted as a page posts it; signed in, with the session's CSRF token. */
  async post(path: string, fields: Record<string, string> = {}): Promise<Answer> {
    const session = this.cookies.get(SESSION_COOKIE);
    const body = new URLSearchParams(session ? { ...fields, [CSRF_FIELD]: csrfTokenFor(session) } : fields);
    return this.send('POST', path, body.toString());
  }

  get session(): string | undefined {
    return this.cookies.get(SESSION_COOKIE);
  }

  private async send(method: string, path: string, body?: string): Promise<Answer> {
    const cookie = [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
    const headers: Record<string, string> = { ...(cookie ? { cookie } : {}), ...(body === undefined ? {} : { 'content-type': 'application/x-www-form-urlencoded' }) };
    const answer = await requestFrom(this.from, this.baseUrl + path, { method, headers, body });
    for (const line of answer.headers.get('set-cookie')?.split(/,(?=\s*[\w-]+=)/) ?? []) this.keep(line);
    return { status: answer.status, location: answer.headers.get('location'), text: answer.text };
  }

  private keep(line: string): void {
    const [pair, ...attributes] = line.split(';').map((part) => part.trim());
    const [name, ...rest] = pair!.split('=');
    const value = rest.join('=');
    const gone = value === '' || attributes.some((attribute) => /^max-age=0$/i.test(attribute) || (/^expires=/i.test(attribute) && Date.parse(attribute.slice(8)) < Date.now()));
    if (gone) this.cookies.delete(name!);
    else this.cookies.set(name!, value);
  }
}

/** The text of a page, tags dropped and white space folded: what a reader sees. */
export const visibleText = (page: string) => page.replace(/<[^>]*>/g, ' ').replace(/&#39;/g, "'").replace(/&quot;/g, '"').replace(/&amp;/g, '&').replace(/\s+/g, ' ');

/** A person of the team who accepted their invite (choosing PASSWORD): signed in, in a client of their own. */
export async function signedInClient(server: TestServer, teamId: number, email: string, role?: Role) {
  const invite = await invitePerson(server, teamId, email, role);
  const client = new FormClient(server.url);
  const accepted = await client.post(new URL(invite.inviteUrl).pathname, { password: PASSWORD, confirm: PASSWORD });
  if (accepted.status !== 303) throw new Error(`accepting the invite of ${email} answered ${accepted.status}`);
  return { email, userId: invite.userId, client };
}
