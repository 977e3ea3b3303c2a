/**
 * The `zod` the Worker's bundle uses (`[alias]` in wrangler.toml): the same classic zod, with
 * the same `z` namespace and named exports, built from `members.ts` so the namespace object
 * holds only what the Worker can reach. Type-checking and every other build (SDK, PWA, tests
 * under Node) still import the real `zod`.
 *
 * Owns: the shape `import { z } from "zod"` sees in the bundle. Does not own: any schema.
 */
import * as z from "./members";

export * from "./members";
export { z, z as default };
