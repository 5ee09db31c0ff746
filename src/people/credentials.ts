import { hash, randomBytes } from 'node:crypto';
import { z } from 'zod';
import { isCommonPassword } from './common-passwords.js';

// Invite, session and reset tokens carry 256 random bits: a fast hash is enough to keep them unreadable at rest.
export const hashToken = (token: string) => hash('sha256', token, 'base64url');
export const newToken = () => randomBytes(32).toString('base64url');

export const emailSchema = z.string().trim().toLowerCase().pipe(z.email().max(254));
export const passwordSchema = z
  .string()
  .min(10, 'must be at least 10 characters')
  .max(200, 'must be at most 200 characters')
  .refine((password) => !isCommonPassword(password), 'is one of the most common passwords, which are guessed first; choose another');
