/**
 * A minimal agent: asks permission to run one command and prints the answer.
 *
 *   npm run build:sdk
 *   TAPGATE_API_KEY=tg_… node examples/ask.mjs [command]
 *
 * It waits until someone decides (GET /v1/approvals?state=pending, then POST …/decision).
 */
import { Tapgate } from "tapgate";

const command = process.argv[2] ?? "git push --force";
const gate = new Tapgate(); // TAPGATE_URL (default http://localhost:8787) and TAPGATE_API_KEY
const session = await gate.session(`example-${Date.now()}`, { title: "README example", agent: { name: "ask.mjs" } });
console.log(`asking to run: ${command}`);
const answer = await session.requestPermission({
  sessionId: session.id,
  toolCall: { toolCallId: "call-1", title: `Run ${command}`, kind: "execute", rawInput: { command } },
  options: [
    { optionId: "allow", name: "Allow once", kind: "allow_once" },
    { optionId: "deny", name: "Deny", kind: "reject_once" },
  ],
});
console.log(JSON.stringify(answer));
gate.close();
