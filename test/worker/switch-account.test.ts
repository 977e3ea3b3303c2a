/** Login CSRF: a link or pairing for another account never switches a signed-in browser unasked. */
import { describe, expect, it } from "vitest";
import { api, cookieOf, json, lastMailLink, type Member, signUp, tokenOf, unique } from "./helpers";

const post = (path: string, body: unknown, cookie?: string) =>
  api(path, { method: "POST", body: JSON.stringify(body), ...(cookie ? { cookie } : {}) });

const whoIs = async (cookie: string) => (await json<{ user: { email: string } }>(await api("/v1/me", { cookie }))).user;

async function signInLink(member: Member): Promise<string> {
  expect((await post("/v1/auth/signin", { email: member.email })).status).toBe(202);
  return tokenOf(await lastMailLink(member.email));
}

async function pairingToken(member: Member): Promise<string> {
  const res = await post("/v1/pairing", {}, member.cookie);
  expect(res.status).toBe(201);
  return tokenOf((await json<{ url: string }>(res)).url);
}

async function expectSignedInAsOther(res: Response, account: { email: string; name: string | null }, ada: Member) {
  expect(res.status).toBe(409);
  expect(res.headers.get("Set-Cookie")).toBeNull();
  expect(await json(res)).toMatchObject({
    error: "signed_in_as_other",
    account,
    signedInAs: { email: ada.email, name: "Ada" },
  });
}

describe("an email link in a browser signed in as someone else", () => {
  it("answers 409 naming both accounts, keeps the link unused, and switches only with confirm: true", async () => {
    const [ada, bob] = [await signUp("Ada"), await signUp("Bob")];
    const token = await signInLink(bob);
    await expectSignedInAsOther(
      await post("/v1/auth/link", { token }, ada.cookie),
      { email: bob.email, name: null },
      ada,
    );
    await expectSignedInAsOther(
      await post("/v1/auth/link", { token, confirm: false }, ada.cookie),
      { email: bob.email, name: null },
      ada,
    );
    expect((await whoIs(ada.cookie)).email).toBe(ada.email);
    const switched = await post("/v1/auth/link", { token, confirm: true }, ada.cookie);
    expect(switched.status).toBe(200);
    expect((await whoIs(cookieOf(switched))).email).toBe(bob.email);
    // Used now: confirming again is the ordinary invalid link.
    expect(await json(await post("/v1/auth/link", { token, confirm: true }, ada.cookie))).toMatchObject({
      error: "invalid_link",
    });
  });

  it("a sign-up link names the new address and the name given", async () => {
    const ada = await signUp("Ada");
    const email = `${unique("newbie")}@example.com`;
    expect((await post("/v1/auth/signup", { email, name: "Newbie", team: "N" })).status).toBe(202);
    const token = tokenOf(await lastMailLink(email));
    await expectSignedInAsOther(await post("/v1/auth/link", { token }, ada.cookie), { email, name: "Newbie" }, ada);
  });

  it("asks nothing of a signed-out browser or of the same account; an unknown link stays 400", async () => {
    const ada = await signUp("Ada");
    expect((await post("/v1/auth/link", { token: await signInLink(ada) }, ada.cookie)).status).toBe(200);
    expect((await post("/v1/auth/link", { token: await signInLink(ada) })).status).toBe(200);
    const unknown = await post("/v1/auth/link", { token: "x".repeat(43) }, ada.cookie);
    expect(unknown.status).toBe(400);
    expect(await json(unknown)).toMatchObject({ error: "invalid_link" });
  });

  it("POST /v1/auth/link/preview says whom a link signs in without using it up; no URL carries the token", async () => {
    const bob = await signUp("Bob");
    const token = await signInLink(bob);
    // The token never rides in a URL (request URLs are what logs keep): there is no GET for it.
    expect((await api(`/v1/auth/link?token=${token}`)).status).toBe(404);
    const preview = await post("/v1/auth/link/preview", { token });
    expect(preview.status).toBe(200);
    expect(await json(preview)).toEqual({ email: bob.email, purpose: "signin" });
    expect((await post("/v1/auth/link", { token })).status).toBe(200);
    const used = await post("/v1/auth/link/preview", { token });
    expect(used.status).toBe(400);
    expect(await json(used)).toMatchObject({ error: "invalid_link" });
    expect((await post("/v1/auth/link/preview", { token: "y".repeat(43) })).status).toBe(400);
  });
});

describe("a pairing link in a browser signed in as someone else", () => {
  it("answers 409 naming both accounts, keeps the token unused, and switches only with confirm: true", async () => {
    const [ada, bob] = [await signUp("Ada"), await signUp("Bob")];
    const token = await pairingToken(bob);
    await expectSignedInAsOther(
      await post("/v1/pairing/claim", { token }, ada.cookie),
      { email: bob.email, name: "Bob" },
      ada,
    );
    expect((await whoIs(ada.cookie)).email).toBe(ada.email);
    const switched = await post("/v1/pairing/claim", { token, confirm: true }, ada.cookie);
    expect(switched.status).toBe(200);
    expect((await whoIs(cookieOf(switched))).email).toBe(bob.email);
  });

  it("asks a signed-out browser or the same account only to confirm; an unknown token stays 400", async () => {
    const ada = await signUp("Ada");
    for (const cookie of [ada.cookie, undefined]) {
      const token = await pairingToken(ada);
      const asked = await post("/v1/pairing/claim", { token }, cookie);
      expect(asked.status).toBe(409);
      expect(await json(asked)).toMatchObject({ error: "confirm_required", account: { email: ada.email } });
      expect((await post("/v1/pairing/claim", { token, confirm: true }, cookie)).status).toBe(200);
    }
    const unknown = await post("/v1/pairing/claim", { token: "z".repeat(43) }, ada.cookie);
    expect(unknown.status).toBe(400);
    expect(await json(unknown)).toMatchObject({ error: "invalid_pairing" });
  });
});
