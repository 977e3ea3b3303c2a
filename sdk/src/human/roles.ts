/** Team roles, highest first: owner > admin > approver > viewer. The one home of `Role`. */
import { z } from "zod";

export const ROLES = ["owner", "admin", "approver", "viewer"] as const;
export const roleSchema = z.enum(ROLES);
export type Role = z.infer<typeof roleSchema>;

/** Who may administer the team: invite, change roles, remove members, see every key, set policy. */
export const ADMIN_ROLES: readonly Role[] = ["owner", "admin"];
/** Who may decide requests. */
export const DECIDER_ROLES: readonly Role[] = ["owner", "admin", "approver"];

/** owner 4 > admin 3 > approver 2 > viewer 1; anything else 0. */
export function roleRank(role: string | undefined): number {
  const i = ROLES.indexOf(role as Role);
  return i < 0 ? 0 : ROLES.length - i;
}

export const isAdminRole = (role: string | undefined): boolean => ADMIN_ROLES.includes(role as Role);
export const isDeciderRole = (role: string | undefined): boolean => DECIDER_ROLES.includes(role as Role);
