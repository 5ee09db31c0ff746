import type { RouteDef } from '../http/route.js';
import { analyticsRoutes } from './analytics.js';
import { auditLogRoutes } from './audit-log.js';
import { automationRoutes } from './automations.js';
import { campaignRoutes } from './campaigns.js';
import { contactBookRoutes } from './contact-books.js';
import { contactRoutes } from './contacts.js';
import { deliverabilityRoutes } from './deliverability.js';
import { domainRoutes } from './domains.js';
import { emailRoutes } from './emails.js';
import { inboundRoutes } from './inbound.js';
import { segmentRoutes } from './segments.js';
import { suppressionRoutes } from './suppressions.js';
import { templateRoutes } from './templates.js';
import { webhookRoutes } from './webhooks.js';

export const apiRoutes: RouteDef[] = [...analyticsRoutes, ...auditLogRoutes, ...automationRoutes, ...campaignRoutes, ...contactBookRoutes, ...contactRoutes, ...deliverabilityRoutes, ...domainRoutes, ...emailRoutes, ...inboundRoutes, ...segmentRoutes, ...suppressionRoutes, ...templateRoutes, ...webhookRoutes];
