import { describe, expect, it } from "vitest";
import { slackSignature, slackSignatureValid } from "./signature";

const SECRET = "8f742231b10e8888abcd99yyyzzz85a5";
const NOW = 1_531_420_618_000;
const body = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&command=%2Fweather";
const bytes = (text: string) => new TextEncoder().encode(text);
const signed = (timestamp: string, text = body) => ({
  timestamp,
  signature: slackSignature(SECRET, timestamp, text),
  body: bytes(text),
});

describe("slackSignatureValid", () => {
  it("accepts Slack's documented example", () => {
    // https://api.slack.com/authentication/verifying-requests-from-slack (its secret, timestamp and signature)
    const request = {
      timestamp: "1531420618",
      signature: "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503",
      body: bytes(
        "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c",
      ),
    };
    expect(slackSignatureValid(SECRET, request, NOW)).toBe(true);
  });

  it("accepts a timestamp within 5 minutes either way", () => {
    expect(slackSignatureValid(SECRET, signed(String(NOW / 1000 - 300)), NOW)).toBe(true);
    expect(slackSignatureValid(SECRET, signed(String(NOW / 1000 + 300)), NOW)).toBe(true);
  });

  it("refuses a timestamp more than 5 minutes old or ahead, even rightly signed", () => {
    expect(slackSignatureValid(SECRET, signed(String(NOW / 1000 - 301)), NOW)).toBe(false);
    expect(slackSignatureValid(SECRET, signed(String(NOW / 1000 + 301)), NOW)).toBe(false);
  });

  it("refuses another body, another secret, a missing or malformed header", () => {
    const ts = String(NOW / 1000);
    const good = signed(ts);
    expect(slackSignatureValid(SECRET, { ...good, body: bytes(`${body}&x=1`) }, NOW)).toBe(false);
    expect(slackSignatureValid("another secret", good, NOW)).toBe(false);
    expect(slackSignatureValid(SECRET, { ...good, signature: undefined }, NOW)).toBe(false);
    expect(slackSignatureValid(SECRET, { ...good, timestamp: undefined }, NOW)).toBe(false);
    expect(slackSignatureValid(SECRET, { ...good, signature: good.signature.replace("v0=", "v1=") }, NOW)).toBe(false);
    expect(slackSignatureValid(SECRET, { ...good, signature: good.signature.toUpperCase() }, NOW)).toBe(false);
    expect(slackSignatureValid(SECRET, { ...good, timestamp: `${ts}.5` }, NOW)).toBe(false);
  });
});
