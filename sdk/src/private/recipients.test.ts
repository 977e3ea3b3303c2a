import { isoCBOR } from "@simplewebauthn/server/helpers";
import { describe, expect, it } from "vitest";
import type { Recipient, RecipientsResponse } from "./contract.js";
import { deviceKeyChallenge, newDeviceKeyPair, toBase64url } from "./envelope.js";
import { type KnownApprovers, type TeamPins, trustRecipients } from "./recipients.js";

const RP = { rpId: "tapgate.test", origin: "https://tapgate.test" };
const SERVICE = "https://tapgate.test";
const FLAG_UP = 0x01;
const FLAG_UV = 0x04;
type SigningKey = Awaited<ReturnType<typeof crypto.subtle.importKey>>;

/** A software passkey: an ES256 key pair that signs WebAuthn assertions as an authenticator would. */
async function softPasskey() {
  const keys = (await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, false, ["sign", "verify"])) as {
    publicKey: SigningKey;
    privateKey: SigningKey;
  };
  const jwk = await crypto.subtle.exportKey("jwk", keys.publicKey);
  const cose = isoCBOR.encode(
    new Map<number, number | Uint8Array>([
      [1, 2],
      [3, -7],
      [-1, 1],
      [-2, Buffer.from(jwk.x ?? "", "base64url")],
      [-3, Buffer.from(jwk.y ?? "", "base64url")],
    ]),
  );
  const credentialId = toBase64url(crypto.getRandomValues(new Uint8Array(16)));
  return {
    credentialId,
    credentialPublicKey: toBase64url(cose),
    async assert(challenge: string, o: { flags?: number; type?: string; origin?: string } = {}) {
      const clientDataJSON = new TextEncoder().encode(
        JSON.stringify({ type: o.type ?? "webauthn.get", challenge, origin: o.origin ?? RP.origin }),
      );
      const rpIdHash = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(RP.rpId)));
      const authenticatorData = new Uint8Array([...rpIdHash, o.flags ?? FLAG_UP | FLAG_UV, 0, 0, 0, 1]);
      const clientHash = new Uint8Array(await crypto.subtle.digest("SHA-256", clientDataJSON));
      const raw = new Uint8Array(
        await crypto.subtle.sign(
          { name: "ECDSA", hash: "SHA-256" },
          keys.privateKey,
          new Uint8Array([...authenticatorData, ...clientHash]),
        ),
      );
      return {
        credentialId,
        credentialPublicKey: toBase64url(cose),
        authenticatorData: toBase64url(authenticatorData),
        clientDataJSON: toBase64url(clientDataJSON),
        signature: toBase64url(der(raw)),
      };
    },
  };
}

/** WebCrypto signs ECDSA as r‖s; WebAuthn carries it as DER. */
function der(raw: Uint8Array): Uint8Array {
  const integer = (bytes: Uint8Array) => {
    let i = 0;
    while (i < bytes.length - 1 && bytes[i] === 0) i++;
    const body = (bytes[i] ?? 0) & 0x80 ? [0, ...bytes.slice(i)] : [...bytes.slice(i)];
    return [0x02, body.length, ...body];
  };
  const seq = [...integer(raw.slice(0, 32)), ...integer(raw.slice(32))];
  return new Uint8Array([0x30, seq.length, ...seq]);
}

type Passkey = Awaited<ReturnType<typeof softPasskey>>;

async function endorsedDevice(
  passkey: Passkey,
  who = { userId: "usr_ada", name: "Ada" },
  o: { teamId?: string; challengeTeam?: string; flags?: number } = {},
): Promise<Recipient> {
  const device = await newDeviceKeyPair();
  const challenge = deviceKeyChallenge(o.challengeTeam ?? o.teamId ?? "team_1", device.publicKey);
  return {
    ...who,
    deviceId: device.deviceId,
    publicKey: device.publicKey,
    endorsement: await passkey.assert(challenge, { flags: o.flags }),
  };
}

function answerWith(recipients: Recipient[], teamId = "team_1"): RecipientsResponse {
  return { teamId, privacy: "private", ...RP, highRisk: [], recipients };
}

function memoryApprovers(): KnownApprovers & { all: Record<string, TeamPins> } {
  const all: Record<string, TeamPins> = {};
  return {
    all,
    pins: (service, teamId) => ({ ...all[`${service} ${teamId}`] }),
    pin: (service, teamId, userId, passkey) => {
      all[`${service} ${teamId}`] = { ...all[`${service} ${teamId}`], [userId]: passkey };
    },
  };
}

describe("trusting a team's device keys", () => {
  it("trusts an endorsed key and pins its person's passkey on first use", async () => {
    const ada = await softPasskey();
    const device = await endorsedDevice(ada);
    const known = memoryApprovers();
    const result = await trustRecipients(answerWith([device]), SERVICE, known, 1234);
    expect(result.trusted.map((r) => r.deviceId)).toEqual([device.deviceId]);
    expect(result.refused).toEqual([]);
    expect(known.all[`${SERVICE} team_1`]).toEqual({
      usr_ada: {
        name: "Ada",
        credentialId: ada.credentialId,
        credentialPublicKey: ada.credentialPublicKey,
        pinnedAt: 1234,
      },
    });
  });

  it.each([
    [
      "a challenge over another key",
      async (pk: Passkey) => ({ ...(await endorsedDevice(pk)), publicKey: (await newDeviceKeyPair()).publicKey }),
    ],
    ["a challenge for another team", (pk: Passkey) => endorsedDevice(pk, undefined, { challengeTeam: "team_2" })],
    ["no user verification", (pk: Passkey) => endorsedDevice(pk, undefined, { flags: FLAG_UP })],
    ["no user presence", (pk: Passkey) => endorsedDevice(pk, undefined, { flags: FLAG_UV })],
    [
      "a bad signature",
      async (pk: Passkey) => {
        const d = await endorsedDevice(pk);
        const other = await softPasskey();
        const forged = await other.assert(deviceKeyChallenge("team_1", d.publicKey));
        return { ...d, endorsement: { ...d.endorsement, signature: forged.signature } };
      },
    ],
    [
      "no endorsement of this key (another key's, moved over)",
      async (pk: Passkey) => {
        const [a, b] = [await endorsedDevice(pk), await endorsedDevice(pk)];
        return { ...a, endorsement: b.endorsement };
      },
    ],
  ])("refuses a key endorsed with %s, and pins nothing for it", async (_, make) => {
    const ada = await softPasskey();
    const device = await make(ada);
    const known = memoryApprovers();
    const result = await trustRecipients(answerWith([device]), SERVICE, known);
    expect(result.trusted).toEqual([]);
    expect(result.refused).toMatchObject([{ userId: "usr_ada", name: "Ada", why: "unendorsed" }]);
    expect(known.all).toEqual({});
  });

  it("refuses a key whose device id is not its own", async () => {
    const device = await endorsedDevice(await softPasskey());
    const other = await newDeviceKeyPair();
    const result = await trustRecipients(
      answerWith([{ ...device, deviceId: other.deviceId }]),
      SERVICE,
      memoryApprovers(),
    );
    expect(result.refused).toMatchObject([{ why: "unendorsed", detail: "its device id is not its key's" }]);
  });

  it("refuses a key endorsed by another passkey than the one pinned, by name, while the others stay trusted", async () => {
    const [ada, adaNew, bob] = [await softPasskey(), await softPasskey(), await softPasskey()];
    const known = memoryApprovers();
    const bobs = await endorsedDevice(bob, { userId: "usr_bob", name: "Bob" });
    await trustRecipients(answerWith([await endorsedDevice(ada), bobs]), SERVICE, known);
    const changed = await endorsedDevice(adaNew);
    const result = await trustRecipients(answerWith([changed, bobs]), SERVICE, known);
    expect(result.trusted.map((r) => r.userId)).toEqual(["usr_bob"]);
    expect(result.refused).toMatchObject([
      { userId: "usr_ada", name: "Ada", deviceId: changed.deviceId, why: "changed" },
    ]);
    expect(known.all[`${SERVICE} team_1`]?.usr_ada?.credentialId).toBe(ada.credentialId);
  });

  it("keeps pins apart per service and team", async () => {
    const [ada, other] = [await softPasskey(), await softPasskey()];
    const known = memoryApprovers();
    await trustRecipients(answerWith([await endorsedDevice(ada)]), SERVICE, known);
    const elsewhere = await endorsedDevice(other, undefined, { teamId: "team_2" });
    const result = await trustRecipients(answerWith([elsewhere], "team_2"), SERVICE, known);
    expect(result.trusted).toHaveLength(1);
  });
});
