/** The hook's file reads on a real file system: symlinks are followed before the checks, never after. */
import { linkSync, mkdirSync, mkdtempSync, realpathSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { MAX_OLD_TEXT_BYTES, oldTextReader } from "./old-text.js";

function sandbox() {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "tapgate-old-text-")));
  const cwd = join(root, "project");
  const home = join(root, "home");
  const outside = join(root, "outside");
  for (const dir of [cwd, home, join(home, ".ssh"), outside]) mkdirSync(dir, { recursive: true });
  writeFileSync(join(cwd, "a.txt"), "inside\n");
  writeFileSync(join(outside, "notes.txt"), "outside secret\n");
  writeFileSync(join(home, ".ssh", "id_ed25519"), "PRIVATE KEY\n");
  return { root, cwd, home, outside };
}

describe("oldTextReader", () => {
  it("reads a file inside the working directory; a missing one is a new file", () => {
    const s = sandbox();
    const read = oldTextReader(s.cwd, s.home);
    expect(read(join(s.cwd, "a.txt"))).toBe("inside\n");
    expect(read("a.txt")).toBe("inside\n");
    expect(read(join(s.cwd, "new.txt"))).toBeNull();
  });

  it("withholds files outside the working directory, also through .. and symlinks", () => {
    const s = sandbox();
    symlinkSync(join(s.outside, "notes.txt"), join(s.cwd, "link.txt"));
    symlinkSync(s.outside, join(s.cwd, "linked-dir"));
    symlinkSync(join(s.outside, "missing.txt"), join(s.cwd, "dangling.txt"));
    const read = oldTextReader(s.cwd, s.home);
    for (const path of [
      join(s.outside, "notes.txt"),
      join(s.cwd, "..", "outside", "notes.txt"),
      join(s.cwd, "link.txt"),
      join(s.cwd, "linked-dir", "notes.txt"),
      join(s.cwd, "dangling.txt"),
    ]) {
      const answer = read(path);
      expect(answer, path).toEqual({ withheld: expect.any(String) });
      expect(JSON.stringify(answer)).not.toContain("outside secret");
    }
    expect(read(join(s.cwd, "link.txt"))).toEqual({
      withheld: "outside the session's working directory (after following symlinks)",
    });
  });

  it("withholds secrets inside the working directory, also behind an innocent name", () => {
    const s = sandbox();
    writeFileSync(join(s.cwd, ".env"), "TOKEN=1\n");
    symlinkSync(join(s.cwd, ".env"), join(s.cwd, "settings.txt"));
    const read = oldTextReader(s.cwd, s.home);
    expect(read(join(s.cwd, ".env"))).toEqual({ withheld: "the path looks like it holds secrets" });
    expect(read(join(s.cwd, "settings.txt"))).toEqual({
      withheld: "the path looks like it holds secrets (after following symlinks)",
    });
    // A hard link has no "real path" to check: another name for the file may be anywhere.
    linkSync(join(s.home, ".ssh", "id_ed25519"), join(s.cwd, "notes.txt"));
    expect(read(join(s.cwd, "notes.txt"))).toEqual({ withheld: "the file has other hard links" });
    // A session started in the home directory still never reads ~/.ssh.
    expect(oldTextReader(s.home, s.home)(join(s.home, ".ssh", "id_ed25519"))).toEqual({
      withheld: "the path looks like it holds secrets",
    });
  });

  it("withholds without a working directory, for big files and for what is not a file", () => {
    const s = sandbox();
    writeFileSync(join(s.cwd, "big.txt"), "x".repeat(MAX_OLD_TEXT_BYTES + 1));
    expect(oldTextReader(undefined, s.home)(join(s.cwd, "a.txt"))).toEqual({
      withheld: "the hook was given no working directory",
    });
    const read = oldTextReader(s.cwd, s.home);
    expect(read(join(s.cwd, "big.txt"))).toEqual({ withheld: "the file is larger than 64 KiB" });
    mkdirSync(join(s.cwd, "dir"));
    expect(read(join(s.cwd, "dir"))).toEqual({ withheld: "it is not a regular file" });
  });
});
