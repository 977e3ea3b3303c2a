import { randomBytes } from "node:crypto";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-pool-workers";
import { defineConfig } from "vitest/config";
import { localVars } from "./scripts/local-vars.mjs";
import { startFakePagerDuty } from "./test/fakes/pagerduty.mjs";
import { startFakeSlack } from "./test/fakes/slack";
import { startFakeTelegram } from "./test/fakes/telegram-bot-api.mjs";

/** One fake PagerDuty for the whole run (outside the machine, so faked: on loopback). */
let fakePagerDuty: Promise<{ url: string }> | undefined;

/** Outside channels as the workerd tests see them: PagerDuty set up, pointed at the fake. */
async function channelVars(): Promise<Record<string, string>> {
  fakePagerDuty ??= startFakePagerDuty();
  const { url } = await fakePagerDuty;
  return {
    CHANNEL_SECRET_KEY: "test channel secret key, not a real one",
    PAGERDUTY_EVENTS_URL: `${url}/v2/enqueue`,
    FAKE_PAGERDUTY_URL: url,
  };
}

/** Slack's settings for the workerd tests, against the fake Slack on 127.0.0.1 (test/fakes/slack.ts). */
async function slackVars(): Promise<Record<string, string>> {
  const client = { clientId: "1234.5678", clientSecret: randomBytes(16).toString("hex") };
  const fake = await startFakeSlack(client);
  return {
    SLACK_CLIENT_ID: client.clientId,
    SLACK_CLIENT_SECRET: client.clientSecret,
    SLACK_SIGNING_SECRET: randomBytes(16).toString("hex"),
    SLACK_API_URL: `${fake.url}/api`,
  };
}

/** One fake Telegram Bot API for the whole run (test/fakes/telegram-bot-api.mjs, on 127.0.0.1). */
const TELEGRAM_TOKEN = "123456:TEST-bot-token";
let fakeTelegram: Promise<{ url: string }> | undefined;

/** Telegram set up as the workerd tests see it: the bot's settings, its Bot API the fake. */
async function telegramVars(): Promise<Record<string, string>> {
  fakeTelegram ??= startFakeTelegram(TELEGRAM_TOKEN);
  const { url } = await fakeTelegram;
  return { TELEGRAM_BOT_TOKEN: TELEGRAM_TOKEN, TELEGRAM_WEBHOOK_SECRET: "test-webhook-secret", TELEGRAM_API_URL: url };
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
                ...(await slackVars()),
                ...(await telegramVars()),
                TEST_MIGRATIONS: await readD1Migrations("./migrations"),
                ...(await channelVars()),
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
