/** Local-mode settings: the dev outbox and a fresh VAPID key pair. */
export function localVars(): Record<string, string>;
