import { describe, expect, it } from "vitest";
import { DEFAULT_HIGH_RISK } from "../human/policy.js";
import { requestFacts } from "../request-match.js";
import { isHighRisk } from "../risk-match.js";
import { readShell } from "./commands.js";

const session = { title: null, agent: null, host: null, cwd: null };
/** The reading of a line that is read as opaque text, whole. */
const opaqueWhole = (line: string) => ({ commands: [], opaque: [line], writes: [], chosenAtRunTime: [] });
const highRisk = (command: string) =>
  isHighRisk(
    DEFAULT_HIGH_RISK,
    requestFacts({ toolCall: { toolCallId: "t", kind: "execute", title: "Bash", rawInput: { command } }, session }),
  );

/** Commands the default patterns name, each reshaped so that splitting on `&& || ; |` and newlines missed it. */
const RESHAPED = [
  "true & rm -rf ~",
  "sleep 1 & git push --force",
  "bash -c 'git push --force'",
  'sh -c "rm -rf /"',
  "zsh -lc 'git push -f origin main'",
  "bash -o pipefail -c 'kubectl delete ns prod'",
  'eval "git push -f"',
  "echo $(rm -rf /)",
  'x="$(git reset --hard HEAD~3)"',
  "echo `git push -f`",
  'ls > "$(terraform destroy -auto-approve)"',
  "( rm -rf build )",
  "{ rm -rf build; }",
  "if true; then git push --force; fi",
  "for d in a b; do rm -rf $d; done",
  "env A=1 git push -f",
  "env -i PATH=/bin sudo rm -rf /var",
  "sudo -u deploy git push --force",
  "find . -name '*.tmp' | xargs -0 rm -rf",
  "find . -type d -exec rm -rf {} ;",
  "nohup git push -f &",
  "time git push -f",
  "command git push --force",
  "exec git push -f",
  "nice -n 10 terraform destroy",
  "timeout 30 kubectl delete pod web-1",
  "/usr/bin/git push -f",
  "/bin/rm -rf /tmp/x",
  'git push "--force"',
  "git push '-f' origin main",
  "g\\it push -f",
  "git  push  -f",
  "git push origin +main",
  "git push origin +HEAD:main",
  "git push -uf origin main",
  "git push --mirror backup",
  "git -C /repo push --force",
  "git -c core.sshCommand=ssh push -f",
  "rm -r -v -f build",
  "rm -vrf build",
  "rm --recursive --force build",
  "kubectl -n prod delete deployment web",
  "terraform -chdir=infra destroy",
  "ssh prod 'kubectl delete ns x'",
  "su - root -c 'rm -rf /srv'",
  "watch -n 5 'git push -f'",
  "env -S 'git push -f'",
  "bash -c \"sh -c 'git push --force'\"",
  'psql -c "DROP\n  TABLE users"',
  // Bash runs a substitution inside `$((…))`: the line is opaque, a pattern anywhere in it is enough.
  "x=$(( `git push -f` ))",
  "n=$(( $(kubectl delete ns prod | wc -l) + 1 ))",
  "bash -c 'echo $(( `rm -rf /` ))'",
  // A substitution inside `${…}` (the parser drops the word): the line is opaque too.
  // biome-ignore lint/suspicious/noTemplateCurlyInString: shell text, not a template
  'echo "${x:-$(git push -f)}"',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: shell text, not a template
  "echo ${x:-`rm -rf /`}",
  "coproc git push -f",
  // A program chosen at run time may be any: its arguments are matched.
  "$GIT push -f",
  // biome-ignore lint/suspicious/noTemplateCurlyInString: shell text, not a template
  "${X:-git} push --force origin main",
  "$(which git) push -f",
  "`which rm` -rf /",
  "sudo $TOOL -rf /srv",
  // A shell running its input, or an interpreter's inline code: a pattern anywhere in it is enough.
  'echo "git push -f" | sh',
  "printf 'rm -rf /srv' | bash -s",
  "echo 'kubectl delete ns prod' | ssh -p 22 bastion",
  "python3 -c 'import os; os.system(\"git push -f\")'",
  "perl -e 'system(q(rm -rf /srv))'",
  'node -e \'require("child_process").execSync("git push --force")\'',
  "python3 -Bc 'import os; os.system(\"rm -rf /srv\")'",
  "perl -ne 'system(q(git push -f))' list.txt",
  "echo 'import os; os.system(\"git push -f\")' | python3",
  "terraform apply -destroy",
  "terraform -chdir=infra apply -auto-approve -destroy",
  // Not parsed (process substitution): a pattern anywhere in it is enough.
  "diff <(git push -f) x",
  'diff <(ls) <(git push "--force")',
];

/** Commands that merely look alike: still normal. */
const NORMAL = [
  "git push origin main",
  "git push --follow-tags origin main",
  "echo 'git push --force is dangerous'",
  "grep -rn 'rm -rf' .",
  "rm -r build",
  "rm -f build.log",
  "git status && git diff",
  "bash ./scripts/deploy.sh",
  "kubectl get pods -n prod",
  "terraform plan",
  "sudo apt-get update",
  "ls -la | grep rm",
  // biome-ignore lint/suspicious/noTemplateCurlyInString: shell text, not a template
  'echo "${HOME}" && git status',
  '"$PYTHON" -m pytest',
  "$EDITOR notes.md",
  "python3 -m pytest -k 'push -f'",
  "bash scripts/push-force.sh",
  "echo ls | sh -c cat",
  "terraform plan -destroy",
];

describe("high-risk matching sees through the shape of a command", () => {
  it("has a table of at least 30 reshaped commands", () => {
    expect(RESHAPED.length).toBeGreaterThanOrEqual(30);
  });

  it.each(RESHAPED)("%j is high-risk under the default patterns", (command) => {
    expect(highRisk(command)).toBe(true);
  });

  it.each(NORMAL)("%j stays normal", (command) => {
    expect(highRisk(command)).toBe(false);
  });
});

describe("readShell", () => {
  it("lists every simple command with quotes removed and programs by name", () => {
    expect(readShell('cd /repo && /usr/bin/git  push "origin" main & echo $(date)')).toEqual({
      commands: ["cd /repo", "git push origin main", "echo $(date)", "date"],
      opaque: [],
      writes: [],
      chosenAtRunTime: [],
    });
  });

  it("reads output redirections and tee as writes, not file descriptors", () => {
    expect(readShell("echo k >> ~/.ssh/authorized_keys 2>&1; echo x | tee -a .bashrc").writes).toEqual([
      "~/.ssh/authorized_keys",
      ".bashrc",
    ]);
  });

  it("keeps what it cannot parse, or what nests too deep, as opaque text", () => {
    expect(readShell("diff <(ls) x")).toEqual(opaqueWhole("diff <(ls) x"));
    expect(readShell("bash -c 'echo (' ").opaque).toEqual(["echo ("]);
    const deep = `${"sudo ".repeat(20)}git push -f`;
    expect(readShell(deep)).toEqual(opaqueWhole(deep));
    expect(highRisk(deep)).toBe(true);
    const nested = `${"(".repeat(1_000)}git push -f${")".repeat(1_000)}`;
    expect(readShell(nested)).toEqual(opaqueWhole(nested));
    expect(highRisk(nested)).toBe(true);
    const shallow = `${"(".repeat(30)}git push -f${")".repeat(30)}`;
    expect(readShell(shallow).commands).toContain("git push -f");
  });

  it("reads a script holding a $((…)) as opaque: bash runs the commands inside one", () => {
    expect(readShell("x=$(( `git push -f` ))")).toEqual(opaqueWhole("x=$(( `git push -f` ))"));
    expect(readShell("echo $((1 + 2))")).toEqual(opaqueWhole("echo $((1 + 2))"));
    // Only the script that holds it: the outer command is still read.
    expect(readShell("bash -c 'echo $((2 * 3))' > out.txt")).toEqual({
      commands: ["bash -c echo $((2 * 3))"],
      opaque: ["echo $((2 * 3))"],
      writes: ["out.txt"],
      chosenAtRunTime: [],
    });
  });

  it("reads a program named like an object's own property as any other program", () => {
    expect(readShell("constructor -c x && toString -e y")).toEqual({
      commands: ["constructor -c x", "toString -e y"],
      opaque: [],
      writes: [],
      chosenAtRunTime: [],
    });
  });

  it("keeps the arguments of a command whose program is chosen at run time", () => {
    expect(readShell("$GIT push -f && /opt/$TOOL x").chosenAtRunTime).toEqual(["push -f", "x"]);
    expect(readShell("$HOME/bin/deploy --dry-run").chosenAtRunTime).toEqual([]);
  });

  it("reads a shell that runs its input as making its script opaque, and an interpreter's inline code as opaque", () => {
    expect(readShell("cat steps.txt | sh").opaque).toEqual(["cat steps.txt | sh"]);
    expect(readShell("bash -c 'echo x | bash -s -- a' && ls").opaque).toEqual(["echo x | bash -s -- a"]);
    expect(readShell("python3.12 -X dev -c 'print(1)' && perl -Mstrict -e1").opaque).toEqual(["print(1)", "1"]);
    expect(readShell("node --eval='go()' file.js").opaque).toEqual(["go()"]);
    expect(readShell("python3 script.py -c x").opaque).toEqual([]);
    expect(readShell("python3 -m pytest -c setup.cfg").opaque).toEqual([]);
    expect(readShell("perl -I lib -wle 'print 1' x").opaque).toEqual(["print 1"]);
    expect(readShell("cat job.py | python3 -").opaque).toEqual(["cat job.py | python3 -"]);
  });

  it("does not parse a line longer than 4 KiB: a pattern anywhere in it matches", () => {
    const long = Array.from({ length: 2_000 }, (_, i) => `echo ${i}`).join(" && ");
    expect(readShell(`${long} && git push -f`)).toEqual({
      commands: [],
      opaque: [`${long} && git push -f`],
      writes: [],
      chosenAtRunTime: [],
    });
    expect(highRisk(`${long} && git push -f`)).toBe(true);
    expect(highRisk(`${long} && git push`)).toBe(false);
  });
});
