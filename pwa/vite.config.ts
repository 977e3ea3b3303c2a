import { createHash } from "node:crypto";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { defineConfig, type Plugin } from "vite";

const root = import.meta.dirname;
const outDir = join(root, "dist");
const publicDir = join(root, "public");
/** Served, but not part of the shell: the worker itself, and the static-assets header rules. */
const NOT_PRECACHED = new Set(["sw.js", "_headers"]);

/**
 * public/sw.js is copied verbatim; after the build we write into it the list of emitted files
 * (so the first visit already precaches the whole shell) and a version derived from them (so a
 * new deploy installs a new service worker, which drops the old caches).
 */
function precacheList(): Plugin {
  let files: string[] = [];
  return {
    name: "tapgate-precache",
    apply: "build",
    generateBundle(_options, bundle) {
      files = Object.keys(bundle).filter((f) => !f.endsWith(".map"));
    },
    closeBundle() {
      // A failed build closes too: leave sw.js alone so the real error is the one reported.
      if (files.length === 0) return;
      const swPath = join(outDir, "sw.js");
      const publicFiles = readdirSync(publicDir, { recursive: true, withFileTypes: true })
        .filter((e) => e.isFile())
        .map((e) => relative(publicDir, join(e.parentPath, e.name)).split("\\").join("/"))
        .filter((f) => !NOT_PRECACHED.has(f));
      const shell = [...new Set(["index.html", ...files, ...publicFiles])].sort();
      const hash = createHash("sha256");
      for (const f of shell) hash.update(f).update(readFileSync(join(outDir, f)));
      const version = hash.digest("hex").slice(0, 12);
      // The app is cached as "/": static assets redirect /index.html there, and a service worker
      // may not answer a navigation with a redirected response.
      const urls = shell.map((f) => (f === "index.html" ? "/" : `/${f}`));
      const sw = readFileSync(swPath, "utf8");
      const out = sw
        .replace('"__TAPGATE_VERSION__"', JSON.stringify(version))
        .replace("/* __TAPGATE_PRECACHE__ */ []", JSON.stringify(urls));
      if (out === sw) throw new Error("sw.js lost its build placeholders");
      writeFileSync(swPath, out);
    },
  };
}

export default defineConfig({
  root,
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  build: { outDir, emptyOutDir: true, target: "es2022" },
  plugins: [precacheList()],
});
