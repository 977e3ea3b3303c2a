/**
 * The outside channels a team can reach people by, as the policy's escalation steps and the
 * Channels screen name them. Shared by the Worker, the PWA and the tests.
 */
import { z } from "zod";

export const CHANNELS = ["slack", "telegram", "pagerduty"] as const;
export const channelSchema = z.enum(CHANNELS);
export type Channel = z.infer<typeof channelSchema>;
