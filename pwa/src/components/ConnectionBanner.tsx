import { useEffect, useState } from "preact/hooks";
import { useLiveStatus } from "../live";
import { Banner } from "./Banner";

/** Says so when the browser is offline or the live feed is down, so a quiet list is never mistaken for "nothing pending". */
export function ConnectionBanner() {
  const live = useLiveStatus();
  const online = useOnline();
  if (!online || live === "offline") {
    return (
      <Banner tone="warn" testId="offline-banner">
        Offline — this list may be out of date. It refreshes when you are back online.
      </Banner>
    );
  }
  if (live === "connecting") {
    return (
      <Banner tone="info" testId="reconnecting-banner">
        Connecting to live updates…
      </Banner>
    );
  }
  return null;
}

export function useOnline(): boolean {
  const [online, setOnline] = useState(navigator.onLine);
  useEffect(() => {
    const update = () => setOnline(navigator.onLine);
    addEventListener("online", update);
    addEventListener("offline", update);
    return () => {
      removeEventListener("online", update);
      removeEventListener("offline", update);
    };
  }, []);
  return online;
}
