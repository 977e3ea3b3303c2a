/**
 * Builds once before any test: the PWA (`wrangler dev` and the workerd tests serve `pwa/dist`)
 * and the SDK (the CLI tests run `sdk/dist/cli/main.js`). Building per test file would let
 * one file rewrite `dist` while another runs it.
 */
import { execFileSync } from "node:child_process";

export default function setup(): void {
  for (const script of ["build:pwa", "build:sdk"]) {
    // Vitest sets NODE_ENV=test; inherited, it would make Vite build a dev bundle (no service worker).
    execFileSync("npm", ["run", "--silent", script], {
      stdio: ["ignore", "ignore", "inherit"],
      env: { ...process.env, NODE_ENV: "production" },
    });
  }
}
