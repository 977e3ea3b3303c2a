/**
 * The one error the SDK throws at its callers, with a code they can branch on. Owns the SDK's
 * own failure codes (cannot connect, no key, …); the HTTP API's error codes live in `errors.ts`.
 */

export type TapgateErrorCode =
  | "no_api_key"
  | "unauthorized"
  | "forbidden"
  | "unreachable"
  | "timeout"
  | "rejected"
  | "closed";

export class TapgateError extends Error {
  override readonly name = "TapgateError";
  constructor(
    readonly code: TapgateErrorCode,
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}
