/**
 * Tapgate's MCP tools over Streamable HTTP, for a remote MCP client with no local binary:
 * `POST /v1/mcp` (JSON-RPC in; the answer as SSE or JSON), `DELETE /v1/mcp` (the client ends its
 * session), authenticated by the agent key like every agent route (`401` otherwise).
 *
 * Each MCP session is a Tapgate session: `initialize` is answered with a new `Mcp-Session-Id`
 * (`mcp-<uuid>`), which is the session id every later call asks in (joined as the key's user, so
 * another user's session id is refused like any other). Nothing else is kept between requests:
 * each is served by a fresh MCP server over the SDK's stateless web-standard transport, and a
 * tool call holds its HTTP request until the gate answers (`team/http-hold.ts`). A `DELETE` ends
 * the session's pending requests `agent_disconnected`; a client that just goes away stops polling
 * and its lease lapses (60 s, `agent_disconnected`).
 *
 * The MCP server's library (`mcp-sdk.ts`) is imported when a request reaches the endpoint,
 * not with the Worker: in production every isolate (each gate's and hub's included) evaluates
 * the Worker's modules at start, and only this route needs it.
 *
 * Owns: the endpoint and the session id. Does not own: the tools (`sdk/src/mcp/tools.ts`),
 * holding a request (`team/http-hold.ts`), the gate.
 */
import { type Context, Hono } from "hono";
import { z } from "zod";
import type { Asked } from "../../sdk/src/hooks/decision";
import { registerTapgateTools } from "../../sdk/src/mcp/tools";
import { LIMITS, parseJson, type RequestPermissionParams, sessionIdSchema } from "../../sdk/src/protocol";
import { requireAgentKey } from "../auth";
import { DomainError } from "../errors";
import { sessionGate } from "../gate/api";
import { limitBody, refuseDuplicateKeys, validate } from "../http";
import { holdOverHttp } from "../team/http-hold";
import type { AppEnv } from "../types";

export const MCP_PATH = "/v1/mcp";
const SESSION_HEADER = "Mcp-Session-Id";

/** What the card says of the session: the MCP client's own name is known only at `initialize`. */
const SESSION_INFO = { title: "MCP client", agent: { name: "mcp" } };

/** A JSON-RPC error answer outside any MCP server (no session): the shape the SDK's transport uses. */
const rpcError = (c: Context, status: 400 | 404, message: string, code = -32000) =>
  c.json({ jsonrpc: "2.0", error: { code, message }, id: null }, status);

/** `?timeout=SECONDS` in the client's URL: each request's lifetime (the team's may be shorter). */
const timeoutQuery = z.object({
  timeout: z.coerce
    .number()
    .int()
    .min(1)
    .max(24 * 60 * 60)
    .optional(),
});

/** One ask from a tool: held on the gate; every failure, a refusal included, is `{failed}`. */
function askerFor(c: Context<AppEnv>, timeoutS: number | undefined) {
  const later = (work: Promise<unknown>) => c.executionCtx.waitUntil(work);
  const hold = timeoutS === undefined ? {} : { lifetimeMs: timeoutS * 1000 };
  return async (request: RequestPermissionParams): Promise<Asked> => {
    try {
      return await holdOverHttp(c.env, c.get("agent"), request, SESSION_INFO, hold, later);
    } catch (err) {
      if (err instanceof DomainError) return { failed: `Tapgate: ${err.message}` };
      console.error("mcp ask failed", err instanceof Error ? err.name : "");
      return { failed: "Tapgate: something went wrong; nothing was decided here (see Tapgate)" };
    }
  };
}

type McpLibrary = typeof import("./mcp-sdk");

/** The session a request belongs to: new for `initialize`, else its header's (null: none, or not one of ours). */
function sessionOf(c: Context, mcp: McpLibrary, body: unknown): { id: string; isNew: boolean } | null {
  const messages = Array.isArray(body) ? body : [body];
  if (messages.some((m) => mcp.isInitializeRequest(m))) return { id: `mcp-${crypto.randomUUID()}`, isNew: true };
  const id = sessionIdSchema.safeParse(c.req.header(SESSION_HEADER));
  return id.success ? { id: id.data, isNew: false } : null;
}

async function serve(c: Context<AppEnv>, timeoutS: number | undefined): Promise<Response> {
  const body = parseJson(await c.req.text());
  if (body === undefined) return rpcError(c, 400, "Parse error: the body is not JSON", -32700);
  const mcp = await import("./mcp-sdk");
  const session = sessionOf(c, mcp, body);
  if (!session) {
    return c.req.header(SESSION_HEADER) === undefined
      ? rpcError(c, 400, `Bad Request: ${SESSION_HEADER} header is required`)
      : rpcError(c, 404, "Session not found");
  }
  const server = new mcp.McpServer({ name: "tapgate", version: "1" });
  registerTapgateTools(server, {
    sessionId: session.id,
    ask: askerFor(c, timeoutS),
    readExisting: () => ({ withheld: "the MCP endpoint cannot read the agent's files" }),
  });
  const transport = new mcp.WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined });
  await server.connect(transport);
  const answer = await transport.handleRequest(c.req.raw, { parsedBody: body });
  if (!session.isNew) return answer;
  const headers = new Headers(answer.headers);
  headers.set(SESSION_HEADER, session.id);
  return new Response(answer.body, { status: answer.status, headers });
}

export const mcpRoutes = new Hono<AppEnv>()
  .use(MCP_PATH, requireAgentKey)
  .post(MCP_PATH, validate("query", timeoutQuery), limitBody(LIMITS.frameBytes), refuseDuplicateKeys, (c) =>
    serve(c, c.req.valid("query").timeout),
  )
  .delete(MCP_PATH, async (c) => {
    const id = sessionIdSchema.safeParse(c.req.header(SESSION_HEADER));
    if (!id.success) return rpcError(c, 400, `Bad Request: ${SESSION_HEADER} header is required`);
    const { teamId, userId, keyId } = c.get("agent");
    await sessionGate(c.env, teamId, id.data).disconnectHttp({ teamId, userId, keyId });
    return c.body(null, 200);
  })
  // No server-initiated stream: everything the server says answers a POST.
  .get(MCP_PATH, (c) => c.body(null, 405, { Allow: "POST, DELETE" }));
