import { useState } from "preact/hooks";

/**
 * One async action at a time with its error in words: `run` sets busy, clears the last error,
 * and records the thrown message if `fn` fails.
 */
export function useAction(describe: (e: unknown) => string = (e) => (e as Error).message) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const run = async (fn: () => Promise<void>) => {
    setBusy(true);
    setError(null);
    try {
      await fn();
    } catch (e) {
      setError(describe(e));
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, setError, run };
}
