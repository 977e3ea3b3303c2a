/** Screens only the wide dashboard needs load on first use, so the phone's bundle stays small. */
import type { ComponentType } from "preact";
import { useEffect, useState } from "preact/hooks";

export function lazy<P extends object>(load: () => Promise<ComponentType<P>>): ComponentType<P> {
  let loaded: ComponentType<P> | null = null;
  let loading: Promise<ComponentType<P>> | null = null;
  return function Lazy(props: P) {
    const [, setReady] = useState(0);
    const [failed, setFailed] = useState(false);
    useEffect(() => {
      if (loaded) return;
      loading ??= load();
      loading.then(
        (c) => {
          loaded = c;
          setReady((n) => n + 1);
        },
        () => {
          loading = null;
          setFailed(true);
        },
      );
    }, []);
    if (loaded) {
      const C = loaded;
      return <C {...props} />;
    }
    return failed ? (
      <p class="muted center">This screen could not be loaded. Check your connection and reload.</p>
    ) : (
      <p class="muted center">Loading…</p>
    );
  };
}
