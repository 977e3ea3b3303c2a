import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-pool-workers";
import { defineConfig } from "vitest/config";
import { localVars } from "./scripts/local-vars.mjs";
import { startFakeTelegram } from "./test/fakes/telegram-bot-api.mjs";

/** Telegram set up against the fake Bot API on 127.0.0.1 (test/fakes/telegram-bot-api.mjs). */
async function telegramVars(): Promise<Record<string, string>> {
  const token = "123456:TEST-bot-token";
  const fake = await startFakeTelegram(token);
  return { TELEGRAM_BOT_TOKEN: token, TELEGRAM_WEBHOOK_SECRET: "test-webhook-secret", TELEGRAM_API_URL: fake.url };
}

/** The property test's settings (`npm run fuzz`, a replay), handed to workerd as bindings. */
function fuzzVars(): Record<string, string> {
  const names = ["TAPGATE_FUZZ_RUNS", "TAPGATE_FUZZ_SEED", "TAPGATE_FUZZ_PATH"];
  return Object.fromEntries(names.flatMap((name) => (process.env[name] ? [[name, process.env[name]]] : [])));
}

export default defineConfig({
  test: {
    // Dev-outbox mail is printed to the console; show it only for failing tests.
    silent: "passed-only",
    globalSetup: ["./test/global-setup.ts"],
    projects: [
      {
        // Worker and Durable Object tests, inside workerd with real D1 (SQLite).
        plugins: [
          cloudflareTest(async () => ({
            wrangler: { configPath: "./wrangler.toml" },
            miniflare: {
              bindings: {
                ...localVars(),
                ...(await telegramVars()),
                TEST_MIGRATIONS: await readD1Migrations("./migrations"),
                ...fuzzVars(),
              },
            },
          })),
        ],
        test: {
          name: "worker",
          include: ["test/worker/**/*.test.ts"],
          setupFiles: ["./test/worker/setup.ts"],
        },
      },
      {
        // Unit tests of pure modules, beside them: plain Node, no workerd, no Worker.
        test: {
          name: "unit",
          include: ["worker/**/*.test.ts", "sdk/src/**/*.test.ts", "pwa/src/**/*.test.ts"],
          environment: "node",
        },
      },
      {
        // SDK tests: Node, against the Worker started by `wrangler dev` on a loopback port.
        test: {
          name: "sdk",
          include: ["test/sdk/**/*.test.ts"],
          environment: "node",
          testTimeout: 30_000,
          hookTimeout: 120_000,
        },
      },
      {
        // The phone app in real headless Chromium (playwright-core, Debian's chromium), against
        // `wrangler dev`; each file starts its own Worker and browser. Skips without Chromium,
        // unless TAPGATE_REQUIRE_BROWSER=1 (CI), where a missing browser fails.
        test: {
          name: "browser",
          include: ["test/browser/**/*.test.ts"],
          environment: "node",
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
