/**
 * A software passkey authenticator: it stands in for the phone or security key a person would use,
 * producing real WebAuthn bytes (ES256 key pair, "none" attestation, DER signatures), so the
 * Worker's verification runs unmodified. Tweaks make the authenticator or the browser misbehave.
 */
import type {
  AuthenticationResponseJSON,
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
  RegistrationResponseJSON,
} from "@simplewebauthn/server";
import { ORIGIN } from "./origin";

type SigningKey = Awaited<ReturnType<typeof crypto.subtle.importKey>>;
/** An ECDSA key pair (named structurally: Node's types and workerd's spell `CryptoKeyPair` differently). */
type SigningKeys = { publicKey: SigningKey; privateKey: SigningKey };

const FLAG_UP = 0x01;
const FLAG_UV = 0x04;
const FLAG_AT = 0x40;

export interface Tweaks {
  /** The origin the browser writes into clientDataJSON. */
  origin?: string;
  /** False: the authenticator reports presence but no user verification (no PIN, no biometric). */
  userVerified?: boolean;
  /** The signature counter to report, instead of the next one. */
  signCount?: number;
}

export class SoftAuthenticator {
  /** The counter this authenticator last reported. */
  signCount = 0;
  private userHandle: string | undefined;

  private constructor(
    private readonly credentialId: Uint8Array,
    private readonly keys: SigningKeys,
  ) {}

  static async create(): Promise<SoftAuthenticator> {
    const keys = (await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, false, [
      "sign",
      "verify",
    ])) as SigningKeys;
    return new SoftAuthenticator(crypto.getRandomValues(new Uint8Array(32)), keys);
  }

  /** The credential id, base64url, as the server stores it. */
  get id(): string {
    return base64url(this.credentialId);
  }

  async register(
    options: PublicKeyCredentialCreationOptionsJSON,
    tweaks: Tweaks = {},
  ): Promise<RegistrationResponseJSON> {
    this.userHandle = options.user.id;
    const clientDataJSON = clientData("webauthn.create", options.challenge, tweaks);
    const authData = concat(
      await sha256(utf8(options.rp.id ?? new URL(ORIGIN).hostname)),
      Uint8Array.of(flags(tweaks) | FLAG_AT),
      uint32(this.signCount),
      new Uint8Array(16), // AAGUID: a "none" attestation names no model
      Uint8Array.of(this.credentialId.length >> 8, this.credentialId.length & 0xff),
      this.credentialId,
      await this.coseKey(),
    );
    const attestationObject = cbor(
      new Map<Cbor, Cbor>([
        ["fmt", "none"],
        ["attStmt", new Map()],
        ["authData", authData],
      ]),
    );
    return {
      id: this.id,
      rawId: this.id,
      type: "public-key",
      clientExtensionResults: {},
      authenticatorAttachment: "platform",
      response: {
        clientDataJSON: base64url(clientDataJSON),
        attestationObject: base64url(attestationObject),
        transports: ["internal", "hybrid"],
      },
    };
  }

  async assert(
    options: PublicKeyCredentialRequestOptionsJSON,
    tweaks: Tweaks = {},
  ): Promise<AuthenticationResponseJSON> {
    this.signCount = tweaks.signCount ?? this.signCount + 1;
    const clientDataJSON = clientData("webauthn.get", options.challenge, tweaks);
    const authData = concat(
      await sha256(utf8(options.rpId ?? new URL(ORIGIN).hostname)),
      Uint8Array.of(flags(tweaks)),
      uint32(this.signCount),
    );
    const signed = concat(authData, await sha256(clientDataJSON));
    const raw = await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, this.keys.privateKey, signed);
    return {
      id: this.id,
      rawId: this.id,
      type: "public-key",
      clientExtensionResults: {},
      authenticatorAttachment: "platform",
      response: {
        clientDataJSON: base64url(clientDataJSON),
        authenticatorData: base64url(authData),
        signature: base64url(derSignature(new Uint8Array(raw))),
        userHandle: this.userHandle,
      },
    };
  }

  /** The public key as a COSE EC2 map: kty 2 (EC2), alg -7 (ES256), crv 1 (P-256), x, y. */
  private async coseKey(): Promise<Uint8Array> {
    const jwk = (await crypto.subtle.exportKey("jwk", this.keys.publicKey)) as { x?: string; y?: string };
    return cbor(
      new Map<Cbor, Cbor>([
        [1, 2],
        [3, -7],
        [-1, 1],
        [-2, fromBase64url(jwk.x ?? "")],
        [-3, fromBase64url(jwk.y ?? "")],
      ]),
    );
  }
}

function flags(tweaks: Tweaks): number {
  return tweaks.userVerified === false ? FLAG_UP : FLAG_UP | FLAG_UV;
}

function clientData(type: string, challenge: string, tweaks: Tweaks): Uint8Array {
  return utf8(JSON.stringify({ type, challenge, origin: tweaks.origin ?? ORIGIN, crossOrigin: false }));
}

// ── bytes ───────────────────────────────────────────────────────────────────

type Cbor = number | string | Uint8Array | Map<Cbor, Cbor>;

/** Just enough CBOR for attestation objects and COSE keys: integers, strings, bytes, maps. */
function cbor(value: Cbor): Uint8Array {
  if (typeof value === "number") return value >= 0 ? cborHead(0, value) : cborHead(1, -1 - value);
  if (typeof value === "string") return concat(cborHead(3, utf8(value).length), utf8(value));
  if (value instanceof Uint8Array) return concat(cborHead(2, value.length), value);
  return concat(cborHead(5, value.size), ...[...value].flatMap(([k, v]) => [cbor(k), cbor(v)]));
}

function cborHead(major: number, n: number): Uint8Array {
  if (n < 24) return Uint8Array.of((major << 5) | n);
  if (n < 0x100) return Uint8Array.of((major << 5) | 24, n);
  return Uint8Array.of((major << 5) | 25, n >> 8, n & 0xff);
}

/** WebCrypto signs ECDSA as r‖s; WebAuthn carries an ASN.1 DER SEQUENCE of two INTEGERs. */
function derSignature(raw: Uint8Array): Uint8Array {
  const integer = (bytes: Uint8Array) => {
    let start = 0;
    while (start < bytes.length - 1 && bytes[start] === 0) start++;
    const trimmed = bytes.slice(start);
    const body = (trimmed[0] ?? 0) & 0x80 ? concat(Uint8Array.of(0), trimmed) : trimmed;
    return concat(Uint8Array.of(0x02, body.length), body);
  };
  const sequence = concat(integer(raw.slice(0, 32)), integer(raw.slice(32)));
  return concat(Uint8Array.of(0x30, sequence.length), sequence);
}

function uint32(n: number): Uint8Array {
  return Uint8Array.of(n >>> 24, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff);
}

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

function utf8(text: string): Uint8Array {
  return new TextEncoder().encode(text);
}

async function sha256(bytes: Uint8Array): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
}

function base64url(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString("base64url");
}

function fromBase64url(text: string): Uint8Array {
  return new Uint8Array(Buffer.from(text, "base64url"));
}
