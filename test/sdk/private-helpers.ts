/**
 * Private mode in SDK tests, from Node against `wrangler dev`: a person's passkey on the software
 * authenticator, a device key it endorses (as the PWA registers one), and the team switched to
 * private with the owner's passkey step-up, all through the human API.
 */
import type {
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
} from "@simplewebauthn/server";
import { newDeviceKeyPair } from "../../sdk/src/private/envelope";
import { SoftAuthenticator } from "../worker/authenticator";
import type { Person } from "./helpers";

async function post<T>(person: Person, path: string, body: unknown, method = "POST"): Promise<T> {
  const response = await person.fetch(path, { method, body: JSON.stringify(body) });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
  return JSON.parse(text) as T;
}

export async function addPasskey(person: Person): Promise<SoftAuthenticator> {
  const authenticator = await SoftAuthenticator.create();
  const { challengeId, options } = await post<{ challengeId: string; options: PublicKeyCredentialCreationOptionsJSON }>(
    person,
    "/v1/auth/passkey/register/options",
    {},
  );
  const response = await authenticator.register(options, { origin: person.url });
  await post(person, "/v1/auth/passkey/register/verify", { challengeId, response });
  return authenticator;
}

export async function registerDeviceKey(person: Person, authenticator: SoftAuthenticator) {
  const made = await newDeviceKeyPair();
  const { options } = await post<{ options: PublicKeyCredentialRequestOptionsJSON }>(
    person,
    "/v1/devices/keys/options",
    { publicKey: made.publicKey },
  );
  const assertion = await authenticator.assert(options, { origin: person.url });
  await post(person, "/v1/devices/keys", { publicKey: made.publicKey, name: "Ada's phone", assertion });
  return made;
}

export async function makePrivate(owner: Person, authenticator: SoftAuthenticator): Promise<void> {
  const policy = { ...((await (await owner.fetch("/v1/policy")).json()) as object), privacy: "private" };
  const { options } = await post<{ options: PublicKeyCredentialRequestOptionsJSON }>(owner, "/v1/policy/step-up", {
    policy,
  });
  const stepUp = await authenticator.assert(options, { origin: owner.url });
  await post(owner, "/v1/policy", { ...policy, stepUp }, "PUT");
}
