/**
 * The `reflect-metadata` the Worker's bundle uses (`[alias]` in wrangler.toml): nothing. Only
 * `@peculiar/x509`'s dependency injection needs it, and that package is not in the bundle
 * (`./index.ts`); `@simplewebauthn/server` imports it for its side effect alone.
 */
export {};
