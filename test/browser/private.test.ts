/**
 * Private mode in real headless Chromium (docs/threat-model.md "Private mode"): the owner turns
 * the team private on the Policy screen (passkey step-up), the banner asks to set up this
 * browser and one tap (the virtual passkey) registers its key. A request sealed here to that key
 * and posted over the long-poll agent API shows its real title on the card and is allowed; a
 * tampered ciphertext or a swapped `requestHash` shows "Altered on the way" with Deny only; a
 * request sealed without this browser's key says it was sealed before this device was set up.
 */
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import type { Approval } from "../../sdk/src/approval";
import type { SealedPlaintext } from "../../sdk/src/private/contract";
import { newDeviceKeyPair, requestHashOf, sealRequest } from "../../sdk/src/private/envelope";
import type { SealedRequest } from "../../sdk/src/private/sealed";
import { browserAvailable, DESKTOP, PHONE, phoneWithAgent, unique } from "./harness";
import { expectNotificationTitle, watchServiceWorkers } from "./push-harness";

const OPTIONS = [
  { optionId: "yes", name: "Yes, deploy it", kind: "allow_once" },
  { optionId: "no", name: "No", kind: "reject_once" },
];

function plaintext(title: string): SealedPlaintext {
  return {
    v: 1,
    snapshot: {
      toolCall: { toolCallId: unique("t"), title, kind: "execute", rawInput: { command: title } },
      session: { title: "Release", agent: { name: "codex" }, host: "laptop", cwd: "/home/ada/app" },
    },
    options: OPTIONS,
  };
}

/** axe-core's WCAG 2.1 A/AA rules over `selector`: the ids of the rules it breaks, with where. */
async function axeViolations(page: Page, selector: string): Promise<string[]> {
  const source = await readFile(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
  // Evaluated over DevTools, not as a page script: the app's CSP stays as shipped.
  await page.evaluate(source);
  return page.evaluate(async (include) => {
    type Result = { id: string; nodes: Array<{ target: string[] }> };
    const axe = (window as unknown as { axe: { run: (...a: unknown[]) => Promise<{ violations: Result[] }> } }).axe;
    const { violations } = await axe.run(
      { include: [include] },
      { runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"] } },
    );
    return violations.flatMap((v) => v.nodes.map((n) => `${v.id}: ${n.target.join(" ")}`));
  }, selector);
}

describe.skipIf(!browserAvailable)("private mode on the phone", () => {
  const t = phoneWithAgent("Ada", "passkey");
  let agentKey = "";
  /** This browser's registered device key, as the agent seals to it. */
  let device: { deviceId: string; publicKey: string };
  /** Decided above: one allowed that opened, one denied that was altered. */
  const decided = { opened: "", altered: "" };
  /** Left pending above: private requests this browser cannot open. */
  const unopened = { tampered: "", notRecipient: "" };

  /** Posts a sealed request over the long-poll agent API; answers its approval as the human API lists it. */
  async function ask(sealed: SealedRequest): Promise<Approval> {
    const sessionId = unique("private");
    const res = await fetch(`${t.app.direct}/v1/agent/sessions/${sessionId}/permissions`, {
      method: "POST",
      headers: { Authorization: `Bearer ${agentKey}`, "Content-Type": "application/json" },
      body: JSON.stringify({
        sessionId,
        toolCall: { toolCallId: "private", kind: "execute" },
        options: OPTIONS.map(({ optionId, kind }) => ({ optionId, name: kind, kind })),
        _meta: { tapgate: { sealed } },
      }),
    });
    expect(res.status, await res.clone().text()).toBe(201);
    return t.human.waitForOne(sessionId);
  }

  async function openCard(approval: Approval) {
    await t.page.goto(`/approvals/${encodeURIComponent(approval.id)}`);
    const card = t.page.getByTestId("screen-approval");
    await card.waitFor();
    return card;
  }

  it("turning the team private asks to set up this device; one passkey tap does, and the banner goes", async () => {
    agentKey = await t.human.createKey("sealing agent");
    await t.page.getByTestId("screen-pending").waitFor();
    expect(await t.page.getByTestId("device-key-banner").count()).toBe(0);

    await t.page.setViewportSize(DESKTOP);
    await t.page.goto("/policy");
    await t.page.getByTestId("policy-privacy").selectOption("private");
    await t.page.getByTestId("policy-save").click();
    await expect.poll(() => t.page.getByTestId("policy-result").textContent()).toMatch(/^Saved/);
    expect((await t.human.json<{ privacy: string }>("/v1/policy")).privacy).toBe("private");

    await t.page.setViewportSize(PHONE);
    await t.page.goto("/");
    const banner = t.page.getByTestId("device-key-banner");
    await banner.waitFor();
    expect(await banner.textContent()).toContain("Set up this device to read private requests");
    expect(await axeViolations(t.page, "[data-testid=device-key-banner]")).toEqual([]);
    await t.page.getByTestId("device-key-set-up").click();
    await banner.waitFor({ state: "detached" });

    const { keys } = await t.human.json<{ keys: Array<{ deviceId: string; current?: boolean }> }>("/v1/devices/keys");
    expect(keys).toHaveLength(1);
    // The public key the agent seals to: the browser's own, kept in IndexedDB (its private key never leaves).
    device = await t.page.evaluate(
      () =>
        new Promise<{ deviceId: string; publicKey: string }>((resolve, reject) => {
          const open = indexedDB.open("tapgate-private");
          open.onerror = () => reject(open.error);
          open.onsuccess = () => {
            const all = open.result.transaction("device-keys").objectStore("device-keys").getAll();
            all.onsuccess = () => resolve(all.result[0]);
            all.onerror = () => reject(all.error);
          };
        }),
    );
    expect(device.deviceId).toBe(keys[0]?.deviceId);

    // Devices lists the key, marked as this browser's.
    await t.page.goto("/devices");
    await t.page.getByTestId(`device-key-${device.deviceId}`).getByTestId("this-device-key").waitFor();
  });

  it("a request sealed to this browser opens on the card with its real title, marked Private, and is allowed", async () => {
    const sealed = await sealRequest({
      plaintext: plaintext("kubectl rollout restart web"),
      risk: "normal",
      to: [device],
    });
    const approval = await ask(sealed);
    decided.opened = approval.id;
    expect(JSON.stringify(approval)).not.toContain("kubectl");

    await t.page.goto("/");
    const row = t.page.getByTestId(`pending-row-${approval.id}`);
    await row.getByTestId("private-tag").waitFor();
    await expect.poll(() => row.textContent()).toContain("kubectl rollout restart web");

    const card = await openCard(approval);
    await expect.poll(() => card.getByTestId("card-title").textContent()).toBe("kubectl rollout restart web");
    await card.getByTestId("private-tag").waitFor();
    expect(await card.getByTestId("card-command").textContent()).toBe("kubectl rollout restart web");
    expect(await card.getByTestId("option-yes").getByTestId("option-agent-name").textContent()).toContain(
      "Yes, deploy it",
    );
    await card.getByTestId("option-yes").click();
    await card.getByTestId("outcome").waitFor();

    const final = await fetch(`${t.app.direct}/v1/agent/approvals/${approval.id}?wait=5`, {
      headers: { Authorization: `Bearer ${agentKey}` },
    }).then((r) => r.json());
    expect(final).toMatchObject({ state: "allowed", outcome: { outcome: "selected", optionId: "yes" } });
  });

  it("a tampered ciphertext shows Altered on the way, with Deny only", async () => {
    const sealed = await sealRequest({ plaintext: plaintext("terraform apply"), risk: "normal", to: [device] });
    const c = sealed.ciphertext;
    const tampered = { ...sealed, ciphertext: `${c.slice(0, 20)}${c[20] === "A" ? "B" : "A"}${c.slice(21)}` };
    const approval = await ask(tampered);
    unopened.tampered = approval.id;
    const card = await openCard(approval);
    await expectAlteredDenyOnly(card);
  });

  it("a swapped requestHash shows Altered on the way, with Deny only; Deny still decides", async () => {
    const sealed = await sealRequest({ plaintext: plaintext("rm -rf /srv/data"), risk: "normal", to: [device] });
    const swapped = { ...sealed, requestHash: requestHashOf(plaintext("ls")) };
    const approval = await ask(swapped);
    decided.altered = approval.id;
    const card = await openCard(approval);
    await expectAlteredDenyOnly(card);
    await card.getByTestId("option-no").click();
    await card.getByTestId("outcome").waitFor();
    expect((await t.human.approval(approval.id)).state).toBe("denied");
  });

  it("a request sealed without this device's key says it was sealed before this device was set up", async () => {
    const other = await newDeviceKeyPair();
    const sealed = await sealRequest({
      plaintext: plaintext("psql -c 'drop table users'"),
      risk: "normal",
      to: [other],
    });
    const approval = await ask(sealed);
    unopened.notRecipient = approval.id;
    const card = await openCard(approval);
    const notice = card.getByTestId("sealed-not-recipient");
    await notice.waitFor();
    expect(await notice.textContent()).toContain("Sealed before this device was set up");
    expect(await card.textContent()).not.toContain("drop table");
    expect(await card.getByTestId("option-yes").count()).toBe(0);
    await card.getByTestId("option-no").waitFor();
  });

  it("the service worker opens a private push for the lock screen; one it cannot open says only where it waits", async () => {
    await t.phone.grantPermissions(["notifications"], { origin: t.app.origin });
    const sw = await watchServiceWorkers(t.page);
    const registration = await sw.activeRegistration(`${t.app.origin}/`);
    const approval = await ask(
      await sealRequest({ plaintext: plaintext("helm upgrade web"), risk: "normal", to: [device] }),
    );
    // The push the service sends for a private request: the approval and its session, no title.
    const push = (id: string) => ({
      v: 1,
      type: "approval",
      approvalId: id,
      title: "",
      expiresAt: approval.expiresAt,
      private: true,
      sessionTitle: "codex session s1",
    });
    await sw.deliver(t.app.origin, registration, push(approval.id));
    // The worker fetches and opens the request first.
    await expectNotificationTitle(t.page, approval.id, "helm upgrade web");
    await sw.deliver(t.app.origin, registration, push(unopened.notRecipient));
    await expectNotificationTitle(t.page, unopened.notRecipient, "A private request waits in codex session s1");
  });

  async function expectAlteredDenyOnly(card: ReturnType<typeof t.page.getByTestId>) {
    const altered = card.getByTestId("sealed-altered");
    await altered.waitFor();
    expect(await altered.textContent()).toContain("Altered on the way — Tapgate cannot show what the agent asked");
    expect(await card.getByTestId("card-title").textContent()).toBe("Private request");
    await card.getByTestId("option-no").waitFor();
    expect(await card.getByTestId("option-yes").count()).toBe(0);
    expect(await card.getByTestId("private-tag").count()).toBe(1);
    expect(await axeViolations(t.page, "[data-testid=screen-approval]")).toEqual([]);
  }

  it("History opens private rows on this device, and says why one does not", async () => {
    await t.page.goto("/history");
    const opened = t.page.getByTestId(`history-row-${decided.opened}`);
    await expect.poll(() => opened.textContent()).toContain("kubectl rollout restart web");
    await opened.getByTestId("private-tag").waitFor();
    const altered = t.page.getByTestId(`history-row-${decided.altered}`);
    await expect.poll(() => altered.textContent()).toContain("Private request — altered on the way");
    expect(await altered.textContent()).not.toContain("rm -rf");
  });

  it("the team's History searches private rows on this device and exports the opened ones as CSV", async () => {
    await t.page.setViewportSize(DESKTOP);
    await t.page.goto("/history");
    await t.page.getByTestId("screen-team-history").waitFor();
    await t.page.getByTestId("history-private-note").waitFor();
    const opened = t.page.getByTestId(`history-row-${decided.opened}`);
    const altered = t.page.getByTestId(`history-row-${decided.altered}`);
    await expect.poll(() => opened.textContent()).toContain("kubectl rollout restart web");
    await altered.waitFor();

    // The service never read the title: only this device can find the row by it.
    await t.page.getByTestId("history-search").fill("rollout restart");
    await altered.waitFor({ state: "detached" });
    expect(await opened.count()).toBe(1);
    await t.page.getByTestId("history-search").fill("");
    await altered.waitFor();

    const [download] = await Promise.all([
      t.page.waitForEvent("download"),
      t.page.getByTestId("export-private-csv").click(),
    ]);
    expect(download.suggestedFilename()).toBe("tapgate-private-history.csv");
    const csv = await readFile((await download.path()) ?? "", "utf8");
    expect(csv.split("\n")[0]).toContain("title");
    expect(csv).toContain(decided.opened);
    expect(csv).toContain("kubectl rollout restart web");
    expect(csv).not.toContain(decided.altered); // a row that did not open is not exported
    await t.page.setViewportSize(PHONE);
  });

  it("a batch on the board decides the private rows that opened and leaves out those that did not", async () => {
    const sealed = await sealRequest({ plaintext: plaintext("npm publish"), risk: "normal", to: [device] });
    const opened = await ask(sealed);
    await t.page.setViewportSize(DESKTOP);
    await t.page.goto("/");
    for (const id of [opened.id, unopened.tampered, unopened.notRecipient]) {
      await t.page.getByTestId(`board-row-${id}`).getByRole("checkbox").check();
    }
    await expect.poll(() => t.page.getByTestId(`board-row-${opened.id}`).textContent()).toContain("npm publish");
    await t.page.getByTestId("batch-deny").click();
    const preflight = t.page.getByTestId("batch-preflight");
    await preflight.waitFor();
    expect(await preflight.getByTestId(`preflight-${opened.id}`).getByTestId("preflight-command").textContent()).toBe(
      "npm publish",
    );
    for (const id of [unopened.tampered, unopened.notRecipient]) {
      expect(await preflight.getByTestId(`preflight-${id}`).getByTestId("preflight-left-out").textContent()).toContain(
        "private",
      );
    }
    await preflight.getByTestId("batch-confirm").click();
    await t.page.getByTestId("batch-preflight").waitFor({ state: "detached" });
    expect((await t.human.approval(opened.id)).state).toBe("denied");
    for (const id of [unopened.tampered, unopened.notRecipient]) {
      expect((await t.human.approval(id)).state).toBe("pending");
    }
    await t.page.setViewportSize(PHONE);
  });
});
