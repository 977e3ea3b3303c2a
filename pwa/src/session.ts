/** Who is signed in, shared by every screen. */
import { createContext } from "preact";
import { useContext } from "preact/hooks";
import type { Me } from "./api";

export type Session =
  | { status: "loading" }
  | { status: "signed-out" }
  | { status: "signed-in"; me: Me }
  /** The server was unreachable: we cannot tell, so the shell renders and says "offline". */
  | { status: "offline" };

export interface SessionApi {
  session: Session;
  /** Re-reads `/v1/me` (after signing in or out) and resolves once the app knows. */
  refresh: () => Promise<void>;
}

export const SessionContext = createContext<SessionApi>({ session: { status: "loading" }, refresh: async () => {} });

export function useSession(): SessionApi {
  return useContext(SessionContext);
}

/** The signed-in user, for screens that only render when there is one. */
export function useMe(): Me | null {
  const { session } = useSession();
  return session.status === "signed-in" ? session.me : null;
}
