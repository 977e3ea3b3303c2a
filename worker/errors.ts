/**
 * The one error channel of the Worker's application layer. Routes and use cases (`team/`) throw
 * a `DomainError` naming a code of the error table (`sdk/src/errors.ts`); `app.onError` in
 * index.ts renders it once, through `apiError`, with the status the table gives the code.
 *
 * Owns: the error class. Does not own: codes, statuses or default messages (the table does),
 * nor rendering (http.ts).
 */
import type { ErrorCode } from "../sdk/src/errors";

export interface DomainErrorOptions {
  /** Extra fields of the answer's body, beside `error` and `message` (e.g. `issues`, `approval`). */
  extra?: object;
  /** Headers of the answer (e.g. `Retry-After`). */
  headers?: Record<string, string>;
}

export class DomainError extends Error {
  override readonly name = "DomainError";
  readonly extra: object | undefined;
  readonly headers: Record<string, string> | undefined;

  /** `message` defaults to the table's sentence for `code`. */
  constructor(
    readonly code: ErrorCode,
    message?: string,
    options: DomainErrorOptions = {},
  ) {
    super(message);
    this.extra = options.extra;
    this.headers = options.headers;
  }
}
