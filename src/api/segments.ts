import { z } from 'zod';
import { filterSchema } from '../audience/segment-filter.js';
import { defineRoute } from '../http/route.js';
import * as service from '../services/segments.js';
import { contactBookParams } from './contact-books.js';
import { contactSchema, listContactsQuery } from './contacts.js';

const TAG = 'Segments';
const FILTER_NOTE =
  'Text compares case-insensitively. A property holds text: against a number, or in order (gt, gte, lt, lte), it counts only ' +
  'when it reads as a number (or a date); a contact without it matches neq and notExists only. Dates are ISO 8601 (UTC without ' +
  'a zone) or relative ("30 days ago"). An engagement condition looks at the mail the contact got as a contact of this book.';

const segmentSchema = z.object({
  id: z.string(),
  contactBookId: z.string(),
  name: z.string(),
  filter: z.unknown().describe('The filter as it was given'),
  count: z.number().int().describe('How many contacts of the book match it now'),
  createdAt: z.string(),
  updatedAt: z.string(),
});

const name = z.string().trim().min(1).max(255);
const segmentParams = contactBookParams.extend({ segmentId: z.string().min(1).max(64) });

export const segmentRoutes = [
  defineRoute({
    method: 'post',
    path: '/contactBooks/{contactBookId}/segments',
    tag: TAG,
    summary: 'Save a filter over the book as a segment',
    description: `An invalid filter is a 400 naming its path (\`filter.all[2].op\`); nothing is stored. ${FILTER_NOTE}`,
    params: contactBookParams,
    body: z.object({ name, filter: filterSchema }),
    response: segmentSchema,
    handler: ({ deps, auth, params, body }) => service.createSegment(deps, auth, { ...params, ...body }),
  }),
  defineRoute({
    method: 'get',
    path: '/contactBooks/{contactBookId}/segments',
    tag: TAG,
    summary: "The book's segments, each with its count now",
    params: contactBookParams,
    response: z.object({ data: z.array(segmentSchema) }),
    handler: ({ deps, auth, params }) => service.listSegments(deps, auth, params),
  }),
  defineRoute({
    method: 'get',
    path: '/contactBooks/{contactBookId}/segments/{segmentId}',
    tag: TAG,
    summary: 'One segment, with its count now',
    params: segmentParams,
    response: segmentSchema,
    handler: ({ deps, auth, params }) => service.getSegment(deps, auth, params),
  }),
  defineRoute({
    method: 'patch',
    path: '/contactBooks/{contactBookId}/segments/{segmentId}',
    tag: TAG,
    summary: 'Rename a segment or change its filter',
    description: `Campaigns going to it read the new filter from their next batch on. ${FILTER_NOTE}`,
    params: segmentParams,
    body: z.object({ name: name.optional(), filter: filterSchema.optional() }),
    response: segmentSchema,
    handler: ({ deps, auth, params, body }) => service.updateSegment(deps, auth, { ...params, ...body }),
  }),
  defineRoute({
    method: 'delete',
    path: '/contactBooks/{contactBookId}/segments/{segmentId}',
    tag: TAG,
    summary: 'Delete a segment',
    description: 'A segment a campaign not yet sent goes to is a 409 naming the campaign. Sent campaigns forget it (their segmentId turns null).',
    params: segmentParams,
    response: z.object({ id: z.string(), success: z.boolean() }),
    handler: ({ deps, auth, params }) => service.deleteSegment(deps, auth, params),
  }),
  defineRoute({
    method: 'get',
    path: '/contactBooks/{contactBookId}/segments/{segmentId}/contacts',
    tag: TAG,
    summary: 'The contacts the segment matches now',
    description: 'Oldest first, paged like the contacts of a book. The response header `X-Total-Count` gives how many match.',
    params: segmentParams,
    query: listContactsQuery.pick({ page: true, limit: true }),
    response: z.array(contactSchema),
    handler: async ({ deps, auth, params, query, c }) => {
      const { contacts, total } = await service.segmentContacts(deps, auth, { ...params, ...query });
      c.header('X-Total-Count', String(total));
      return contacts;
    },
  }),
];
