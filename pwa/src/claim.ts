/**
 * "Ada is looking": while a decider has a card open, teammates see it on the board. The card
 * claims the request on open and renews the claim before its 2 minutes run out, until it is
 * decided or closed. Not a lock: a claim never blocks anyone's decision, so a failed claim is
 * only a missing hint and is not reported.
 *
 * Owns: when the card claims. Does not own: the claim itself (the team's hub, `POST /v1/approvals/:id/claim`).
 */
import { useEffect } from "preact/hooks";
import { CLAIM_MS } from "../../sdk/src/human/approvals";
import { api } from "./api";

export function useClaimWhileOpen(approvalId: string, looking: boolean): void {
  useEffect(() => {
    if (!looking) return;
    const claim = () => void api.claim(approvalId).catch(() => {});
    claim();
    const renew = setInterval(claim, CLAIM_MS - 30_000);
    return () => clearInterval(renew);
  }, [approvalId, looking]);
}
