/**
 * Builds once before any test: the PWA (`wrangler dev` and the workerd tests serve `pwa/dist`)
 * and the SDK (the CLI tests run `sdk/dist/cli/main.js`). Building per test file would let
 * one file rewrite `dist` while another runs it.
 */
import { execFileSync } from "node:child_process";

export default function setup(): void {
  for (const script of ["build:pwa", "build:sdk"]) {
    execFileSync("npm", ["run", "--silent", script], { stdio: ["ignore", "ignore", "inherit"] });
  }
}
