/**
 * A fake Slack for the workerd tests: a Node HTTP server on 127.0.0.1 (started by
 * vitest.config.ts; its `/api` is the Worker's `SLACK_API_URL`). It checks each Web API request as
 * Slack does (method, `Authorization: Bearer xoxb-…` of a token it issued, form or JSON body, the
 * fields each method needs, Block Kit's limits) and answers in Slack's published shapes
 * (`{ok: true, …}` or `{ok: false, error}`). Its OAuth page approves at once and sends the
 * installer back with a code. Tests read what it was sent, and script failures, over HTTP:
 * `GET /_fake/calls?workspace=T…`, `POST /_fake/fail {workspace, method, error}`.
 *
 * Owns: Slack's side, for tests only. Never imported by the Worker.
 */
import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface FakeSlackCall {
  method: string;
  token: string | null;
  contentType: string;
  body: Record<string, unknown>;
}

interface Settings {
  clientId: string;
  clientSecret: string;
}

const CHANNEL = /^[CDG][A-Z0-9]{2,}$/;
const BLOCK_TYPES = new Set(["section", "context", "actions", "divider", "header"]);

/** Block Kit's rules for what Tapgate sends (https://api.slack.com/reference/block-kit). */
function invalidBlocks(blocks: unknown): boolean {
  if (blocks === undefined) return false;
  if (!Array.isArray(blocks) || blocks.length > 50) return true;
  return blocks.some((block) => {
    const b = block as { type?: string; elements?: Array<Record<string, unknown>> };
    if (!b.type || !BLOCK_TYPES.has(b.type)) return true;
    if (b.type !== "actions") return false;
    return (b.elements ?? []).some((e) => {
      const text = (e.text as { text?: string } | undefined)?.text ?? "";
      const value = typeof e.value === "string" ? e.value : "";
      return e.type !== "button" || text.length > 75 || value.length > 2000 || typeof e.action_id !== "string";
    });
  });
}

async function readBody(req: IncomingMessage): Promise<{ contentType: string; body: Record<string, unknown> }> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString("utf8");
  const contentType = (req.headers["content-type"] ?? "").split(";")[0]?.trim() ?? "";
  if (contentType === "application/json") return { contentType, body: text ? JSON.parse(text) : {} };
  const body: Record<string, unknown> = {};
  for (const [k, v] of new URLSearchParams(text)) body[k] = k === "blocks" ? JSON.parse(v) : v;
  return { contentType, body };
}

export async function startFakeSlack(settings: Settings): Promise<{ url: string; close: () => void }> {
  const calls: FakeSlackCall[] = [];
  const tokens = new Map<string, string>(); // token → workspace
  const codes = new Map<string, string>(); // code → workspace
  const messages = new Set<string>(); // `${channel}:${ts}`
  const failures = new Map<string, string>(); // `${workspace} ${method}` → the error its next call answers
  let ts = 1_700_000_000;

  const send = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { "Content-Type": "application/json", ...headers });
    res.end(JSON.stringify(body));
  };

  function answer(method: string, token: string | null, body: Record<string, unknown>): Record<string, unknown> {
    const scripted = `${token ? tokens.get(token) : ""} ${method}`;
    const failure = failures.get(scripted);
    if (failure) {
      failures.delete(scripted);
      return { ok: false, error: failure };
    }
    if (method === "oauth.v2.access") {
      if (body.client_id !== settings.clientId || body.client_secret !== settings.clientSecret)
        return { ok: false, error: "invalid_client_id" };
      const team = codes.get(String(body.code));
      if (!team) return { ok: false, error: "invalid_code" };
      codes.delete(String(body.code));
      const token = `xoxb-${team}-${randomBytes(12).toString("hex")}`;
      tokens.set(token, team);
      return {
        ok: true,
        access_token: token,
        token_type: "bot",
        bot_user_id: "UBOT",
        team: { id: team, name: "Acme" },
      };
    }
    if (!token) return { ok: false, error: "not_authed" };
    if (!tokens.has(token)) return { ok: false, error: "invalid_auth" };
    switch (method) {
      case "conversations.open":
        if (typeof body.users !== "string" || !/^[UW]/.test(body.users)) return { ok: false, error: "user_not_found" };
        return { ok: true, channel: { id: `D${body.users.slice(1)}` } };
      case "chat.postMessage":
      case "chat.update": {
        const channel = String(body.channel ?? "");
        if (!CHANNEL.test(channel)) return { ok: false, error: "channel_not_found" };
        if (!body.text && !body.blocks) return { ok: false, error: "no_text" };
        if (invalidBlocks(body.blocks)) return { ok: false, error: "invalid_blocks" };
        if (method === "chat.update") {
          if (!messages.has(`${channel}:${body.ts}`)) return { ok: false, error: "message_not_found" };
          return { ok: true, channel, ts: body.ts, text: body.text };
        }
        const posted = `${++ts}.000100`;
        messages.add(`${channel}:${posted}`);
        return { ok: true, channel, ts: posted, message: { text: body.text } };
      }
      case "chat.postEphemeral":
        if (!CHANNEL.test(String(body.channel ?? ""))) return { ok: false, error: "channel_not_found" };
        if (typeof body.user !== "string") return { ok: false, error: "user_not_in_channel" };
        if (!body.text && !body.blocks) return { ok: false, error: "no_text" };
        return { ok: true, message_ts: `${++ts}.000200` };
      default:
        return { ok: false, error: "unknown_method" };
    }
  }

  async function handle(req: IncomingMessage, res: ServerResponse) {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    if (req.method === "GET" && url.pathname === "/oauth/v2/authorize") {
      // The installer approves at once; `team` picks the workspace, as Slack's own parameter does.
      const redirect = url.searchParams.get("redirect_uri");
      if (url.searchParams.get("client_id") !== settings.clientId || !redirect) return send(res, 400, { error: "bad" });
      const code = randomBytes(12).toString("hex");
      codes.set(code, url.searchParams.get("team") ?? `T${randomBytes(5).toString("hex").toUpperCase()}`);
      const back = new URL(redirect);
      back.searchParams.set("code", code);
      back.searchParams.set("state", url.searchParams.get("state") ?? "");
      return send(res, 302, {}, { Location: back.href });
    }
    if (req.method === "GET" && url.pathname === "/_fake/calls") {
      const prefix = `xoxb-${url.searchParams.get("workspace")}-`;
      return send(res, 200, { calls: calls.filter((c) => c.token?.startsWith(prefix)) });
    }
    if (req.method === "POST" && url.pathname === "/_fake/fail") {
      const { body } = await readBody(req);
      failures.set(`${body.workspace} ${body.method}`, String(body.error));
      return send(res, 200, { ok: true });
    }
    const api = /^\/api\/([a-zA-Z0-9.]+)$/.exec(url.pathname);
    if (req.method !== "POST" || !api?.[1]) return send(res, 404, { ok: false, error: "unknown_method" });
    const auth = req.headers.authorization;
    const token = auth?.startsWith("Bearer ") ? auth.slice(7) : null;
    const { contentType, body } = await readBody(req);
    const method = api[1];
    calls.push({ method, token, contentType, body });
    // oauth.v2.access takes a form only; the others a form or JSON (https://api.slack.com/web#posting_json).
    if (method === "oauth.v2.access" && contentType !== "application/x-www-form-urlencoded")
      return send(res, 200, { ok: false, error: "invalid_form_data" });
    if (!["application/json", "application/x-www-form-urlencoded"].includes(contentType))
      return send(res, 200, { ok: false, error: "invalid_form_data" });
    return send(res, 200, answer(method, token, body));
  }

  const server = createServer((req, res) => {
    handle(req, res).catch(() => send(res, 500, { ok: false, error: "fatal_error" }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  server.unref();
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, close: () => server.close() };
}
