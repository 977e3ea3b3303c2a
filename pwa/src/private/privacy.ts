/**
 * The team's privacy (`policy.privacy`, `GET /v1/policy`) as the app knows it, read once per
 * team and updated when the Policy screen saves: whether to ask this browser to set up its key.
 */
import { useEffect, useState } from "preact/hooks";
import type { Privacy } from "../../../sdk/src/private/sealed";
import { api, type Me } from "../api";

let known: { teamId: string; privacy: Privacy } | null = null;
const listeners = new Set<() => void>();

/** After the Policy screen saved: every screen sees the new setting at once. */
export function privacySaved(teamId: string, privacy: Privacy): void {
  known = { teamId, privacy };
  for (const l of listeners) l();
}

/** The signed-in team's privacy; null until read (or when it could not be). */
export function useTeamPrivacy(me: Me | null): Privacy | null {
  const [, setTick] = useState(0);
  const teamId = me?.team.id;
  useEffect(() => {
    const l = () => setTick((n) => n + 1);
    listeners.add(l);
    l();
    if (teamId && known?.teamId !== teamId) {
      api.policy().then(
        (p) => privacySaved(teamId, p.privacy),
        () => {},
      );
    }
    return () => void listeners.delete(l);
  }, [teamId]);
  return known && known.teamId === teamId ? known.privacy : null;
}
