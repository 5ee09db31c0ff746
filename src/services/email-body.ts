import { z } from 'zod';
import { OWN_HEADERS, OWN_HEADER_PREFIXES, TRUST_HEADERS, TRUST_HEADER_PREFIXES } from '../mail/headers.js';
import { boundedRecord } from '../validation.js';
import { MAX_RECIPIENTS } from './emails.js';

export const MAX_BODY_CHARS = 5_000_000;
const MAX_ATTACHMENTS = 10;
const MAX_HEADERS = 50;
const MAX_VARIABLES = 200;

/** A header field name as RFC 5322 §3.6.8 allows it. */
export const HEADER_NAME = /^[!-9;-~]{1,100}$/;

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

const addresses = z.union([z.string().max(10_000), z.array(z.string().max(1000)).max(MAX_RECIPIENTS)]);
export const scheduledAt = z.string().trim().min(1).max(200);

const headers = boundedRecord(
  z.string().regex(HEADER_NAME, 'header names are 1 to 100 printable ASCII characters without spaces or colons'),
  z.string().max(900).regex(/^[^\r\n]*$/, 'header values may not contain line breaks'),
  MAX_HEADERS,
  'headers',
);

const attachment = z.object({
  filename: z.string().min(1).max(255).regex(/^[^\p{Cc}/\\]+$/u, 'must be a file name without slashes or control characters'),
  content: z
    .string()
    .min(1)
    .transform((value) => value.replace(/\s+/g, ''))
    .refine((value) => value.length > 0 && BASE64.test(value), 'must be base64'),
  contentType: z.string().regex(/^[\w.+-]+\/[\w.+-]+$/, 'must be a MIME type such as application/pdf').max(255).optional(),
});

/**
 * An email as every entrance takes it: the body of POST /v1/emails (and of each email of a batch),
 * and the email an SMTP submission is read into. One schema, so both doors keep the same limits.
 */
export const emailBody = z.object({
  to: addresses.describe(`One address or an array; comma-separated lists are split. At most ${MAX_RECIPIENTS}.`),
  from: z.string().min(1).max(1000).describe('`addr@domain` or `Name <addr@domain>` on a verified domain of the team'),
  subject: z.string().min(1).max(998).optional().describe('Required unless `templateId` is given; with it, replaces the template\'s subject'),
  html: z.string().max(MAX_BODY_CHARS).nullable().optional(),
  text: z.string().max(MAX_BODY_CHARS).nullable().optional().describe('Derived from html when absent'),
  templateId: z.string().min(1).max(128).optional().describe('A template of the team: subject and bodies are rendered from it with `variables` (not with html or text)'),
  variables: boundedRecord(
    z.string().regex(/^[A-Za-z][A-Za-z0-9_]{0,99}$/, 'variable names start with a letter and hold letters, digits and _'),
    z.string().max(100_000),
    MAX_VARIABLES,
    'variables',
  )
    .optional()
    .describe('Values for the template\'s {{name}} placeholders'),
  inReplyToId: z.string().min(3).max(128).nullable().optional().describe('Another email of the team this one answers: In-Reply-To and References follow its Message-ID'),
  replyTo: addresses.optional(),
  cc: addresses.optional(),
  bcc: addresses.optional().describe('Delivered to, never shown in the message'),
  headers: headers.optional().describe(
    `Extra header fields. Not allowed: ${OWN_HEADERS.join(', ')} and names starting with ${OWN_HEADER_PREFIXES.join(', ')} (Mailroom writes those); ` +
      `${TRUST_HEADERS.join(', ')} and names starting with ${TRUST_HEADER_PREFIXES.join(', ')} (receiving servers write those).`,
  ),
  attachments: z.array(attachment).max(MAX_ATTACHMENTS).optional(),
  scheduledAt: scheduledAt.optional().describe('ISO 8601, or natural language ("tomorrow 9am", "in 2 hours") read in SCHEDULE_TIMEZONE'),
});
