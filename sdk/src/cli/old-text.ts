/**
 * Reading the file a `Write` would overwrite, for the card's diff, and only where the rules of
 * `claude/sensitive-paths.ts` allow: the path as given and its real path (symlinks resolved) must
 * both be inside the session's real working directory and look like no secret. Anything else is
 * withheld, with the reason the card shows; nothing is read before both checks pass.
 */
import { closeSync, constants, fstatSync, lstatSync, openSync, readFileSync, realpathSync } from "node:fs";
import { homedir } from "node:os";
import { resolve } from "node:path";
import type { ReadExisting } from "../claude/hook.js";
import { NO_CWD, oldTextVerdict } from "../claude/sensitive-paths.js";

/** A `Write` over a bigger file is shown without its old text rather than overflowing the 256 KiB frame. */
export const MAX_OLD_TEXT_BYTES = 64 * 1024;

const withheld = (reason: string) => ({ withheld: reason });

/** Reads old text for a session in `cwd` (the hook input's), with `home` for the `~/…` rules. */
export function oldTextReader(cwd: string | undefined, home = homedir()): ReadExisting {
  return (path) => {
    if (!cwd) return withheld(NO_CWD);
    const given = resolve(cwd, path);
    const asGiven = oldTextVerdict(given, resolve(cwd), home);
    if (!asGiven.show) return withheld(asGiven.reason);
    const realCwd = realPath(cwd);
    const real = realPath(given);
    if (!realCwd) return withheld("the session's working directory could not be resolved");
    if (real === null) {
      // A new file, nothing to read, unless a symlink stands there: writing follows it, so say nothing about it.
      return isSymlink(given) ? withheld("the path is a symlink to a missing file") : null;
    }
    if (real === undefined) return withheld("the file could not be read");
    const resolved = oldTextVerdict(real, realCwd, home);
    if (!resolved.show) return withheld(`${resolved.reason} (after following symlinks)`);
    return readRegularFile(real);
  };
}

/** The real path; null when nothing is there; undefined when it cannot be resolved. */
function realPath(path: string): string | null | undefined {
  try {
    return realpathSync(path);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "ENOENT" ? null : undefined;
  }
}

function isSymlink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}

/** The file's text; O_NOFOLLOW so a symlink swapped in after the checks is refused, not followed. */
function readRegularFile(real: string): string | { withheld: string } {
  let fd: number;
  try {
    fd = openSync(real, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return withheld("the file could not be read");
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) return withheld("it is not a regular file");
    // Another name for the same file could be anywhere (`ln ~/.ssh/id_rsa notes.txt`).
    if (stat.nlink > 1) return withheld("the file has other hard links");
    if (stat.size > MAX_OLD_TEXT_BYTES) return withheld(`the file is larger than ${MAX_OLD_TEXT_BYTES / 1024} KiB`);
    return readFileSync(fd, "utf8");
  } catch {
    return withheld("the file could not be read");
  } finally {
    closeSync(fd);
  }
}
