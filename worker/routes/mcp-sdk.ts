/**
 * The part of `@modelcontextprotocol/server` the MCP route uses, as one module the route imports
 * when a request reaches it (`routes/mcp.ts`): a dynamic import of the package itself would keep
 * every one of its exports in the bundle.
 *
 * Owns: nothing but that list.
 */
export { isInitializeRequest, McpServer, WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/server";
