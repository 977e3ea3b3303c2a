/** Team roles, highest first: owner > admin > approver > viewer (defined in sdk/src/human/roles.ts). */
import { ADMIN_ROLES, DECIDER_ROLES, type Role, roleRank } from "../sdk/src/human/roles";

export { ADMIN_ROLES, DECIDER_ROLES };

/** Nobody grants a role above their own. */
export function mayGrant(actor: Role, role: Role): boolean {
  return roleRank(role) <= roleRank(actor);
}

/** An administrator may act on members up to their own rank, except that only owners touch owners. */
export function mayManage(actor: Role, target: Role): boolean {
  return ADMIN_ROLES.includes(actor) && (target !== "owner" || actor === "owner");
}
