/** Team roles, highest first: owner > admin > approver > viewer. */
import type { Role } from "./types";

const RANK: Record<Role, number> = { owner: 3, admin: 2, approver: 1, viewer: 0 };

/** Who may administer the team: invite, change roles, remove members, see every key, set policy. */
export const ADMIN_ROLES: Role[] = ["owner", "admin"];
export const DECIDER_ROLES: Role[] = ["owner", "admin", "approver"];

/** Nobody grants a role above their own. */
export function mayGrant(actor: Role, role: Role): boolean {
  return RANK[role] <= RANK[actor];
}

/** An administrator may act on members up to their own rank, except that only owners touch owners. */
export function mayManage(actor: Role, target: Role): boolean {
  return ADMIN_ROLES.includes(actor) && (target !== "owner" || actor === "owner");
}
