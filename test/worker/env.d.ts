import type { SessionGate } from "../../worker/gate/session-gate";
import type { Env as WorkerEnv } from "../../worker/types";

declare global {
  namespace Cloudflare {
    /** Tests reach into the gate's instance (`runInDurableObject`), so they see its class. */
    interface Env extends Omit<WorkerEnv, "SESSION_GATE"> {
      SESSION_GATE: DurableObjectNamespace<SessionGate>;
      TEST_MIGRATIONS: import("cloudflare:test").D1Migration[];
      /** invariants.test.ts: how many cases, from which seed (and `path`: one case to replay). */
      TAPGATE_FUZZ_RUNS?: string;
      TAPGATE_FUZZ_SEED?: string;
      TAPGATE_FUZZ_PATH?: string;
      /** The fake PagerDuty's control address (test/fakes/pagerduty.mjs). */
      FAKE_PAGERDUTY_URL: string;
    }
  }
}
