import type { Role } from './caller.js';
import { linkMailBodies } from './system-mail.js';

const ROLE_WORDS: Record<Role, string> = { owner: 'an owner', admin: 'an admin', member: 'a member', viewer: 'a viewer' };

/**
 * The mail that invites a person: who asks them into which team, with which role, and the link
 * (`{{link}}`, filled in when it is sent) and how many days it works. `inviter` names the person who
 * invited them, when a person did.
 */
export function inviteMail(invite: { inviter: string | null; team: string; role: Role; days: number }) {
  const who = invite.inviter ?? 'Someone';
  const lead = `${who} invited you to join the team “${invite.team}” on Mailroom as ${ROLE_WORDS[invite.role]}.`;
  const validity = `The link works once, for ${invite.days} days. If you did not expect this invitation, you can ignore this email.`;
  return {
    subject: `${who} invited you to ${invite.team.replace(/\s+/g, ' ')} on Mailroom`,
    ...linkMailBodies({ lead, action: 'Choose a password to sign in', validity }),
  };
}
