/** Who is signed in, shared by every screen. */
import { createContext } from "preact";
import { useContext } from "preact/hooks";
import type { Me } from "./api";

export type Viewer =
  | { status: "loading" }
  | { status: "signed-out" }
  | { status: "signed-in"; me: Me }
  /** The server was unreachable: we cannot tell, so the shell renders and says "offline". */
  | { status: "offline" };

export interface ViewerApi {
  viewer: Viewer;
  /** Re-reads `/v1/me` (after signing in or out) and resolves once the app knows. */
  refresh: () => Promise<void>;
}

export const ViewerContext = createContext<ViewerApi>({ viewer: { status: "loading" }, refresh: async () => {} });

export function useViewer(): ViewerApi {
  return useContext(ViewerContext);
}

/** The signed-in user, for screens that only render when there is one. */
export function useMe(): Me | null {
  const { viewer } = useViewer();
  return viewer.status === "signed-in" ? viewer.me : null;
}
