import type { Context } from 'hono';
import { html, raw } from 'hono/html';
import type { AppDeps } from '../../http/deps.js';
import { ROLES, type Role } from '../../people/caller.js';
import { changeUserRole, inviteUser, listUsers, removeUser, type Person } from '../../people/team.js';
import { callerOf } from '../api-call.js';
import { BLANK_FORM, correctable, formValues, mayChange, type Form } from '../forms.js';
import { actionButton, badge, copyable, csrfField, done, field, formError, heading, page, select, table, time } from '../layout.js';
import { section } from '../section.js';
import type { DashboardEnv } from '../session.js';

type Ctx = Context<DashboardEnv>;

const ROLE_CHOICES: Record<Role, string> = {
  owner: 'Owner: everything, the team and its owners too',
  admin: 'Admin: everything but owners',
  member: 'Member: sends, contacts, campaigns, templates and automations',
  viewer: 'Viewer: reads only',
};
const ROLE_NAMES: Record<Role, string> = { owner: 'Owner', admin: 'Admin', member: 'Member', viewer: 'Viewer' };

/** What the page offers the person looking at it; the services check each change again. */
function rightsOf(c: Ctx) {
  const { role } = c.get('user');
  const changes = mayChange(c, 'people');
  return {
    changes,
    /** The roles they may give: an owner's only by an owner. */
    grants: changes ? ROLES.filter((r) => r !== 'owner' || role === 'owner') : [],
    /** Whether they may change or remove this person: an owner only an owner. */
    manages: (person: Person) => changes && (person.role !== 'owner' || role === 'owner'),
  };
}

/** An invite that could not be mailed: its link, for the inviter to hand on (shown on this answer only, never in a URL). */
const inviteLinkBox = (invited: { email: string; inviteUrl: string; reason: string }) => html`<section class="secret" role="status">
<p><strong class="secret-title">${invited.email} is invited</strong></p>
<p>The invite was not mailed (${invited.reason}). Send them this link yourself: it lets them choose a password, once, within 7 days.</p>
<p>${copyable(invited.inviteUrl)}</p>
</section>`;

type PageOptions = { invited?: { email: string; inviteUrl: string; reason: string }; error?: string; status?: 200 | 400 | 409 };

async function teamPage(c: Ctx, deps: AppDeps, form: Form, options: PageOptions = {}) {
  const people = await listUsers(deps, callerOf(c));
  const rights = rightsOf(c);
  const me = c.get('user').userId;
  const roleForm = (person: Person) => html`<form method="post" action="/team/${person.userId}/role" class="inline role-form">
${csrfField(c)}<select name="role" aria-label="Role of ${person.email}">${rights.grants.map(
    (role) => html`<option value="${role}"${role === person.role ? raw(' selected') : ''}>${ROLE_NAMES[role]}</option>`,
  )}</select> <button type="submit" class="secondary">Change role</button>
</form>`;
  return page(c, {
    title: 'Team',
    section: 'Team',
    status: options.status,
    body: html`${heading('Team')}
${formError(options.error)}
${options.invited ? inviteLinkBox(options.invited) : ''}
${table(
  people,
  [
    { label: 'Person', cell: (p: Person) => html`<span class="person-email">${p.email}</span>${p.userId === me ? html` <small class="muted">(you)</small>` : ''}` },
    { label: 'Role', cell: (p: Person) => html`<span class="person-role">${ROLE_NAMES[p.role]}</span>` },
    { label: 'Status', cell: (p: Person) => badge(p.status ?? 'active') },
    { label: 'Added', cell: (p: Person) => time(p.createdAt) },
    {
      label: '',
      cell: (p: Person) =>
        rights.manages(p)
          ? html`<div class="row-actions">${roleForm(p)}${actionButton(c, `/team/${p.userId}/remove`, 'Remove', {
              kind: 'danger',
              confirm: `Remove ${p.email} from the team? They are signed out at once.`,
            })}</div>`
          : '',
    },
  ],
  'Nobody here yet.',
)}
${
  rights.changes
    ? html`<h2>Invite someone</h2>
<section class="panel">
${formError(form.errors[''])}
<form method="post" action="/team" class="stack">
${csrfField(c)}
${field('email', 'Email', { type: 'email', value: form.values.email, error: form.errors.email, required: true, placeholder: 'ada@example.com' })}
${select('role', 'Role', rights.grants.map((role) => ({ value: role, label: ROLE_CHOICES[role] })), { value: form.values.role ?? 'member', error: form.errors.role })}
<div><button type="submit">Invite</button></div>
</form>
<p class="hint">They get a link to choose a password, good once for 7 days: mailed to them from SYSTEM_FROM when it is set up, else shown here for you to pass on. Inviting someone again sends a fresh link.</p>
</section>`
    : html`<p class="muted">Owners and admins invite people and change their roles.</p>`
}`,
  });
}

/** A change the rules refused for a reason the person can read (the last owner, a role unknown): the page again, saying why. */
async function refused(c: Ctx, deps: AppDeps, error: unknown) {
  const { errors, status } = correctable(error, []);
  return teamPage(c, deps, BLANK_FORM, { error: errors[''], status });
}

/**
 * The people of the team: everyone sees who is in it and with which role; owners and admins
 * invite people and change or remove them (admins not owners), through the team's services.
 */
export function teamPages(deps: AppDeps) {
  const app = section(deps, '/team');

  app.get('/', (c) => teamPage(c, deps, BLANK_FORM));

  app.post('/', async (c) => {
    const values = await formValues(c);
    let invited;
    try {
      invited = await inviteUser(deps, callerOf(c), { email: values.email ?? '', role: values.role ?? '' });
    } catch (error) {
      const { errors, status } = correctable(error, ['email', 'role'], 'email');
      return teamPage(c, deps, { values, errors }, { status });
    }
    if (invited.mail.queued) return done(c, '/team', `Invite mailed to ${invited.email}: its link works once, for 7 days`);
    return teamPage(c, deps, BLANK_FORM, { invited: { email: invited.email, inviteUrl: invited.inviteUrl, reason: invited.mail.reason } });
  });

  app.post('/:userId/role', async (c) => {
    const values = await formValues(c);
    let changed;
    try {
      changed = await changeUserRole(deps, callerOf(c), { userId: c.req.param('userId'), role: values.role ?? '' });
    } catch (error) {
      return refused(c, deps, error);
    }
    const now = ROLE_NAMES[changed.role].toLowerCase();
    return done(c, '/team', changed.role === changed.previousRole ? `${changed.email} is already ${now}` : `${changed.email} is now ${now}`);
  });

  app.post('/:userId/remove', async (c) => {
    let removed;
    try {
      removed = await removeUser(deps, callerOf(c), { userId: c.req.param('userId') });
    } catch (error) {
      return refused(c, deps, error);
    }
    return done(c, '/team', `${removed.email} was removed from the team and signed out`);
  });

  return app;
}
