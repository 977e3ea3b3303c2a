import { useEffect, useState } from "preact/hooks";
import type { ApiError } from "./api";

export interface Paged<T> {
  items: T[];
  setItems: (update: (prev: T[]) => T[]) => void;
  cursor: string | null;
  loading: boolean;
  error: ApiError | null;
  /** The first page (`null`) or the page after `from`; a later page is appended. */
  load: (from: string | null) => Promise<void>;
}

/**
 * A cursor-paginated list: loads the first page on mount and whenever `deps` change. With `idOf`, a
 * later page leaves out items already shown (new ones may have pushed them down a page).
 */
export function usePaged<T>(
  fetchPage: (cursor: string | null) => Promise<{ items: T[]; cursor: string | null }>,
  deps: unknown[] = [],
  idOf?: (item: T) => string,
): Paged<T> {
  const [items, setItems] = useState<T[]>([]);
  const [cursor, setCursor] = useState<string | null>(null);
  const [loading, setLoading] = useState(true);
  const [error, setError] = useState<ApiError | null>(null);
  const load = async (from: string | null) => {
    setLoading(true);
    try {
      const page = await fetchPage(from);
      setItems((prev) =>
        !from
          ? page.items
          : [...prev, ...(idOf ? page.items.filter((a) => !prev.some((p) => idOf(p) === idOf(a))) : page.items)],
      );
      setCursor(page.cursor);
      setError(null);
    } catch (e) {
      setError(e as ApiError);
    } finally {
      setLoading(false);
    }
  };
  // The caller names what the first page depends on.
  useEffect(() => void load(null), deps);
  return { items, setItems: (fn) => setItems((prev) => fn(prev)), cursor, loading, error, load };
}
