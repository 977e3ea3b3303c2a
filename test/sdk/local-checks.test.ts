/**
 * The pure checks of the scripts (issue 31): `npm run deploy` refuses a deployment without
 * APP_ORIGIN or RP_ID, and `npm start` off loopback gives the dev outbox a token.
 */
import { describe, expect, it } from "vitest";
import { deployProblems } from "../../scripts/deploy-check.mjs";
import { outboxTokenFor } from "../../scripts/local-vars.mjs";

describe("npm run deploy's check", () => {
  it("refuses with the fix when APP_ORIGIN or RP_ID is unset, as a secret or in [vars]", () => {
    const none = deployProblems({ vars: {}, secretNames: ["MAIL_API_KEY"] });
    expect(none).toHaveLength(2);
    expect(none[0]).toMatch(/^APP_ORIGIN is unset\. Set it:\n {2}npx wrangler secret put APP_ORIGIN/);
    expect(none[1]).toMatch(/^RP_ID is unset\. Set it:\n {2}npx wrangler secret put RP_ID/);
    expect(deployProblems({ vars: { RP_ID: "" }, secretNames: ["APP_ORIGIN"] })).toEqual([
      expect.stringMatching(/^RP_ID is unset/),
    ]);
  });

  it("passes when both are set, as secrets or vars; an APP_ORIGIN in [vars] must be an https origin", () => {
    expect(deployProblems({ vars: {}, secretNames: ["APP_ORIGIN", "RP_ID"] })).toEqual([]);
    expect(
      deployProblems({ vars: { APP_ORIGIN: "https://tapgate.example.com", RP_ID: "example.com" }, secretNames: [] }),
    ).toEqual([]);
    for (const origin of ["http://tapgate.example.com", "https://tapgate.example.com/app", "tapgate.example.com"]) {
      expect(deployProblems({ vars: { APP_ORIGIN: origin, RP_ID: "example.com" }, secretNames: [] })).toEqual([
        expect.stringContaining("must be an https origin"),
      ]);
    }
  });
});

describe("npm start's dev outbox token", () => {
  it("none on loopback, a fresh one on any other listener", () => {
    for (const ip of ["localhost", "127.0.0.1", "127.1.2.3", "::1", "[::1]"]) expect(outboxTokenFor(ip)).toBeNull();
    for (const ip of ["0.0.0.0", "::", "192.168.1.20", "10.0.0.5"]) {
      expect(outboxTokenFor(ip)).toMatch(/^[A-Za-z0-9_-]{43}$/);
    }
    expect(outboxTokenFor("0.0.0.0")).not.toBe(outboxTokenFor("0.0.0.0"));
  });
});
