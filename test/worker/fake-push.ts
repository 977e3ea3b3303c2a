/**
 * A fake push service for workerd tests: outbound fetches to a registered phone's endpoint are
 * captured and decrypted (http_ece), everything else goes out as usual. The push services are
 * the one part outside this machine.
 */
import { createECDH, randomBytes } from "node:crypto";
import ece from "http_ece";
import { expect, vi } from "vitest";
import { api, json, type Member, unique } from "./helpers";

export interface Phone {
  deviceId: string;
  endpoint: string;
  ecdh: ReturnType<typeof createECDH>;
  auth: string;
}

export interface Captured {
  url: string;
  headers: Headers;
  payload: Record<string, unknown>;
}

/** Installs the fake (call in `beforeEach`; `vi.restoreAllMocks()` removes it). */
export function fakePushService() {
  const pushes: Captured[] = [];
  const phones = new Map<string, Phone>();
  const state = { answer: (_url: string) => 201 };
  const realFetch = globalThis.fetch;
  vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
    const request = new Request(input, init);
    const phone = phones.get(request.url);
    if (!phone) return realFetch(input, init);
    const body = Buffer.from(await request.arrayBuffer());
    const plain = ece.decrypt(body, { version: "aes128gcm", privateKey: phone.ecdh, authSecret: phone.auth });
    pushes.push({ url: request.url, headers: request.headers, payload: JSON.parse(plain.toString("utf8")) });
    return new Response(null, { status: state.answer(request.url) });
  });

  /** Registers a phone for `member` through the API, as the PWA does (`pushHost`: its push service). */
  async function addPhone(member: Member, name = "Pixel 8", pushHost = "fcm.googleapis.com"): Promise<Phone> {
    const ecdh = createECDH("prime256v1");
    ecdh.generateKeys();
    const auth = randomBytes(16).toString("base64url");
    const endpoint = `https://${pushHost}/fcm/send/${unique("sub")}`;
    const response = await api("/v1/devices", {
      method: "POST",
      cookie: member.cookie,
      body: JSON.stringify({
        name,
        subscription: { endpoint, keys: { p256dh: ecdh.getPublicKey("base64url"), auth } },
      }),
    });
    expect(response.status).toBe(201);
    const { id } = await json<{ id: string }>(response);
    const phone = { deviceId: id, endpoint, ecdh, auth };
    phones.set(endpoint, phone);
    return phone;
  }

  /** The payloads pushed to one phone, in order. */
  const to = (phone: Phone) => pushes.filter((p) => p.url === phone.endpoint).map((p) => p.payload);

  const untilPushes = (count: number) =>
    vi.waitFor(
      () => {
        if (pushes.length < count) throw new Error(`${pushes.length} pushes so far`);
      },
      { timeout: 5_000, interval: 10 },
    );

  return { pushes, state, addPhone, to, untilPushes };
}
