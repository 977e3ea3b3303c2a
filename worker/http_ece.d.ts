/** The parts of http_ece (RFC 8188) we use: the Worker encrypts pushes, the push tests decrypt them. */
declare module "http_ece" {
  import type { ECDH } from "node:crypto";
  export function encrypt(
    buffer: Buffer,
    params: { version: "aes128gcm"; dh: string; privateKey: ECDH; salt: string; authSecret: string },
  ): Buffer;
  export function decrypt(
    buffer: Buffer,
    params: { version: "aes128gcm"; privateKey: ECDH; authSecret: string },
  ): Buffer;
  const ece: { encrypt: typeof encrypt; decrypt: typeof decrypt };
  export default ece;
}
