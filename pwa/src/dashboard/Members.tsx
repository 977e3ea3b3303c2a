/** Members and invites: list, invite by one-time link, change roles, remove; pending invites. */
import { useState } from "preact/hooks";
import { api, type CreatedInvite, type Invite, isAdmin, type Member, ROLES, type Role, roleRank } from "../api";
import { Banner } from "../components/Banner";
import { Field } from "../components/Field";
import { dateTime } from "../format";
import { useAction } from "../use-action";
import { useMe, useViewer } from "../viewer";
import {
  ActionsHead,
  ConfirmButton,
  CopyField,
  DataTable,
  Empty,
  LoadError,
  PageHead,
  RoleBadge,
  shortDate,
  useLoad,
} from "./ui";

const ROLE_HELP: Record<Role, string> = {
  owner: "everything, including the team itself",
  admin: "members, keys, policy and audit",
  approver: "decides requests",
  viewer: "sees requests, cannot decide",
};

export function Members() {
  const me = useMe();
  const admin = isAdmin(me?.role);
  const members = useLoad(() => api.members());
  const invites = useLoad(() => (admin ? api.invites() : Promise.resolve({ invites: [] as Invite[] })), [admin]);
  const list = [...(members.data?.members ?? [])].sort(
    (a, b) => roleRank(b.role) - roleRank(a.role) || a.name.localeCompare(b.name),
  );

  return (
    <section class="screen dash" data-testid="screen-members">
      <PageHead
        title="Members"
        sub={
          members.data
            ? `${list.length} member${list.length === 1 ? "" : "s"} in ${me?.team.name ?? "this team"}`
            : undefined
        }
      />
      {admin && <InviteForm onCreated={() => void invites.reload()} />}
      {members.error && (
        <LoadError error={members.error} testId="members-error" onRetry={() => void members.reload()} />
      )}
      {list.length > 0 && (
        <DataTable
          testId="members-table"
          head={
            <>
              <th>Name</th>
              <th>Email</th>
              <th>Role</th>
              <th>Joined</th>
              <ActionsHead />
            </>
          }
        >
          {list.map((m) => (
            <MemberRow
              key={m.userId}
              member={m}
              onChanged={() => void members.reload()}
              onRemoved={() =>
                members.setData((prev) =>
                  prev ? { members: prev.members.filter((x) => x.userId !== m.userId) } : prev,
                )
              }
            />
          ))}
        </DataTable>
      )}
      {admin && (
        <>
          <h2 class="section-title">Pending invites</h2>
          {invites.error && <LoadError error={invites.error} testId="invites-error" />}
          {invites.data && invites.data.invites.length === 0 && (
            <Empty title="No pending invites" testId="invites-empty">
              Links you create show here until they are used, revoked or expire (after 7 days).
            </Empty>
          )}
          {invites.data && invites.data.invites.length > 0 && (
            <DataTable
              testId="invites-table"
              head={
                <>
                  <th>Role</th>
                  <th>Sent to</th>
                  <th>Invited by</th>
                  <th>Created</th>
                  <th>Expires</th>
                  <ActionsHead />
                </>
              }
            >
              {invites.data.invites.map((i) => (
                <InviteRow
                  key={i.id}
                  invite={i}
                  members={members.data?.members ?? []}
                  onRevoked={() =>
                    invites.setData((prev) => (prev ? { invites: prev.invites.filter((x) => x.id !== i.id) } : prev))
                  }
                />
              ))}
            </DataTable>
          )}
        </>
      )}
    </section>
  );
}

function InviteForm({ onCreated }: { onCreated: () => void }) {
  const me = useMe();
  const grantable = ROLES.filter((r) => roleRank(r) <= roleRank(me?.role ?? "viewer"));
  const [role, setRole] = useState<Role>("approver");
  const [email, setEmail] = useState("");
  const [created, setCreated] = useState<CreatedInvite | null>(null);
  const { busy, error, run } = useAction();
  const submit = (e: Event) => {
    e.preventDefault();
    return run(async () => {
      setCreated(await api.createInvite(role, email.trim() || undefined));
      setEmail("");
      onCreated();
    });
  };
  return (
    <section class="panel invite-panel" data-testid="invite-panel">
      <h2>Invite someone</h2>
      <form class="inline-form" onSubmit={submit}>
        <Field label="Role" class="filter">
          <select value={role} onChange={(e) => setRole(e.currentTarget.value as Role)} data-testid="invite-role">
            {grantable.map((r) => (
              <option key={r} value={r}>
                {r} — {ROLE_HELP[r]}
              </option>
            ))}
          </select>
        </Field>
        <Field label="Email (optional: we also mail the link)" class="filter grow">
          <input
            type="email"
            value={email}
            placeholder="name@example.com"
            onInput={(e) => setEmail(e.currentTarget.value)}
            data-testid="invite-email"
          />
        </Field>
        <button type="submit" class="button primary compact" disabled={busy} data-testid="invite-create">
          {busy ? "Creating…" : "Create invite link"}
        </button>
      </form>
      {created && (
        <div class="created" data-testid="invite-created">
          <p class="small">
            One-time link for a new <strong>{created.role}</strong>, valid until {dateTime(created.expiresAt)}. Anyone
            with it can join, so send it privately.
          </p>
          <CopyField text={created.url} testId="invite-url" copyTestId="invite-copy" label="Copy link" />
        </div>
      )}
      {error && (
        <Banner tone="error" testId="invite-error">
          {error}
        </Banner>
      )}
    </section>
  );
}

function MemberRow({ member, onChanged, onRemoved }: { member: Member; onChanged: () => void; onRemoved: () => void }) {
  const me = useMe();
  const { refresh } = useViewer();
  const myRank = roleRank(me?.role ?? "viewer");
  const self = member.userId === me?.user.id;
  // An admin cannot touch an owner; nobody grants above their own role.
  const manageable = isAdmin(me?.role) && roleRank(member.role) <= myRank;
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  const changeRole = async (role: Role) => {
    setBusy(true);
    setError(null);
    try {
      await api.changeRole(member.userId, role);
      if (self) await refresh();
      onChanged();
    } catch (e) {
      setError((e as Error).message);
      onChanged();
    } finally {
      setBusy(false);
    }
  };
  const remove = async (close: () => void) => {
    setBusy(true);
    setError(null);
    try {
      await api.removeMember(member.userId);
      if (self) location.assign("/");
      else onRemoved();
    } catch (e) {
      setError((e as Error).message);
      close();
    } finally {
      setBusy(false);
    }
  };

  return (
    <tr data-testid={`member-row-${member.userId}`} data-role={member.role}>
      <td class="strong">
        {member.name}
        {self && <span class="tag">you</span>}
        {error && (
          <span class="row-error" role="alert" data-testid="member-error">
            {error}
          </span>
        )}
      </td>
      <td class="muted">{member.email}</td>
      <td>
        {manageable ? (
          <select
            class="role-select"
            value={member.role}
            disabled={busy}
            onChange={(e) => void changeRole(e.currentTarget.value as Role)}
            aria-label={`Role of ${member.name}`}
            data-testid="member-role"
          >
            {ROLES.filter((r) => roleRank(r) <= myRank).map((r) => (
              <option key={r} value={r}>
                {r}
              </option>
            ))}
          </select>
        ) : (
          <RoleBadge role={member.role} />
        )}
      </td>
      <td class="muted nowrap" title={dateTime(member.joinedAt)}>
        {shortDate(member.joinedAt)}
      </td>
      <td class="actions-col">
        {(manageable || self) && (
          <ConfirmButton
            label={self ? "Leave" : "Remove"}
            confirmLabel={self ? "Leave team" : "Remove"}
            title={
              self ? "Leave this team" : "Ends their sessions, revokes their API keys and denies their pending requests"
            }
            busy={busy}
            onConfirm={(close) => void remove(close)}
            testId="member-remove"
            confirmTestId="member-remove-confirm"
          />
        )}
      </td>
    </tr>
  );
}

function InviteRow({ invite, members, onRevoked }: { invite: Invite; members: Member[]; onRevoked: () => void }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const by = members.find((m) => m.userId === invite.createdBy.userId)?.name ?? (invite.createdBy.name || "—");
  const revoke = async () => {
    setBusy(true);
    try {
      await api.revokeInvite(invite.id);
      onRevoked();
    } catch (e) {
      setError((e as Error).message);
      setBusy(false);
    }
  };
  return (
    <tr data-testid={`invite-row-${invite.id}`}>
      <td>
        <RoleBadge role={invite.role} />
      </td>
      <td class="muted">{invite.email ?? "link only"}</td>
      <td>{by}</td>
      <td class="muted nowrap">{shortDate(invite.createdAt)}</td>
      <td class="muted nowrap">
        {shortDate(invite.expiresAt)}
        {error && (
          <span class="row-error" role="alert">
            {error}
          </span>
        )}
      </td>
      <td class="actions-col">
        <button
          type="button"
          class="button secondary compact"
          disabled={busy}
          onClick={revoke}
          data-testid="invite-revoke"
        >
          Revoke
        </button>
      </td>
    </tr>
  );
}
