import type { Context } from 'hono';
import type { z } from 'zod';
import type { Permission } from '../db/schema.js';
import type { Access, Area } from '../people/roles.js';
import type { AppDeps } from './deps.js';
import type { AuthContext } from './auth.js';

export type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';

type AnyObject = z.ZodObject<z.ZodRawShape>;
type Infer<T> = T extends z.ZodType ? z.output<T> : undefined;

export type HandlerInput<P, Q, B> = {
  params: Infer<P>;
  query: Infer<Q>;
  body: Infer<B>;
  auth: AuthContext;
  deps: AppDeps;
  c: Context;
};

/**
 * One endpoint: its schemas validate the request, type the handler and describe it in OpenAPI, so
 * the three can never disagree.
 */
export type RouteDef<
  P extends AnyObject | undefined = AnyObject | undefined,
  Q extends AnyObject | undefined = AnyObject | undefined,
  B extends z.ZodType | undefined = z.ZodType | undefined,
  R extends z.ZodType = z.ZodType,
> = {
  method: Method;
  /** OpenAPI-style path below /v1, e.g. `/contactBooks/{contactBookId}`. */
  path: string;
  tag: string;
  summary: string;
  description?: string;
  /** The least key permission that may call it; `full` unless said otherwise. */
  permission?: Permission;
  /** What a person's role must allow (people/roles.ts): the area of its tag (authorize.ts) unless said otherwise. */
  area?: Area;
  /** Reading unless the call changes something; a read that reveals a secret says `change`. */
  access?: Access;
  /** Errors in the interface description's older shape, `{ "error": "<message>", "code" }` (contact-book PATCH and DELETE). */
  legacyErrors?: true;
  /** The status of a success: 200 unless the request is taken to be acted on later (202). */
  accepted?: true;
  /** Answers bytes of this media type (a download: `sendDownload`), not JSON; `response` then describes nothing. */
  download?: string;
  params?: P;
  query?: Q;
  body?: B;
  response: R;
  handler: (input: HandlerInput<P, Q, B>) => Promise<z.input<R>> | z.input<R>;
};

export function defineRoute<
  P extends AnyObject | undefined = undefined,
  Q extends AnyObject | undefined = undefined,
  B extends z.ZodType | undefined = undefined,
  R extends z.ZodType = z.ZodType,
>(route: RouteDef<P, Q, B, R>): RouteDef {
  return route as unknown as RouteDef;
}

/**
 * Orders routes so that, segment by segment, a literal beats a parameter: `/contacts/bulk` is
 * always tried before `/contacts/{contactId}`, whatever order the files declare them in.
 */
export function bySpecificity(a: RouteDef, b: RouteDef): number {
  const sa = a.path.split('/');
  const sb = b.path.split('/');
  for (let i = 0; i < Math.min(sa.length, sb.length); i++) {
    const pa = sa[i]!.startsWith('{');
    const pb = sb[i]!.startsWith('{');
    if (pa !== pb) return pa ? 1 : -1;
  }
  return 0;
}
