/**
 * Which files `tapgate claude-hook` may read to show a `Write`'s old text on the card. The card
 * goes to a server and to every approver's phone, so the hook reads only files inside the
 * session's working directory that do not look like secrets. Pure: paths in, verdict out; the
 * reading (and resolving symlinks first) is `cli/old-text.ts`.
 */
import { isAbsolute, join, relative } from "node:path";

/** Directories whose every file is a secret, wherever they are (a `cwd` of `~` contains `~/.ssh`). */
const SECRET_DIRS = new Set([".ssh", ".aws", ".gnupg", ".kube", ".docker", ".azure", ".git", ".password-store"]);

/** Secret directories under `~/.config`. */
const SECRET_CONFIG_DIRS = new Set(["gcloud", "gh", "tapgate", "op", "hub"]);

/** File names (lower-cased) that tend to hold secrets. `*key*` catches `api_key.txt`, `keystore.jks`, `id_rsa.key`. */
const SECRET_FILES: RegExp[] = [
  /^\.env$/,
  /^\.env\./,
  /\.env(rc)?$/,
  /key/,
  /secret/,
  /(^|[._-])tokens?($|[._-])/,
  /passw/,
  /^credentials/,
  /^id_(rsa|dsa|ecdsa|ed25519)/,
  /\.(pem|p12|pfx|jks|kdbx|asc|gpg|ovpn)$/,
  /^\.(npmrc|netrc|pypirc|pgpass|git-credentials|htpasswd|dockercfg)$/,
  /^_netrc$/,
];

export type OldTextVerdict = { show: true } | { show: false; reason: string };

export const OUTSIDE_CWD = "outside the session's working directory";
export const SENSITIVE = "the path looks like it holds secrets";
export const NO_CWD = "the hook was given no working directory";

/**
 * Whether the file at `path` may be read, given the session's `cwd` and the user's `home`. Call
 * it with the path as given and again with its real path (symlinks resolved): both must pass.
 */
export function oldTextVerdict(path: string, cwd: string | undefined, home: string): OldTextVerdict {
  if (!cwd) return { show: false, reason: NO_CWD };
  if (!isInside(path, cwd)) return { show: false, reason: OUTSIDE_CWD };
  if (isSensitive(path, home)) return { show: false, reason: SENSITIVE };
  return { show: true };
}

/** `path` is `dir` or below it (both absolute; `..` segments already resolved). */
export function isInside(path: string, dir: string): boolean {
  if (!isAbsolute(path) || !isAbsolute(dir)) return false;
  const rel = relative(dir, path);
  return rel === "" || (!rel.startsWith("..") && !isAbsolute(rel));
}

/** Whether any part of `path` names a secret directory or its file name looks like a secret. */
export function isSensitive(path: string, home: string): boolean {
  const parts = segments(path);
  const name = (parts.at(-1) ?? "").toLowerCase();
  if (parts.slice(0, -1).some((p) => SECRET_DIRS.has(p.toLowerCase()))) return true;
  if (SECRET_FILES.some((re) => re.test(name))) return true;
  const config = home ? relative(join(home, ".config"), path) : "..";
  const [first = ""] = segments(config);
  return !config.startsWith("..") && !isAbsolute(config) && SECRET_CONFIG_DIRS.has(first.toLowerCase());
}

// Splitting on both slashes only ever finds more parts to check.
const segments = (path: string) => path.split(/[\\/]/).filter(Boolean);
