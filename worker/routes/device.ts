/**
 * `tapgate login`: the device authorization grant (RFC 8628). The terminal asks for a code and
 * polls; a signed-in person approves the code in a browser; the next poll creates the API key,
 * in the approver's team, and hands it over once.
 */
import { type Context, Hono } from "hono";
import { getCookie } from "hono/cookie";
import { html, raw } from "hono/html";
import { z } from "zod";
import { requireSameOrigin, requireWeb, SESSION_COOKIE } from "../auth";
import { newApiKey, newId, randomToken, sha256Hex } from "../crypto";
import {
  audit,
  createDeviceCode,
  type DeviceCode,
  type DeviceExchange,
  decideDeviceCode,
  exchangeDeviceCode,
  findDeviceCode,
  findWebSession,
} from "../db";
import { apiError, appOrigin, validate } from "../http";
import type { AppEnv, WebIdentity } from "../types";

const CODE_TTL_MS = 10 * 60 * 1000;
const POLL_INTERVAL_S = 2;
/** A Worker's clock only moves between I/O, so a client that waits the full interval can look early. */
const POLL_SLACK_MS = 250;
const CODES_PER_IP = 10;
const CODES_WINDOW_MS = 10 * 60 * 1000;
/** Consonants only (RFC 8628 §6.1): nothing to misread (0/O, 1/I) and no words spelled by chance. */
const USER_CODE_ALPHABET = "BCDFGHJKLMNPQRSTVWXZ";
const USER_CODE_LENGTH = 8;

/** Typed codes arrive in any case, with or without the dash or spaces. */
const userCode = z
  .string()
  .max(20)
  .transform((s) => s.replace(/[\s-]/g, "").toUpperCase())
  .pipe(z.string().regex(new RegExp(`^[${USER_CODE_ALPHABET}]{${USER_CODE_LENGTH}}$`), "not a device code"));
const userCodeParam = z.object({ userCode });
const codeBody = z.object({
  // It becomes the key's label and is shown to approvers: no control characters.
  clientName: z
    .string()
    .trim()
    .min(1)
    .max(100)
    .regex(/^[^\p{Cc}]*$/u, "no control characters")
    .optional(),
});
const tokenBody = z.object({ deviceCode: z.string().min(20).max(100) });

const TOKEN_MESSAGES: Record<Exclude<DeviceExchange["outcome"], "issued">, string> = {
  authorization_pending: "waiting for someone to approve the code",
  slow_down: `polling too fast: wait at least ${POLL_INTERVAL_S} s between polls`,
  expired_token: "this code is unknown, expired or already used; start again",
  access_denied: "the code was denied",
};

export const deviceRoutes = new Hono<AppEnv>()
  .post("/v1/device/code", validate("json", codeBody), async (c) => {
    const clientName = c.req.valid("json").clientName ?? "tapgate login";
    const deviceCode = randomToken();
    const now = Date.now();
    const ipHash = sha256Hex(`device-code-ip:${c.req.header("CF-Connecting-IP") ?? "unknown"}`);
    // A taken user code is rare (20^8 codes); a few fresh draws settle it.
    for (let attempt = 0; attempt < 3; attempt++) {
      const code = newUserCode();
      const created = await createDeviceCode(c.env.DB, {
        id: newId("dev"),
        deviceCodeHash: sha256Hex(deviceCode),
        userCode: code,
        clientName,
        ipHash,
        now,
        ttlMs: CODE_TTL_MS,
        limit: CODES_PER_IP,
        windowMs: CODES_WINDOW_MS,
      });
      if (created.created) return c.json(codeAnswer(c, deviceCode, code));
      if (created.retryAfterMs !== null) {
        c.header("Retry-After", String(Math.max(1, Math.ceil(created.retryAfterMs / 1000))));
        return apiError(c, 429, "rate_limited", "too many sign-in codes from this address; try again later");
      }
    }
    throw new Error("no free user code after 3 draws");
  })
  .post("/v1/device/token", validate("json", tokenBody), async (c) => {
    c.header("Cache-Control", "no-store");
    const { key, prefix, hash } = newApiKey();
    const keyId = newId("key");
    const now = Date.now();
    const result = await exchangeDeviceCode(c.env.DB, {
      deviceCodeHash: sha256Hex(c.req.valid("json").deviceCode),
      key: { id: keyId, hash, prefix },
      now,
      minIntervalMs: POLL_INTERVAL_S * 1000 - POLL_SLACK_MS,
    });
    if (result.outcome !== "issued") return apiError(c, 400, result.outcome, TOKEN_MESSAGES[result.outcome]);
    await audit(c.env.DB, {
      eventId: `key_created:${keyId}`,
      teamId: result.team.id,
      at: now,
      actor: `user:${result.user.id}`,
      action: "key.created",
      subject: keyId,
      detail: { label: result.clientName, prefix, via: "device_code" },
    });
    return c.json({ key, keyId, prefix, team: result.team, user: result.user });
  })
  .get("/v1/device/:userCode", requireWeb, validate("param", userCodeParam), async (c) => {
    const code = await findDeviceCode(c.env.DB, c.req.valid("param").userCode, Date.now());
    if (!code || !visibleTo(code, c.get("web"))) return unknownCode(c);
    return c.json(describeCode(code));
  })
  .post("/v1/device/:userCode/approve", requireWeb, requireSameOrigin, validate("param", userCodeParam), (c) =>
    decide(c, c.req.valid("param").userCode, "approved"),
  )
  .post("/v1/device/:userCode/deny", requireWeb, requireSameOrigin, validate("param", userCodeParam), (c) =>
    decide(c, c.req.valid("param").userCode, "denied"),
  )
  .get("/device", async (c) => {
    const parsed = userCode.safeParse(c.req.query("code") ?? "");
    const web = await optionalWebIdentity(c);
    const code = parsed.success && web ? await findDeviceCode(c.env.DB, parsed.data, Date.now()) : null;
    const nonce = randomToken();
    c.header("Content-Security-Policy", PAGE_CSP.replace("NONCE", nonce));
    c.header("X-Frame-Options", "DENY"); // an Approve button must never be clickjacked
    c.header("Referrer-Policy", "no-referrer");
    c.header("Cache-Control", "no-store");
    const state: PageState = {
      typed: c.req.query("code") ?? "",
      web,
      code: code && web && visibleTo(code, web) ? code : null,
    };
    return c.html(devicePage(state, nonce));
  });

function newUserCode(): string {
  const n = USER_CODE_ALPHABET.length;
  const usable = 256 - (256 % n); // rejection sampling: no modulo bias
  let out = "";
  while (out.length < USER_CODE_LENGTH) {
    for (const byte of crypto.getRandomValues(new Uint8Array(USER_CODE_LENGTH * 2))) {
      if (byte < usable && out.length < USER_CODE_LENGTH) out += USER_CODE_ALPHABET[byte % n];
    }
  }
  return out;
}

const displayCode = (code: string) => `${code.slice(0, 4)}-${code.slice(4)}`;

function codeAnswer(c: Context<AppEnv>, deviceCode: string, code: string) {
  const verificationUri = `${appOrigin(c)}/device`;
  return {
    deviceCode,
    userCode: displayCode(code),
    verificationUri,
    verificationUriComplete: `${verificationUri}?code=${displayCode(code)}`,
    expiresIn: CODE_TTL_MS / 1000,
    interval: POLL_INTERVAL_S,
  };
}

/** A pending code belongs to no team; once decided, only the decider's team may see it. */
const visibleTo = (code: DeviceCode, web: WebIdentity) => code.teamId === null || code.teamId === web.teamId;

function describeCode(code: DeviceCode) {
  const { userCode, clientName, createdAt, expiresAt, status } = code;
  return { userCode: displayCode(userCode), clientName, createdAt, expiresAt, status };
}

const unknownCode = (c: Context<AppEnv>) =>
  apiError(c, 404, "not_found", "no such code, or it expired: run `tapgate login` again for a new one");

async function decide(c: Context<AppEnv>, code: string, decision: "approved" | "denied") {
  const web = c.get("web");
  const now = Date.now();
  const decided = await decideDeviceCode(c.env.DB, {
    userCode: code,
    decision,
    userId: web.userId,
    teamId: web.teamId,
    now,
  });
  if (!decided) {
    const current = await findDeviceCode(c.env.DB, code, now);
    if (!current || !visibleTo(current, web)) return unknownCode(c);
    const was = current.status === "denied" ? "denied" : "approved";
    return apiError(c, 409, "already_decided", `this code was already ${was}`, { status: current.status });
  }
  await audit(c.env.DB, {
    eventId: `device_${decision}:${decided.id}`,
    teamId: web.teamId,
    at: now,
    actor: `user:${web.userId}`,
    action: `device.${decision}`,
    subject: decided.id,
    detail: { clientName: decided.clientName },
  });
  return c.json(describeCode(decided));
}

/** The page must render for visitors who are not signed in, so it cannot use `requireWeb`. */
async function optionalWebIdentity(c: Context<AppEnv>): Promise<WebIdentity | null> {
  const token = getCookie(c, SESSION_COOKIE);
  return token ? findWebSession(c.env.DB, sha256Hex(token), Date.now()) : null;
}

// ── the confirm page (the PWA will replace it) ──────────────────────────────

const PAGE_CSP =
  "default-src 'none'; script-src 'nonce-NONCE'; style-src 'unsafe-inline'; connect-src 'self'; " +
  "form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

interface PageState {
  typed: string;
  web: WebIdentity | null;
  code: DeviceCode | null;
}

function pageBody(s: PageState) {
  if (!s.web) {
    return html`<p>You are not signed in. To approve ${s.typed ? html`the code <b>${s.typed.slice(0, 20)}</b>` : "a terminal"}, sign in first:
        we email you a link; open it in this browser and this page continues.</p>
      <form id="signin"><label>Email <input name="email" type="email" autocomplete="email" required></label>
        <button>Email me a sign-in link</button></form>`;
  }
  if (!s.typed) {
    return html`<p>Enter the code your terminal shows.</p>
      <form method="get" action="/device"><label>Code <input name="code" autocomplete="off" required></label>
        <button>Continue</button></form>`;
  }
  if (!s.code) {
    return html`<p>The code <b>${s.typed.slice(0, 20)}</b> is unknown or has expired.
      Run <code>tapgate login</code> again for a new one.</p>`;
  }
  if (s.code.status !== "pending") {
    return html`<p>The code <b>${displayCode(s.code.userCode)}</b> was already
      ${s.code.status === "denied" ? "denied" : "approved"}.</p>`;
  }
  return html`<p>A terminal named <b>${s.code.clientName}</b> asks to sign in with the code</p>
    <p class="code">${displayCode(s.code.userCode)}</p>
    <p>Check that your terminal shows the same code. If you approve, it gets an agent key for
      <b>${s.web.teamName}</b>, as <b>${s.web.email}</b>. Agent keys can ask for approval; they cannot decide.</p>
    <div class="row"><button data-decision="approve">Approve</button>
      <button data-decision="deny" class="secondary">Deny</button></div>`;
}

function devicePage(s: PageState, nonce: string) {
  const code = s.code ? displayCode(s.code.userCode) : "";
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>Approve this device? · Tapgate</title>
<style>body{font:16px system-ui,sans-serif;max-width:28rem;margin:4rem auto;padding:0 1rem;color-scheme:light dark}
button{font:inherit;padding:.9rem 1.4rem;border-radius:.6rem;border:0;background:#2563eb;color:#fff;width:100%;margin:.3rem 0}
button.secondary{background:#6b7280}input{font:inherit;width:100%;padding:.6rem;margin:.3rem 0 .6rem;box-sizing:border-box}
.code{font:600 2rem ui-monospace,monospace;letter-spacing:.15em;text-align:center}</style>
</head><body><main id="device" data-code="${code}"><h1>Approve this device?</h1>
${pageBody(s)}
<p id="msg" role="status"></p></main>
<script nonce="${nonce}">${raw(PAGE_SCRIPT)}</script></body></html>`;
}

const PAGE_SCRIPT = `
const code = document.getElementById("device").dataset.code;
const msg = document.getElementById("msg");
const DONE = { approve: "Approved. Your terminal finishes signing in within a few seconds.", deny: "Denied. The terminal gets no key." };
for (const button of document.querySelectorAll("button[data-decision]")) {
  button.addEventListener("click", async () => {
    for (const b of document.querySelectorAll("button[data-decision]")) b.disabled = true;
    const decision = button.dataset.decision;
    const r = await fetch("/v1/device/" + encodeURIComponent(code) + "/" + decision, { method: "POST" });
    const body = await r.json().catch(() => ({}));
    msg.textContent = r.ok ? DONE[decision] : body.message || "Something went wrong; nothing was approved.";
  });
}
const signin = document.getElementById("signin");
signin?.addEventListener("submit", async (event) => {
  event.preventDefault();
  const r = await fetch("/v1/auth/signin", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ email: signin.elements.email.value }),
  });
  const body = await r.json().catch(() => ({}));
  if (!r.ok) { msg.textContent = body.message || "Could not send the link."; return; }
  msg.textContent = "Check your email and open the link in this browser; this page continues once you are signed in.";
  setInterval(async () => { if ((await fetch("/v1/me")).ok) location.reload(); }, 3000);
});
`;
