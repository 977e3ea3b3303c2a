/**
 * An offline verifier of `GET /v1/approvals/:id/proof`, written from the procedure in
 * docs/human-api.md "Verifying a proof offline" with WebCrypto alone: no Tapgate code and no
 * WebAuthn library. It answers what is wrong with an assertion, or null when it holds.
 */
interface ProofAssertion {
  optionId: string;
  editedInputHash?: string;
  nonce: string;
  challenge: string;
  rpId: string;
  origin: string;
  publicKey: { alg: number; spki: string };
  authenticatorData: string;
  clientDataJSON: string;
  signature: string;
}

const bytes = (b64url: string) => new Uint8Array(Buffer.from(b64url, "base64url"));
const b64url = (data: ArrayBuffer | Uint8Array) => Buffer.from(new Uint8Array(data)).toString("base64url");
const sha256 = async (data: Uint8Array) => new Uint8Array(await crypto.subtle.digest("SHA-256", data));
const utf8 = (text: string) => new TextEncoder().encode(text);
const equal = (a: Uint8Array, b: Uint8Array) => a.length === b.length && a.every((x, i) => x === b[i]);

/** ASN.1 DER `SEQUENCE { INTEGER r, INTEGER s }` → r‖s, each left-padded to `size` bytes (WebCrypto's form). */
function rawEcdsa(der: Uint8Array, size: number): Uint8Array {
  const out = new Uint8Array(2 * size);
  let at = 2; // 0x30, length (short form: an ES256 signature is under 128 bytes)
  for (let part = 0; part < 2; part++) {
    const length = der[at + 1] ?? 0;
    let int = der.slice(at + 2, at + 2 + length);
    while (int.length > size && int[0] === 0) int = int.slice(1);
    out.set(int, part * size + size - int.length);
    at += 2 + length;
  }
  return out;
}

export async function offlineProblem(
  approvalId: string,
  requestHash: string,
  a: ProofAssertion,
): Promise<string | null> {
  // 1. The challenge commits to this approval, its requestHash, the option allowed and the edited input (v3), if any.
  const input = a.editedInputHash
    ? ["tapgate.step-up.v3", approvalId, requestHash, a.optionId, a.editedInputHash, a.nonce].join("\n")
    : ["tapgate.step-up.v2", approvalId, requestHash, a.optionId, a.nonce].join("\n");
  const challenge = b64url(await sha256(utf8(input)));
  if (challenge !== a.challenge)
    return "the challenge is not derived from this approval, requestHash, option and nonce";
  // 2. The browser signed a `webauthn.get` for that challenge, at the app's origin.
  const clientDataBytes = bytes(a.clientDataJSON);
  const clientData = JSON.parse(new TextDecoder().decode(clientDataBytes)) as Record<string, unknown>;
  if (clientData.type !== "webauthn.get") return "clientDataJSON.type is not webauthn.get";
  if (clientData.challenge !== challenge) return "clientDataJSON.challenge is another request's";
  if (clientData.origin !== a.origin) return "clientDataJSON.origin is not the app's";
  // 3. The authenticator data is for this relying party, with user presence and verification.
  const authData = bytes(a.authenticatorData);
  if (!equal(authData.slice(0, 32), await sha256(utf8(a.rpId)))) return "rpIdHash is not SHA-256(rpId)";
  const flags = authData[32] ?? 0;
  if ((flags & 0x01) === 0) return "user presence flag not set";
  if ((flags & 0x04) === 0) return "user verification flag not set";
  // 4. The approver's key signed authenticatorData ‖ SHA-256(clientDataJSON).
  if (a.publicKey.alg !== -7) return `this verifier knows ES256 only, not COSE alg ${a.publicKey.alg}`;
  const key = await crypto.subtle.importKey(
    "spki",
    bytes(a.publicKey.spki),
    { name: "ECDSA", namedCurve: "P-256" },
    false,
    ["verify"],
  );
  const signed = new Uint8Array([...authData, ...(await sha256(clientDataBytes))]);
  const ok = await crypto.subtle.verify(
    { name: "ECDSA", hash: "SHA-256" },
    key,
    rawEcdsa(bytes(a.signature), 32),
    signed,
  );
  return ok ? null : "the signature does not verify with the public key";
}
