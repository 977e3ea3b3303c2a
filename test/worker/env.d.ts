import type { SessionGate } from "../../worker/gate/session-gate";
import type { Env as WorkerEnv } from "../../worker/types";

declare global {
  namespace Cloudflare {
    /** Tests reach into the gate's instance (`runInDurableObject`), so they see its class. */
    interface Env extends Omit<WorkerEnv, "SESSION_GATE"> {
      SESSION_GATE: DurableObjectNamespace<SessionGate>;
      TEST_MIGRATIONS: import("cloudflare:test").D1Migration[];
    }
  }
}
