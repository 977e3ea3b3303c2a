/**
 * The `@peculiar/x509` the Worker's bundle uses (`[alias]` in wrangler.toml): none. Tapgate asks
 * for passkeys with attestation `none`, so it never checks an authenticator's certificate chain;
 * `@simplewebauthn/server` only reaches `@peculiar/x509` (and with it tsyringe, reflect-metadata
 * and five ASN.1 packages) to validate such a chain or its revocation lists. Without it, a
 * registration that arrives with a certificate chain anyway is refused (no passkey is stored),
 * which is the one way it may fail. Type-checking and tests under Node still see the real package.
 *
 * Owns: that refusal. Does not own: any WebAuthn check (the library keeps every one of those).
 */
class NotInThisBuild {
  constructor() {
    throw new Error("attestation certificate chains are not verified by Tapgate (it asks for attestation none)");
  }
}

export {
  NotInThisBuild as AuthorityKeyIdentifierExtension,
  NotInThisBuild as CRLDistributionPointsExtension,
  NotInThisBuild as SubjectKeyIdentifierExtension,
  NotInThisBuild as X509Certificate,
  NotInThisBuild as X509ChainBuilder,
  NotInThisBuild as X509Crl,
};
