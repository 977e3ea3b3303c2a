import { useEffect, useState } from "preact/hooks";
import { api, type Me, type Team } from "../api";
import { useViewer } from "../viewer";

/**
 * The current team's name; with more than one team, a native select laid over it switches
 * (`POST /v1/teams/switch`), then the app re-reads who it is and every screen reloads its data.
 */
export function TeamSwitcher({ me }: { me: Me }) {
  const { refresh } = useViewer();
  const [teams, setTeams] = useState<Team[]>([]);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    api.teams().then(
      (r) => setTeams(r.teams),
      () => setTeams([]),
    );
  }, [me.team.id]);

  const choose = async (teamId: string) => {
    if (teamId === me.team.id) return;
    setBusy(true);
    setError(null);
    try {
      await api.switchTeam(teamId);
      await refresh();
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setBusy(false);
    }
  };

  const switchable = teams.length > 1;
  return (
    <span class={switchable ? "team-switch switchable" : "team-switch"} title={error ?? undefined}>
      <span class="team-name" data-testid="team-name">
        {me.team.name}
      </span>
      {switchable && (
        <>
          <svg viewBox="0 0 24 24" width="16" height="16" aria-hidden="true">
            <path d="M7 10l5 5 5-5" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" />
          </svg>
          <select
            aria-label="Switch team"
            value={me.team.id}
            disabled={busy}
            onChange={(e) => void choose(e.currentTarget.value)}
            data-testid="team-switcher"
          >
            {teams.map((t) => (
              <option key={t.id} value={t.id} data-testid={`team-option-${t.id}`}>
                {t.name} ({t.role})
              </option>
            ))}
          </select>
        </>
      )}
      {error && (
        <span class="visually-hidden" role="alert" data-testid="team-switch-error">
          {error}
        </span>
      )}
    </span>
  );
}
