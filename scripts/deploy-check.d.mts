/** The settings a deployment needs, each with how to set it. */
export const REQUIRED_SETTINGS: Record<"APP_ORIGIN" | "RP_ID", string>;
/** What would make the deployment misbehave, each line with its fix; empty when nothing would. */
export function deployProblems(settings: { vars: Record<string, unknown>; secretNames: string[] }): string[];
