/**
 * Device keys (docs/human-api.md "Device keys"): a browser's key, endorsed by its person's
 * passkey (a software authenticator stands in for the phone), registered, listed, removed; what
 * removing its push device, its sign-in, its person or its passkey takes with it; and the
 * recipients an agent seals to (`GET /v1/agent/recipients`).
 */
import { env } from "cloudflare:test";
import type { PublicKeyCredentialRequestOptionsJSON } from "@simplewebauthn/server";
import { verifyAuthenticationResponse } from "@simplewebauthn/server";
import { isoBase64URL } from "@simplewebauthn/server/helpers";
import { describe, expect, it } from "vitest";
import { type RecipientsResponse, recipientsResponseSchema } from "../../sdk/src/private/contract";
import { deviceKeyChallenge, newDeviceKeyPair, toBase64url } from "../../sdk/src/private/envelope";
import { DEFAULT_POLICY } from "../../worker/policy";
import {
  anotherBrowser,
  deviceKeyOptions,
  endorse,
  listDeviceKeys,
  postDeviceKey,
  registerDeviceKey,
} from "./device-key-helpers";
import { api, createKey, json, type Member, signUp, unique } from "./helpers";
import { type Approver, addMember, withPasskey } from "./team-helpers";

interface AuditRow {
  action: string;
  actor: string;
  subject: string;
  detail: Record<string, unknown>;
}

/** The team's audit entries, newest first, once the hub chained what is queued (verify drains the outbox). */
async function auditOf(m: Member): Promise<AuditRow[]> {
  expect(await json(await api("/v1/audit/verify", { cookie: m.cookie }))).toMatchObject({ ok: true });
  return (await json<{ entries: AuditRow[] }>(await api("/v1/audit?limit=200", { cookie: m.cookie }))).entries;
}

const removals = async (m: Member) => (await auditOf(m)).filter((e) => e.action === "device_key.removed");

const del = (m: Member, path: string) => api(path, { method: "DELETE", cookie: m.cookie });

async function recipients(key: string): Promise<Response> {
  return api("/v1/agent/recipients", { headers: { Authorization: `Bearer ${key}` } });
}

async function recipientsOf(key: string): Promise<RecipientsResponse> {
  const response = await recipients(key);
  expect(response.status).toBe(200);
  return recipientsResponseSchema.parse(await json(response));
}

/** An owner with a passkey in a new team. */
const owner = async (name = "Olga") => withPasskey(await signUp(name));

describe("registering a device key", () => {
  it("with the person's passkey over this team and key: 201, listed (current for this browser), audited", async () => {
    const olga = await owner();
    const { publicKey, deviceId, key } = await registerDeviceKey(olga, { name: "Olga's Pixel" });
    expect(key).toMatchObject({
      deviceId,
      userId: olga.userId,
      name: "Olga's Pixel",
      pushDeviceId: null,
      current: true,
    });

    expect(await listDeviceKeys(olga)).toEqual([key]);
    const elsewhere = await anotherBrowser(olga);
    expect(await listDeviceKeys(elsewhere)).toEqual([{ ...key, current: false }]);
    const viewer = await addMember(olga, "viewer", "Vera");
    expect(await listDeviceKeys(viewer)).toEqual([{ ...key, current: false }]);

    expect((await auditOf(olga))[0]).toMatchObject({
      action: "device_key.added",
      actor: `user:${olga.userId}`,
      subject: olga.userId,
      detail: { deviceId, name: "Olga's Pixel", credentialId: olga.authenticator.id },
    });
    // The options name the key and carry the challenge the passkey signed, for this team.
    const options = await json(await deviceKeyOptions(olga, publicKey));
    expect(options).toMatchObject({ deviceId, challenge: deviceKeyChallenge(olga.teamId, publicKey) });
    expect((options.options as PublicKeyCredentialRequestOptionsJSON).userVerification).toBe("required");
  });

  it("the endorsement an agent receives verifies offline against the passkey's public key", async () => {
    const olga = await owner();
    const { publicKey, deviceId } = await registerDeviceKey(olga);
    const { key } = await createKey(olga);
    const answer = await recipientsOf(key);
    const [recipient] = answer.recipients;
    expect(recipient).toMatchObject({ userId: olga.userId, deviceId, publicKey });
    const e = recipient?.endorsement;
    if (!e) throw new Error("no endorsement");
    expect(e.credentialId).toBe(olga.authenticator.id);
    // What the SDK does: the stored assertion, checked against the endorsement's own passkey key,
    // over the challenge it derives itself from the team id and the key.
    const { verified } = await verifyAuthenticationResponse({
      response: {
        id: e.credentialId,
        rawId: e.credentialId,
        type: "public-key",
        clientExtensionResults: {},
        response: { authenticatorData: e.authenticatorData, clientDataJSON: e.clientDataJSON, signature: e.signature },
      },
      expectedChallenge: deviceKeyChallenge(answer.teamId, publicKey),
      expectedOrigin: answer.origin,
      expectedRPID: answer.rpId,
      credential: { id: e.credentialId, publicKey: isoBase64URL.toBuffer(e.credentialPublicKey), counter: 0 },
      requireUserVerification: true,
    });
    expect(verified).toBe(true);
  });

  it("an assertion over another key's or another team's challenge: 400 step_up_failed, nothing stored", async () => {
    const olga = await owner();
    const [mine, other] = [await newDeviceKeyPair(), await newDeviceKeyPair()];
    const overOther = await endorse(olga, other.publicKey);
    const wrongKey = await postDeviceKey(olga, { publicKey: mine.publicKey, assertion: overOther });
    expect(wrongKey.status).toBe(400);
    expect(await json(wrongKey)).toMatchObject({ error: "step_up_failed" });

    // The right key, but the challenge of another team (the same person's passkey signs it).
    const options = await json<{ options: PublicKeyCredentialRequestOptionsJSON }>(
      await deviceKeyOptions(olga, mine.publicKey),
    );
    const otherTeam = deviceKeyChallenge(`team_${unique("x")}`, mine.publicKey);
    const overOtherTeam = await olga.authenticator.assert({ ...options.options, challenge: otherTeam });
    const wrongTeam = await postDeviceKey(olga, { publicKey: mine.publicKey, assertion: overOtherTeam });
    expect(wrongTeam.status).toBe(400);
    expect(await json(wrongTeam)).toMatchObject({ error: "step_up_failed" });
    expect(await listDeviceKeys(olga)).toEqual([]);
  });

  it("another person's passkey: 400 step_up_failed; without user verification: 403", async () => {
    const olga = await owner();
    const ada = await withPasskey(await addMember(olga, "approver", "Ada"));
    const { publicKey } = await newDeviceKeyPair();
    const challenge = deviceKeyChallenge(olga.teamId, publicKey);
    const options = await json<{ options: PublicKeyCredentialRequestOptionsJSON }>(
      await deviceKeyOptions(olga, publicKey),
    );
    const byAda = await ada.authenticator.assert({ ...options.options, challenge });
    const refused = await postDeviceKey(olga, { publicKey, assertion: byAda });
    expect(refused.status).toBe(400);
    expect(await json(refused)).toMatchObject({ error: "step_up_failed", message: "not one of your passkeys" });

    const unverified = await postDeviceKey(olga, {
      publicKey,
      assertion: await endorse(olga, publicKey, { userVerified: false }),
    });
    expect(unverified.status).toBe(403);
    expect(await json(unverified)).toMatchObject({ error: "step_up_no_user_verification" });
    expect(await listDeviceKeys(olga)).toEqual([]);
  });

  it("the same key again replaces its row; another person's key id is 409 device_key_taken", async () => {
    const olga = await owner();
    const first = await registerDeviceKey(olga, { name: "Pixel" });
    const again = await postDeviceKey(olga, {
      publicKey: first.publicKey,
      name: "Pixel 9",
      assertion: await endorse(olga, first.publicKey),
    });
    expect(again.status).toBe(201);
    expect(await listDeviceKeys(olga)).toEqual([{ ...first.key, name: "Pixel 9" }]);

    const ada = await withPasskey(await addMember(olga, "approver", "Ada"));
    const taken = await postDeviceKey(ada, {
      publicKey: first.publicKey,
      assertion: await endorse(ada, first.publicKey),
    });
    expect(taken.status).toBe(409);
    expect(await json(taken)).toMatchObject({ error: "device_key_taken" });
    expect((await listDeviceKeys(olga)).map((k) => k.userId)).toEqual([olga.userId]);
  });

  it("only deciding roles register; a push device named must be the person's own", async () => {
    const olga = await owner();
    const viewer = await addMember(olga, "viewer", "Vera");
    const { publicKey } = await newDeviceKeyPair();
    const options = await deviceKeyOptions(viewer, publicKey);
    expect(options.status).toBe(403);
    expect(await json(options)).toMatchObject({ error: "forbidden" });
    expect((await postDeviceKey(viewer, { publicKey, assertion: {} })).status).toBe(403);

    const ada = await addMember(olga, "approver", "Ada");
    const adasPhone = await addPushDevice(ada);
    const notMine = await postDeviceKey(olga, {
      publicKey,
      pushDeviceId: adasPhone,
      assertion: await endorse(olga, publicKey),
    });
    expect(notMine.status).toBe(404);
    expect(await listDeviceKeys(olga)).toEqual([]);
  });
});

describe("removing a device key", () => {
  it("its person or an admin may; another approver may not; another team's key is 404", async () => {
    const olga = await owner();
    const ada = await withPasskey(await addMember(olga, "approver", "Ada"));
    const admin = await addMember(olga, "admin", "Abe");
    const adas = await registerDeviceKey(ada);
    const olgas = await registerDeviceKey(olga);

    const refused = await del(ada, `/v1/devices/keys/${olgas.deviceId}`);
    expect(refused.status).toBe(403);
    expect(await json(refused)).toMatchObject({ error: "forbidden" });
    expect((await del(ada, `/v1/devices/keys/${adas.deviceId}`)).status).toBe(200);
    expect((await del(admin, `/v1/devices/keys/${olgas.deviceId}`)).status).toBe(200);
    expect(await listDeviceKeys(olga)).toEqual([]);
    expect((await removals(olga)).map((e) => [e.actor, e.subject, e.detail.deviceId])).toEqual([
      [`user:${admin.userId}`, olga.userId, olgas.deviceId],
      [`user:${ada.userId}`, ada.userId, adas.deviceId],
    ]);

    const stranger = await owner("Sam");
    const strangers = await registerDeviceKey(stranger);
    const foreign = await del(olga, `/v1/devices/keys/${strangers.deviceId}`);
    expect(foreign.status).toBe(404);
    expect(await listDeviceKeys(stranger)).toEqual([strangers.key]);
    expect((await del(olga, "/v1/devices/keys/dk_nothex")).status).toBe(400);
  });
});

/** A push device of `m`, registered as the PWA does; its id. */
async function addPushDevice(m: Member): Promise<string> {
  const pair = (await crypto.subtle.generateKey({ name: "ECDH", namedCurve: "P-256" }, true, [
    "deriveBits",
  ])) as CryptoKeyPair;
  const p256dh = toBase64url(new Uint8Array((await crypto.subtle.exportKey("raw", pair.publicKey)) as ArrayBuffer));
  const auth = toBase64url(crypto.getRandomValues(new Uint8Array(16)));
  const response = await api("/v1/devices", {
    method: "POST",
    cookie: m.cookie,
    body: JSON.stringify({
      name: "Pixel",
      subscription: { endpoint: `https://fcm.googleapis.com/fcm/send/${unique("sub")}`, keys: { p256dh, auth } },
    }),
  });
  expect(response.status).toBe(201);
  return (await json<{ id: string }>(response)).id;
}

describe("a key goes with what it stood on, audited", () => {
  it("its push device removed", async () => {
    const olga = await owner();
    const pushDeviceId = await addPushDevice(olga);
    const onPhone = await registerDeviceKey(olga, { pushDeviceId });
    const other = await registerDeviceKey(olga);
    expect(onPhone.key.pushDeviceId).toBe(pushDeviceId);
    expect((await del(olga, `/v1/devices/${pushDeviceId}`)).status).toBe(200);
    expect((await listDeviceKeys(olga)).map((k) => k.deviceId)).toEqual([other.deviceId]);
    expect(await removals(olga)).toEqual([
      expect.objectContaining({
        actor: "system",
        subject: olga.userId,
        detail: expect.objectContaining({ deviceId: onPhone.deviceId, because: "push_device_removed" }),
      }),
    ]);
  });

  it("its sign-in ended, from another browser or by signing out", async () => {
    const olga = await owner();
    const laptop = await anotherBrowser(olga);
    const tablet = await anotherBrowser(olga);
    const onLaptop = await registerDeviceKey(laptop);
    const onTablet = await registerDeviceKey(tablet);
    const here = await registerDeviceKey(olga);

    expect((await del(olga, `/v1/auth/sessions/${laptop.sessionId}`)).status).toBe(200);
    expect((await listDeviceKeys(olga)).map((k) => k.deviceId)).toEqual([onTablet.deviceId, here.deviceId]);
    const signedOut = await api("/v1/auth/signout", { method: "POST", cookie: tablet.cookie });
    expect(signedOut.status).toBeLessThan(300);
    expect((await listDeviceKeys(olga)).map((k) => k.deviceId)).toEqual([here.deviceId]);
    expect((await removals(olga)).map((e) => [e.detail.deviceId, e.detail.because])).toEqual([
      [onTablet.deviceId, "signed_out"],
      [onLaptop.deviceId, "signed_out"],
    ]);
  });

  it("its person removed from the team (their keys in other teams stay)", async () => {
    const olga = await owner();
    const ada = await withPasskey(await addMember(olga, "approver", "Ada"));
    const adas = [await registerDeviceKey(ada), await registerDeviceKey(await anotherBrowser(ada))];
    const olgas = await registerDeviceKey(olga);
    // Ada's own team, with her key there.
    const elsewhere = await owner("Ben");
    const adaThere = await withPasskeyIn(elsewhere, ada);
    const keyThere = await registerDeviceKey(adaThere);

    expect((await del(olga, `/v1/members/${ada.userId}`)).status).toBe(200);
    expect((await listDeviceKeys(olga)).map((k) => k.deviceId)).toEqual([olgas.deviceId]);
    expect((await removals(olga)).map((e) => [e.detail.deviceId, e.detail.because]).sort()).toEqual(
      adas.map((k) => [k.deviceId, "member_removed"]).sort(),
    );
    expect(await listDeviceKeys(adaThere)).toEqual([keyThere.key]);
  });

  it("the passkey that endorsed it removed", async () => {
    const olga = await owner();
    const endorsed = await registerDeviceKey(olga);
    const second = await withPasskey(olga); // a second passkey on the same account
    const bySecond = await registerDeviceKey(second);
    expect((await del(olga, `/v1/auth/passkeys/${olga.authenticator.id}`)).status).toBe(200);
    expect((await listDeviceKeys(olga)).map((k) => k.deviceId)).toEqual([bySecond.deviceId]);
    expect((await removals(olga)).map((e) => [e.detail.deviceId, e.detail.because])).toEqual([
      [endorsed.deviceId, "passkey_removed"],
    ]);
  });
});

/** `person`, also an approver in `team`'s team, signed in there (with the same passkey). */
async function withPasskeyIn(team: Member, person: Approver): Promise<Approver> {
  await env.DB.prepare("INSERT INTO memberships (team_id, user_id, role, created_at) VALUES (?, ?, 'approver', ?)")
    .bind(team.teamId, person.userId, Date.now())
    .run();
  return anotherBrowser({ ...person, teamId: team.teamId });
}

describe("GET /v1/agent/recipients", () => {
  it("every decider's keys (not viewers'), the team's privacy, high-risk patterns and relying party", async () => {
    const olga = await owner();
    const ada = await withPasskey(await addMember(olga, "approver", "Ada"));
    const vera = await withPasskey(await addMember(olga, "approver", "Vera"));
    const olgas = await registerDeviceKey(olga);
    const adas = await registerDeviceKey(ada);
    await registerDeviceKey(vera);
    // Vera becomes a viewer: her key stays listed, but nobody seals to it.
    const demoted = await api(`/v1/members/${vera.userId}`, {
      method: "PATCH",
      cookie: olga.cookie,
      body: JSON.stringify({ role: "viewer" }),
    });
    expect(demoted.status).toBe(200);
    expect(await listDeviceKeys(olga)).toHaveLength(3);
    // Another team's keys are never anyone's recipients here.
    await registerDeviceKey(await owner("Sam"));

    const { key } = await createKey(ada);
    const answer = await recipientsOf(key);
    expect(answer).toMatchObject({
      teamId: olga.teamId,
      privacy: "standard",
      rpId: "tapgate.test",
      origin: "https://tapgate.test",
      highRisk: DEFAULT_POLICY.highRisk,
    });
    expect(answer.recipients.map((r) => [r.userId, r.name, r.deviceId, r.publicKey])).toEqual([
      [olga.userId, "Olga", olgas.deviceId, olgas.publicKey],
      [ada.userId, "Ada", adas.deviceId, adas.publicKey],
    ]);
  });

  it("deciders: session_owner → the key owner's devices alone", async () => {
    const olga = await owner();
    const ada = await withPasskey(await addMember(olga, "approver", "Ada"));
    await registerDeviceKey(olga);
    const adas = [await registerDeviceKey(ada), await registerDeviceKey(await anotherBrowser(ada))];
    const narrowed = await api("/v1/policy", {
      method: "PUT",
      cookie: olga.cookie,
      body: JSON.stringify({ ...DEFAULT_POLICY, deciders: "session_owner" }),
    });
    expect(narrowed.status).toBe(200);
    const { key } = await createKey(ada);
    const answer = await recipientsOf(key);
    expect(answer.recipients.map((r) => r.deviceId)).toEqual(adas.map((k) => k.deviceId));
  });

  it("a revoked agent key, or none: 401", async () => {
    const olga = await owner();
    await registerDeviceKey(olga);
    const { id, key } = await createKey(olga);
    expect((await recipients(key)).status).toBe(200);
    expect((await del(olga, `/v1/keys/${id}`)).status).toBe(200);
    const revoked = await recipients(key);
    expect(revoked.status).toBe(401);
    expect(await json(revoked)).toMatchObject({ error: "bad_api_key" });
    expect((await api("/v1/agent/recipients")).status).toBe(401);
  });
});
