import { createHash } from "node:crypto";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { build, defineConfig, type Plugin } from "vite";

const root = import.meta.dirname;
const outDir = join(root, "dist");
const publicDir = join(root, "public");
/** Served, but not part of the shell: the static-assets header rules. */
const NOT_PRECACHED = new Set(["_headers"]);
const SERVICE_WORKER = "sw.js";

/**
 * The service worker (src/sw/sw.ts) is built after the app, on its own, into one classic script
 * at /sw.js. In front of it go the list of the app's emitted files (so the first visit already
 * precaches the whole shell) and a version derived from them (so a new deploy installs a new
 * service worker, which drops the old caches).
 */
function serviceWorker(): Plugin {
  let files: string[] = [];
  return {
    name: "tapgate-service-worker",
    apply: "build",
    generateBundle(_options, bundle) {
      files = Object.keys(bundle).filter((f) => !f.endsWith(".map"));
    },
    async closeBundle() {
      // A failed build closes too: build nothing more, so the real error is the one reported.
      if (files.length === 0) return;
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
      await build({
        configFile: false,
        root,
        logLevel: "warn",
        publicDir: false,
        build: {
          outDir,
          emptyOutDir: false,
          target: "es2022",
          lib: { entry: join(root, "src", "sw", "sw.ts"), formats: ["iife"], name: "tapgateServiceWorker" },
          rolldownOptions: { output: { entryFileNames: SERVICE_WORKER } },
        },
      });
      const swPath = join(outDir, SERVICE_WORKER);
      const header = `const VERSION = ${JSON.stringify(version)};\nconst PRECACHE = ${JSON.stringify(urls)};\n`;
      writeFileSync(swPath, header + readFileSync(swPath, "utf8"));
    },
  };
}

export default defineConfig({
  root,
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  build: { outDir, emptyOutDir: true, target: "es2022" },
  plugins: [serviceWorker()],
});
