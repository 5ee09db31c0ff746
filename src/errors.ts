/**
 * The errors a service may throw for a caller's mistake. The HTTP layer turns each into the one
 * error shape; anything else is a fault of the server and becomes a 500.
 */
export type ErrorCode =
  | 'BAD_REQUEST'
  | 'VALIDATION_ERROR'
  | 'UNAUTHORIZED'
  | 'FORBIDDEN'
  | 'NOT_FOUND'
  | 'METHOD_NOT_ALLOWED'
  | 'CONFLICT'
  | 'PAYLOAD_TOO_LARGE'
  | 'UNSUPPORTED_MEDIA_TYPE'
  | 'RATE_LIMITED'
  | 'INTERNAL_SERVER_ERROR';

export type ErrorDetail = { path: string; message: string };

const statusOf: Record<ErrorCode, number> = {
  BAD_REQUEST: 400,
  VALIDATION_ERROR: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  CONFLICT: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  RATE_LIMITED: 429,
  INTERNAL_SERVER_ERROR: 500,
};

export class ApiError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: ErrorDetail[],
  ) {
    super(message);
    this.name = 'ApiError';
    this.status = statusOf[code];
  }

  /** The error as every endpoint answers it: upstream useSend's shape, which its official clients read. */
  toBody() {
    return { error: { code: this.code, message: this.message, ...(this.details ? { details: this.details } : {}) } };
  }

  /** The shape the interface description fixes for contact-book PATCH and DELETE: `error` a string, `code` beside it. */
  toLegacyBody() {
    return { error: this.message, code: this.code, ...(this.details ? { details: this.details } : {}) };
  }
}

export const notFound = (what: string) => new ApiError('NOT_FOUND', `${what} not found`);
export const conflict = (message: string) => new ApiError('CONFLICT', message);
export const badRequest = (message: string) => new ApiError('BAD_REQUEST', message);
export const invalid = (path: string, message: string) =>
  new ApiError('VALIDATION_ERROR', `${path}: ${message}`, [{ path, message }]);
