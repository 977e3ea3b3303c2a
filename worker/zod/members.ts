/**
 * Classic zod's members, as `zod` exports them, minus what the Worker never calls and that only
 * the namespace object kept in its bundle: the 40-odd error-message locales (about 350 KB of
 * source; English is still installed by zod itself) and `fromJSONSchema`. The local exports
 * below shadow the star export of the same names, so the bundler drops those modules.
 *
 * Owns: that list. Does not own: any schema (`sdk/src/**`). Bundled through `index.ts`.
 */
export * from "../../node_modules/zod/v4/classic/external.js";

/** Not in the Worker's bundle: zod's messages stay English (`sdk/src/errors.ts` sets none other). */
export const locales = undefined;
/** Not in the Worker's bundle: nothing converts JSON Schema into zod at run time. */
export const fromJSONSchema = undefined;
/** Not in the Worker's bundle: `z.core` (schemas reach zod's core directly; its namespace held the locales too). */
export const core = undefined;
/**
 * Not in the Worker's bundle: `z.compile` and its kin (zod's ahead-of-time parsers, about 60 KB
 * of source); every schema here parses with the runtime parser.
 */
export const compile = undefined;
export const withParser = undefined;
export const INVALID = undefined;
export const ZodCompileAsyncError = undefined;
export const ZodCompileUnsupportedError = undefined;
