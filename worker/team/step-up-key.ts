/**
 * A passkey's public key in the forms an offline verifier needs: the stored COSE key turned into
 * a JWK and SubjectPublicKeyInfo DER, with its COSE algorithm (for `GET /v1/approvals/:id/proof`).
 *
 * Owns: the COSE → JWK → SPKI conversion. Does not own: verifying signatures (the WebAuthn
 * library, at step-up) or storing keys (db/passkeys.ts).
 */

import { cose, decodeCredentialPublicKey, isoBase64URL } from "@simplewebauthn/server/helpers";
import type { StepUpAssertion } from "../../sdk/src/human/step-up";

type PublicKeyForms = StepUpAssertion["publicKey"];

const EC_CURVES: Record<number, string> = {
  [cose.COSECRV.P256]: "P-256",
  [cose.COSECRV.P384]: "P-384",
  [cose.COSECRV.P521]: "P-521",
};

/** The key as JWK, with the WebCrypto algorithm that imports it; null for a kind WebCrypto cannot import. */
function jwkOf(
  key: cose.COSEPublicKey,
): { jwk: JsonWebKey; importAs: Parameters<typeof crypto.subtle.importKey>[2] } | null {
  const b64 = (bytes: Uint8Array | undefined) =>
    bytes ? isoBase64URL.fromBuffer(bytes as Uint8Array<ArrayBuffer>) : "";
  if (cose.isCOSEPublicKeyEC2(key)) {
    const crv = EC_CURVES[key.get(cose.COSEKEYS.crv) ?? 0];
    if (!crv) return null;
    const jwk = { kty: "EC", crv, x: b64(key.get(cose.COSEKEYS.x)), y: b64(key.get(cose.COSEKEYS.y)) };
    return { jwk, importAs: { name: "ECDSA", namedCurve: crv } };
  }
  if (cose.isCOSEPublicKeyRSA(key)) {
    const jwk = { kty: "RSA", n: b64(key.get(cose.COSEKEYS.n)), e: b64(key.get(cose.COSEKEYS.e)) };
    const pss = key.get(cose.COSEKEYS.alg) === cose.COSEALG.PS256;
    return { jwk, importAs: { name: pss ? "RSA-PSS" : "RSASSA-PKCS1-v1_5", hash: "SHA-256" } };
  }
  if (cose.isCOSEPublicKeyOKP(key) && key.get(cose.COSEKEYS.crv) === cose.COSECRV.ED25519) {
    return { jwk: { kty: "OKP", crv: "Ed25519", x: b64(key.get(cose.COSEKEYS.x)) }, importAs: { name: "Ed25519" } };
  }
  return null;
}

/** The stored COSE key (base64url) as COSE, JWK and SPKI; throws for a key kind it cannot express. */
export async function publicKeyForms(coseKey: string): Promise<PublicKeyForms> {
  const key = decodeCredentialPublicKey(isoBase64URL.toBuffer(coseKey));
  const forms = jwkOf(key);
  const alg = key.get(cose.COSEKEYS.alg);
  if (!forms || alg === undefined) throw new Error("unsupported passkey public key");
  const imported = await crypto.subtle.importKey("jwk", forms.jwk, forms.importAs, true, ["verify"]);
  const spki = new Uint8Array((await crypto.subtle.exportKey("spki", imported)) as ArrayBuffer);
  return { cose: coseKey, alg, spki: isoBase64URL.fromBuffer(spki), jwk: forms.jwk as PublicKeyForms["jwk"] };
}
