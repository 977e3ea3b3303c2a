import { describe, expect, it } from "vitest";
import type { Approval } from "../../../sdk/src/approval";
import type { SealedPlaintext } from "../../../sdk/src/private/contract";
import { newDeviceKeyPair, sealRequest } from "../../../sdk/src/private/envelope";
import type { StoredDeviceKey } from "./key-store";
import { asAsked, offersOnlyAsked, openWithKeys } from "./open";

const plaintext: SealedPlaintext = {
  v: 1,
  snapshot: {
    toolCall: { toolCallId: "t1", title: "git push --force", kind: "execute", rawInput: { command: "git push -f" } },
    session: { title: "release", agent: null, host: "laptop", cwd: "/home/ada/app" },
  },
  options: [
    { optionId: "yes", name: "Yes, push it", kind: "allow_once" },
    { optionId: "always", name: "Always", kind: "allow_always" },
    { optionId: "no", name: "No", kind: "reject_once" },
  ],
};

/** The generic options the service shows for a sealed request. */
const offered = [
  { optionId: "yes", name: "Allow once", kind: "allow_once" },
  { optionId: "no", name: "Deny", kind: "reject_once" },
];

async function device(): Promise<StoredDeviceKey> {
  const k = await newDeviceKeyPair();
  return { teamId: "t", userId: "u", deviceId: k.deviceId, publicKey: k.publicKey, keyPair: k.keyPair, createdAt: 0 };
}

async function sealedTo(keys: StoredDeviceKey[], options = offered) {
  const sealed = await sealRequest({ plaintext, risk: "normal", to: keys });
  return { sealed, requestHash: sealed.requestHash, options };
}

describe("opening a private request on this device", () => {
  it("opens with this browser's key, and shows the agent's words for the options offered", async () => {
    const mine = await device();
    const approval = await sealedTo([await device(), mine]);
    const outcome = await openWithKeys(approval, [mine]);
    expect(outcome).toEqual({ state: "opened", plaintext });
    const shown = asAsked(
      { ...approval, snapshot: { toolCall: { toolCallId: "private" } } } as unknown as Approval,
      plaintext,
    );
    expect(shown.snapshot.toolCall.title).toBe("git push --force");
    expect(shown.options.map((o) => [o.optionId, o.name])).toEqual([
      ["yes", "Yes, push it"],
      ["no", "No"],
    ]);
  });

  it("is not_a_recipient when sealed without any of this browser's keys", async () => {
    const approval = await sealedTo([await device()]);
    expect(await openWithKeys(approval, [await device()])).toEqual({ state: "not_a_recipient" });
    expect(await openWithKeys(approval, [])).toEqual({ state: "not_a_recipient" });
  });

  it("is altered when the ciphertext, the wrap or the requestHash changed on the way", async () => {
    const mine = await device();
    const approval = await sealedTo([mine]);
    const flipped = `${approval.sealed.ciphertext.slice(0, 10)}${approval.sealed.ciphertext[10] === "A" ? "B" : "A"}${approval.sealed.ciphertext.slice(11)}`;
    const tampered = { ...approval, sealed: { ...approval.sealed, ciphertext: flipped } };
    expect(await openWithKeys(tampered, [mine])).toEqual({ state: "altered" });
    expect(await openWithKeys({ ...approval, requestHash: "0".repeat(64) }, [mine])).toEqual({ state: "altered" });
    const other = await sealedTo([mine]);
    const swappedWrap = { ...approval, sealed: { ...approval.sealed, recipients: other.sealed.recipients } };
    expect(await openWithKeys(swappedWrap, [mine])).toEqual({ state: "altered" });
  });

  it("is altered when the service offers an option the agent did not ask for, or changed its kind", async () => {
    const mine = await device();
    const renamed = [{ optionId: "no", name: "Deny", kind: "allow_once" }];
    expect(await openWithKeys(await sealedTo([mine], renamed), [mine])).toEqual({ state: "altered" });
    const added = [...offered, { optionId: "extra", name: "Allow", kind: "allow_once" }];
    expect(await openWithKeys(await sealedTo([mine], added), [mine])).toEqual({ state: "altered" });
  });
});

describe("the option check", () => {
  const asked = plaintext.options;
  it("accepts the asked options or a subset of them", () => {
    expect(offersOnlyAsked(asked, asked)).toBe(true);
    expect(offersOnlyAsked([{ optionId: "no", kind: "reject_once" }], asked)).toBe(true);
    expect(offersOnlyAsked([], asked)).toBe(true);
  });
  it("refuses a new id, a changed kind, or an option offered twice", () => {
    expect(offersOnlyAsked([{ optionId: "go", kind: "allow_once" }], asked)).toBe(false);
    expect(offersOnlyAsked([{ optionId: "no", kind: "allow_once" }], asked)).toBe(false);
    expect(
      offersOnlyAsked(
        [
          { optionId: "no", kind: "reject_once" },
          { optionId: "no", kind: "reject_once" },
        ],
        asked,
      ),
    ).toBe(false);
  });
});
