/**
 * A fresh sign-in on demand: some changes (adding a passkey, making a pairing link) need a
 * sign-in within the last few minutes and answer `401 reauth_required` otherwise. The action is
 * retried once after the person confirms with a passkey in this browser, which renews this
 * session's sign-in time without a new session.
 */
import { startAuthentication } from "@simplewebauthn/browser";
import { ApiError, api } from "./api";

export async function withReauth<T>(action: () => Promise<T>): Promise<T> {
  try {
    return await action();
  } catch (e) {
    if (!(e instanceof ApiError) || e.code !== "reauth_required") throw e;
  }
  try {
    const { challengeId, options } = await api.passkeyLoginOptions();
    const response = await startAuthentication({ optionsJSON: options });
    await api.passkeyLoginVerify(challengeId, response);
  } catch {
    throw new Error("This needs a fresh sign-in: confirm with a passkey, or sign out and sign in again, then retry.");
  }
  return action();
}
