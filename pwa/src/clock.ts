/** One shared ticking clock, so a list of countdowns re-renders together instead of each on its own timer. */
import { useEffect, useState } from "preact/hooks";

const listeners = new Set<(now: number) => void>();
let timer: ReturnType<typeof setInterval> | undefined;

export function useNow(): number {
  const [now, setNow] = useState(Date.now);
  useEffect(() => {
    listeners.add(setNow);
    timer ??= setInterval(() => {
      const t = Date.now();
      for (const fn of listeners) fn(t);
    }, 1000);
    return () => {
      listeners.delete(setNow);
      if (listeners.size === 0) {
        clearInterval(timer);
        timer = undefined;
      }
    };
  }, []);
  return now;
}
