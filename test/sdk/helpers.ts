/** Node-side helpers: a person using the human API of a Worker started by `wrangler dev`. */
import { vi } from "vitest";
import type { Approval } from "../../sdk/src/approval";

let counter = 0;
export const unique = (prefix: string) => `${prefix}-${process.pid}-${Date.now().toString(36)}-${++counter}`;

export class Person {
  constructor(
    readonly url: string,
    readonly cookie: string,
    readonly userId: string,
  ) {}

  static async signUp(url: string, name = "Ada"): Promise<Person> {
    const email = `${unique(name.toLowerCase())}@example.com`;
    const post = (path: string, body: unknown) =>
      fetch(`${url}${path}`, {
        method: "POST",
        headers: { "Content-Type": "application/json", Origin: url },
        body: JSON.stringify(body),
      });
    await post("/v1/auth/signup", { email, name, team: `${name}'s team` });
    const outbox = (await (await fetch(`${url}/v1/dev/outbox?to=${encodeURIComponent(email)}`)).json()) as {
      messages: Array<{ link: string }>;
    };
    const token = new URL(outbox.messages.at(-1)?.link ?? "").searchParams.get("token");
    const confirmed = await post("/v1/auth/link", { token });
    const cookie = (confirmed.headers.get("Set-Cookie") ?? "").split(";")[0] ?? "";
    const me = (await (await fetch(`${url}/v1/me`, { headers: { Cookie: cookie } })).json()) as {
      user: { id: string };
    };
    return new Person(url, cookie, me.user.id);
  }

  fetch(path: string, init: RequestInit = {}): Promise<Response> {
    return fetch(`${this.url}${path}`, {
      ...init,
      headers: { Cookie: this.cookie, Origin: this.url, "Content-Type": "application/json", ...init.headers },
    });
  }

  async createKey(label = "laptop"): Promise<{ id: string; key: string }> {
    return (await (await this.fetch("/v1/keys", { method: "POST", body: JSON.stringify({ label }) })).json()) as {
      id: string;
      key: string;
    };
  }

  async approval(id: string): Promise<Approval> {
    return (await (await this.fetch(`/v1/approvals/${id}`)).json()) as Approval;
  }

  /** Waits until exactly `count` pending approvals match (the index is written just after each request). */
  async waitForPendingWhere(match: (a: Approval) => boolean, count = 1): Promise<Approval[]> {
    return vi.waitFor(
      async () => {
        const { approvals } = (await (await this.fetch("/v1/approvals?state=pending&scope=mine&limit=200")).json()) as {
          approvals: Approval[];
        };
        const matching = approvals.filter(match);
        if (matching.length !== count) throw new Error(`${matching.length} pending, waiting for ${count}`);
        return matching;
      },
      { timeout: 10_000, interval: 20 },
    );
  }

  waitForPending(sessionId: string, count = 1, also = (_: Approval) => true): Promise<Approval[]> {
    return this.waitForPendingWhere((a) => a.sessionId === sessionId && also(a), count);
  }

  /** Waits for the session's one pending approval. */
  async waitForOne(sessionId: string, also?: (a: Approval) => boolean): Promise<Approval> {
    const [approval] = await this.waitForPending(sessionId, 1, also);
    if (!approval) throw new Error("unreachable: waitForPending returned no approval");
    return approval;
  }

  /** Stops the session: its pending requests denied `session_stopped`, new ones refused until `resume`. */
  stop(sessionId: string, reason?: string): Promise<Response> {
    return this.fetch(`/v1/sessions/${sessionId}/stop`, {
      method: "POST",
      body: JSON.stringify(reason !== undefined ? { reason } : {}),
    });
  }

  resume(sessionId: string): Promise<Response> {
    return this.fetch(`/v1/sessions/${sessionId}/resume`, { method: "POST", body: "{}" });
  }

  /** `reason`: the decider's words to the agent (`_meta.tapgate.message`). */
  decide(approval: Approval, optionId: string, reason?: string): Promise<Response> {
    return this.fetch(`/v1/approvals/${approval.id}/decision`, {
      method: "POST",
      body: JSON.stringify({ optionId, requestHash: approval.requestHash, ...(reason !== undefined && { reason }) }),
    });
  }
}

export function askParams(sessionId: string, toolCallId = unique("call")) {
  return {
    sessionId,
    toolCall: {
      toolCallId,
      // Not high-risk under the default policy (force pushes are): an allow needs no step-up.
      title: "git push origin main",
      kind: "execute" as const,
      rawInput: { command: "git push origin main" },
    },
    options: [
      { optionId: "allow", name: "Allow once", kind: "allow_once" as const },
      { optionId: "deny", name: "Deny", kind: "reject_once" as const },
    ],
  };
}
