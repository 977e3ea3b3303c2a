import { env, runInDurableObject } from "cloudflare:test";
import { expect, it } from "vitest";
import { askOnce, decide, gateStub, hubStub } from "./helpers";

it("counts", async () => {
  const { owner, agent, sessionId, approval } = await askOnce();
  // warm a first decision path once
  const log: string[] = [];
  const sqlProto = await runInDurableObject(gateStub(owner.teamId, sessionId), (_g, state) => Object.getPrototypeOf(state.storage.sql));
  const realExec = sqlProto.exec;
  sqlProto.exec = function (q: string, ...a: unknown[]) { log.push(`DO  ${q.replace(/\s+/g, " ").slice(0, 110)}`); return realExec.call(this, q, ...a); };
  const realPrep = env.DB.constructor.prototype.prepare;
  const D1 = Object.getPrototypeOf(env.DB);
  const rp = D1.prepare;
  D1.prepare = function (q: string) { log.push(`D1  ${q.replace(/\s+/g, " ").slice(0, 110)}`); return rp.call(this, q); };
  const r = await decide(owner, approval, "allow");
  expect(r.status).toBe(200);
  await agent.next();
  const n1 = log.length;
  log.push("---- after response; now alarm/flush");
  await runInDurableObject(gateStub(owner.teamId, sessionId), async (g) => { await (g as any).outbox.flush?.(); });
  sqlProto.exec = realExec; D1.prepare = rp;
  console.log(`decision statements: ${n1}\n` + log.join("\n"));
  void realPrep; void hubStub;
});
