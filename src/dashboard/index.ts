import { Hono } from 'hono';
import type { AppDeps } from '../http/deps.js';
import { AuthThrottle } from '../services/auth-throttle.js';
import { assetRoutes } from './assets.js';
import { authPages } from './auth-pages.js';
import { accountPages } from './pages/account.js';
import { analyticsPages } from './pages/analytics.js';
import { apiKeysPages } from './pages/api-keys.js';
import { auditLogPages } from './pages/audit-log.js';
import { automationsPages } from './pages/automations.js';
import { campaignsPages } from './pages/campaigns.js';
import { contactsPages } from './pages/contacts.js';
import { deliverabilityPages } from './pages/deliverability.js';
import { domainsPages } from './pages/domains.js';
import { emailsPages } from './pages/emails.js';
import { inboundPages } from './pages/inbound.js';
import { overviewPages } from './pages/overview.js';
import { segmentPages } from './pages/segments.js';
import { suppressionsPages } from './pages/suppressions.js';
import { teamPages } from './pages/team.js';
import { templatesPages } from './pages/templates.js';
import { webhooksPages } from './pages/webhooks.js';

/** The contact books with their segments: one section, so the segment pages sit behind the books' guard. */
const contactsWithSegments = (deps: AppDeps) => segmentPages(contactsPages(deps), deps);

/**
 * The dashboard for the people of a team, served by the API process at `/`: sign-in and the
 * pages over the same services (through the same API routes) the API uses.
 */

export function dashboardPages(deps: AppDeps) {
  const app = new Hono();
  app.route('/assets', assetRoutes());
  // One count of failed passwords and codes, whichever page checks them.
  const signIns = new AuthThrottle(deps.config.authFailuresPerMinute);
  app.route('/', authPages(deps, signIns));
  app.route('/', accountPages(deps, signIns));
  const sections = [overviewPages, domainsPages, emailsPages, inboundPages, campaignsPages, automationsPages, contactsWithSegments, templatesPages, suppressionsPages, webhooksPages, apiKeysPages, teamPages, analyticsPages, deliverabilityPages, auditLogPages];
  for (const pages of sections) app.route('/', pages(deps));
  return app;
}
