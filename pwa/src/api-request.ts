/**
 * The human API's transport for the PWA: one request, its answer parsed with the schema the
 * caller names, and every failure as an `ApiError` carrying the server's error code (an
 * `ErrorCode`) and message, or the client's own (`offline`, `bad_answer`).
 *
 * Owns: fetch, the decision's device header, the lapsed-session handler, error decoding. Does
 * not own: any route or answer shape (api.ts, from the contract in `sdk/src/human`).
 */
import type { z } from "zod";
import {
  type ConfirmRequired,
  confirmRequiredSchema,
  type ErrorCode,
  errorBodySchema,
  type SignedInAsOther,
  signedInAsOtherSchema,
} from "../../sdk/src/human/index";

/** The server's error codes, and the client's own: not sent, or an answer that is not the contract's. */
export type ApiErrorCode = ErrorCode | "offline" | "bad_answer" | `http_${number}`;

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: ApiErrorCode,
    message: string,
    readonly body: Record<string, unknown> = {},
  ) {
    super(message);
  }

  /** The request never reached the server. */
  get offline(): boolean {
    return this.status === 0;
  }
}

/** The account a `409 confirm_required` names (a pairing link waiting for the tap), or null for any other failure. */
export function confirmRequired(e: unknown): ConfirmRequired | null {
  if (!(e instanceof ApiError) || e.code !== "confirm_required") return null;
  const read = confirmRequiredSchema.safeParse(e.body);
  return read.success ? read.data : null;
}

/** The accounts a `409 signed_in_as_other` names, or null for any other failure. */
export function signedInAsOther(e: unknown): SignedInAsOther | null {
  if (!(e instanceof ApiError) || e.code !== "signed_in_as_other") return null;
  const read = signedInAsOtherSchema.safeParse(e.body);
  return read.success ? read.data : null;
}

let onUnauthenticated: () => void = () => {};
/** The app decides where a lapsed session goes (the sign-in screen, then back). */
export function setUnauthenticatedHandler(handler: () => void): void {
  onUnauthenticated = handler;
}

/** The name decisions are attributed to ("Allowed by Sam on Pixel 8"), once this device has one. */
let deviceName = "web";
export function setDecisionDeviceName(name: string | null): void {
  deviceName = name ?? "web";
}

type Method = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

export async function request<S extends z.ZodType>(
  answer: S,
  method: Method,
  path: string,
  body?: unknown,
  quiet401 = false,
): Promise<z.output<S>> {
  const headers: Record<string, string> = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (method === "POST" && /\/(decisions?|stop)$/.test(path))
    headers["X-Tapgate-Device"] = encodeURIComponent(deviceName);
  let res: Response;
  try {
    res = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: "same-origin",
    });
  } catch {
    throw new ApiError(0, "offline", "You're offline. Nothing was sent.");
  }
  const parsed = parseJson(await res.text());
  if (res.ok) {
    const read = answer.safeParse(parsed);
    if (read.success) return read.data;
    console.error(`${method} ${path}: the answer does not match the contract`, read.error.issues);
    throw new ApiError(res.status, "bad_answer", "The server's answer could not be read; reload the app.");
  }
  const fields = typeof parsed === "object" && parsed !== null ? (parsed as Record<string, unknown>) : {};
  const error = errorBodySchema.safeParse(parsed);
  const code = error.success ? error.data.error : (`http_${res.status}` as const);
  const message = error.success ? error.data.message : `The server answered ${res.status}.`;
  // `reauth_required` keeps the session: the caller asks for a fresh sign-in and retries (reauth.ts).
  if (res.status === 401 && !quiet401 && code !== "reauth_required") onUnauthenticated();
  throw new ApiError(res.status, code, message, fields);
}

function parseJson(text: string): unknown {
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

export const enc = encodeURIComponent;
export const get = <S extends z.ZodType>(answer: S, path: string) => request(answer, "GET", path);
export const post = <S extends z.ZodType>(answer: S, path: string, body: unknown = {}) =>
  request(answer, "POST", path, body);
export const del = <S extends z.ZodType>(answer: S, path: string) => request(answer, "DELETE", path);
