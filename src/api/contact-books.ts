import { z } from 'zod';
import { defineRoute } from '../http/route.js';
import * as service from '../services/contact-books.js';

const TAG = 'Contact books';
const LEGACY_ERRORS = 'Errors here keep the interface description\'s older shape: `{ "error": "<message>", "code" }`.';

// Names personalisation already fills in, so a book may not redefine them.
const BUILT_IN_VARIABLES = [
  'email', 'firstName', 'lastName', 'unsubscribeUrl', 'doubleOptInUrl',
  'usesend_unsubscribe_url', 'unsend_unsubscribe_url',
].map((name) => name.toLowerCase());

const variables = z
  .array(z.string().regex(/^[A-Za-z][A-Za-z0-9_]*$/, 'must start with a letter and contain only letters, digits and _').max(64))
  .max(100)
  .superRefine((names, ctx) => {
    const seen = new Map<string, number>();
    names.forEach((name, index) => {
      const key = name.toLowerCase();
      if (BUILT_IN_VARIABLES.includes(key)) {
        ctx.addIssue({ code: 'custom', path: [index], message: `"${name}" is a built-in variable` });
      } else if (seen.has(key)) {
        ctx.addIssue({ code: 'custom', path: [index], message: `"${name}" repeats variable ${seen.get(key)} (names are case-insensitive)` });
      }
      seen.set(key, index);
    });
  });

const properties = z.record(z.string().max(256), z.string().max(10_000));

const bookFields = {
  name: z.string().trim().min(1).max(255),
  emoji: z.string().trim().min(1).max(32),
  properties,
  variables,
  doubleOptInEnabled: z.boolean(),
  doubleOptInFrom: z.string().trim().min(1).max(320).nullable(),
  doubleOptInSubject: z.string().trim().min(1).max(998),
  doubleOptInContent: z.string().min(1).max(1_000_000),
};

export const createContactBookBody = z.object({
  ...bookFields,
  emoji: bookFields.emoji.optional(),
  properties: properties.optional(),
  variables: variables.optional(),
  doubleOptInEnabled: bookFields.doubleOptInEnabled.optional(),
  doubleOptInFrom: bookFields.doubleOptInFrom.optional(),
  doubleOptInSubject: bookFields.doubleOptInSubject.optional(),
  doubleOptInContent: bookFields.doubleOptInContent.optional(),
});

export const updateContactBookBody = z.object(bookFields).partial();

export const contactBookSchema = z.object({
  id: z.string(),
  name: z.string(),
  teamId: z.number().int(),
  properties: z.record(z.string(), z.string()),
  variables: z.array(z.string()),
  emoji: z.string(),
  doubleOptInEnabled: z.boolean(),
  doubleOptInFrom: z.string().nullable(),
  doubleOptInSubject: z.string().nullable(),
  doubleOptInContent: z.string().nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
  _count: z.object({ contacts: z.number().int() }),
});

export const contactBookParams = z.object({ contactBookId: z.string().min(1).max(128) });

export const contactBookRoutes = [
  defineRoute({
    method: 'get',
    path: '/contactBooks',
    tag: TAG,
    summary: 'List contact books',
    response: z.array(contactBookSchema),
    handler: ({ deps, auth }) => service.listContactBooks(deps, auth),
  }),
  defineRoute({
    method: 'post',
    path: '/contactBooks',
    tag: TAG,
    summary: 'Create a contact book',
    description: 'Double opt-in needs `doubleOptInFrom` on a verified domain; custom content must contain `{{doubleOptInUrl}}`.',
    body: createContactBookBody,
    response: contactBookSchema,
    handler: ({ deps, auth, body }) => service.createContactBook(deps, auth, body),
  }),
  defineRoute({
    method: 'get',
    path: '/contactBooks/{contactBookId}',
    tag: TAG,
    summary: 'Get a contact book with its contact count',
    params: contactBookParams,
    response: contactBookSchema,
    handler: ({ deps, auth, params }) => service.getContactBook(deps, auth, params),
  }),
  defineRoute({
    method: 'patch',
    path: '/contactBooks/{contactBookId}',
    tag: TAG,
    summary: 'Update a contact book',
    description: `\`variables\`, when given, replaces the list. ${LEGACY_ERRORS}`,
    legacyErrors: true,
    params: contactBookParams,
    body: updateContactBookBody,
    response: contactBookSchema,
    handler: ({ deps, auth, params, body }) => service.updateContactBook(deps, auth, { ...params, changes: body }),
  }),
  defineRoute({
    method: 'delete',
    path: '/contactBooks/{contactBookId}',
    tag: TAG,
    summary: 'Delete a contact book and all its contacts',
    description: LEGACY_ERRORS,
    legacyErrors: true,
    params: contactBookParams,
    response: z.object({ id: z.string(), success: z.boolean(), message: z.string() }),
    handler: ({ deps, auth, params }) => service.deleteContactBook(deps, auth, params),
  }),
];
