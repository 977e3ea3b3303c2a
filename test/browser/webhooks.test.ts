/**
 * The Webhooks screen, in real headless Chromium against `wrangler dev` (local mode): an owner
 * adds a receiver on this machine (a real HTTP server on 127.0.0.1), copies the secret shown
 * once, and the hub's own alarm delivers the team's audit entries to it, each verified with the
 * `standardwebhooks` package; the screen lists the deliveries, rotates the secret and deletes the
 * endpoint.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type WebhookPayload, webhookPayloadSchema } from "../../sdk/src/human/webhooks";
import {
  browserAvailable,
  desktopContext,
  Human,
  type LocalApp,
  launchChromium,
  screenshot,
  signUpByEmail,
  startApp,
} from "./harness";

interface Received {
  body: string;
  headers: Record<string, string>;
}

/** A receiver on this machine that records what reaches it and answers 204. */
async function startReceiver(): Promise<{ server: Server; url: string; received: Received[] }> {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => {
      body += chunk;
    });
    req.on("end", () => {
      received.push({ body, headers: req.headers as Record<string, string> });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/tapgate`, received };
}

describe.skipIf(!browserAvailable)("the Webhooks screen, in headless Chromium", () => {
  let app: LocalApp;
  let browser: Browser;
  let desk: BrowserContext;
  let page: Page;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  const errors: string[] = [];

  beforeAll(async () => {
    [app, browser, receiver] = await Promise.all([startApp(), launchChromium(), startReceiver()]);
    desk = await desktopContext(browser, app, errors);
    page = await desk.newPage();
    await signUpByEmail(page, app, "Ada", "screen-board");
  });

  afterAll(async () => {
    await browser?.close();
    await app?.stop();
    await new Promise((resolve) => receiver?.server.close(resolve));
    expect(errors).toEqual([]);
  });

  it("adds a receiver, shows its secret once, lists what the hub delivered, rotates and deletes", async () => {
    await page.getByTestId("nav-webhooks").click();
    await page.getByTestId("webhooks-empty").waitFor();
    await page.getByTestId("webhook-url").fill(receiver.url);
    await page.getByTestId("webhook-event-audit.appended").check();
    await page.getByTestId("webhook-add").click();
    const secret = await page.getByTestId("webhook-secret-value").inputValue();
    expect(secret).toMatch(/^whsec_/);
    await page.getByTestId("webhook-secret-copy").click();

    // The endpoint's own creation is an audit entry: the hub's alarm delivers it, signed.
    const payloads = await vi.waitFor(
      () => {
        const verified = receiver.received.map((r) =>
          webhookPayloadSchema.parse(new Webhook(secret).verify(r.body, r.headers)),
        );
        if (verified.length === 0) throw new Error("nothing delivered yet");
        return verified;
      },
      { timeout: 20_000, interval: 100 },
    );
    expect(payloads.map((p: WebhookPayload) => [p.type, p.data.action])).toEqual([
      ["audit.appended", "webhook.created"],
    ]);

    // The screen lists it as delivered (after a reload: the list is read when the screen opens).
    await page.getByTestId("webhook-secret-dismiss").click();
    await page.reload();
    const row = page.getByTestId("webhook-delivery").first();
    await expect.poll(() => row.textContent(), { timeout: 10_000 }).toContain("delivered");
    expect(await page.getByTestId("webhook-row-url").textContent()).toBe(receiver.url);
    await screenshot(page, "webhooks-dashboard.png");

    // Rotate: a new secret, shown once; what follows is signed with it.
    await page.getByTestId("webhook-rotate").click();
    await page.getByTestId("webhook-rotate-confirm").click();
    const rotated = await page.getByTestId("webhook-secret-value").inputValue();
    expect(rotated).toMatch(/^whsec_/);
    expect(rotated).not.toBe(secret);
    const next = await vi.waitFor(
      () => {
        const last = receiver.received[1];
        if (!last) throw new Error("the rotation's entry is not delivered yet");
        return last;
      },
      { timeout: 20_000, interval: 100 },
    );
    expect(webhookPayloadSchema.parse(new Webhook(rotated).verify(next.body, next.headers)).data.action).toBe(
      "webhook.rotated",
    );
    expect(() => new Webhook(secret).verify(next.body, next.headers)).toThrow();
    const human = await Human.of(app, desk);
    const { webhooks } = await human.json<{ webhooks: Array<{ id: string }> }>("/v1/webhooks");
    expect(JSON.stringify(webhooks)).not.toContain(rotated.slice(6));

    // Delete: the endpoint is gone, here and in the API.
    await page.getByTestId("webhook-delete").click();
    await page.getByTestId("webhook-delete-confirm").click();
    await page.getByTestId("webhooks-empty").waitFor();
    expect((await human.json<{ webhooks: unknown[] }>("/v1/webhooks")).webhooks).toEqual([]);
  });
});
