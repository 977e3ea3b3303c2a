/**
 * Login CSRF: a link or pairing token signs a browser in as its account. A browser already signed
 * in as someone else is switched only when it says so (`confirm: true`); until then the answer is
 * `409 signed_in_as_other`, naming both accounts so the page can ask, and the token stays unused.
 *
 * Owns: that rule and the 409's body. Does not own: finding the token's account (`db/`), the web
 * session (`auth.ts`).
 */
import type { SignedInAsOther } from "../../sdk/src/human/auth";
import { DomainError } from "../errors";
import type { WebIdentity } from "../types";

/** Whom a token signs in: by user id when it names one, else by (lower-case) address. */
export interface TokenAccount {
  userId: string | null;
  email: string;
  name: string | null;
}

export function refuseUnaskedSwitch(current: WebIdentity | null, account: TokenAccount, confirm: boolean): void {
  if (!current || confirm) return;
  const same = account.userId ? account.userId === current.userId : account.email === current.email.toLowerCase();
  if (same) return;
  const extra: SignedInAsOther = {
    account: { email: account.email, name: account.name },
    signedInAs: { email: current.email, name: current.name },
  };
  throw new DomainError(
    "signed_in_as_other",
    `this signs you in as ${account.email}, but you are signed in as ${current.email}; send confirm: true to switch`,
    { extra },
  );
}
