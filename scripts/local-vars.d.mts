/** Local-mode settings: the dev outbox and a fresh VAPID key pair. */
export function localVars(): Record<string, string>;
/** The dev outbox's token for a server listening on `ip`: null on loopback, a fresh one otherwise. */
export function outboxTokenFor(ip: string): string | null;
