import { describe, expect, it } from "vitest";
import { isInside, isSensitive, NO_CWD, OUTSIDE_CWD, oldTextVerdict, SENSITIVE } from "./sensitive-paths.js";

const home = "/home/ada";

describe("old text only from inside the working directory", () => {
  it("is inside the directory itself and below it, never beside or above it", () => {
    expect(isInside("/home/ada/demo/src/a.ts", "/home/ada/demo")).toBe(true);
    expect(isInside("/home/ada/demo", "/home/ada/demo")).toBe(true);
    expect(isInside("/home/ada/demo-other/a.ts", "/home/ada/demo")).toBe(false);
    expect(isInside("/home/ada/a.ts", "/home/ada/demo")).toBe(false);
    expect(isInside("/etc/passwd", "/home/ada/demo")).toBe(false);
    expect(isInside("relative/a.ts", "/home/ada/demo")).toBe(false);
  });

  it("withholds without a cwd, outside it, and for secrets inside it", () => {
    expect(oldTextVerdict("/home/ada/demo/a.ts", "/home/ada/demo", home)).toEqual({ show: true });
    expect(oldTextVerdict("/home/ada/demo/a.ts", undefined, home)).toEqual({ show: false, reason: NO_CWD });
    expect(oldTextVerdict("/etc/hosts", "/home/ada/demo", home)).toEqual({ show: false, reason: OUTSIDE_CWD });
    expect(oldTextVerdict("/home/ada/demo/.env", "/home/ada/demo", home)).toEqual({ show: false, reason: SENSITIVE });
    // A session in the home directory still never shows ~/.ssh or ~/.aws.
    expect(oldTextVerdict("/home/ada/.ssh/config", home, home)).toEqual({ show: false, reason: SENSITIVE });
    expect(oldTextVerdict("/home/ada/.aws/config", home, home)).toEqual({ show: false, reason: SENSITIVE });
  });
});

describe("secret-looking paths", () => {
  it.each([
    "/p/.env",
    "/p/.env.local",
    "/p/.ENV.production",
    "/p/prod.env",
    "/p/.envrc",
    "/home/ada/.ssh/known_hosts",
    "/home/ada/.aws/credentials",
    "/home/ada/.gnupg/pubring.kbx",
    "/home/ada/.kube/config",
    "/home/ada/.docker/config.json",
    "/home/ada/.config/gcloud/application_default_credentials.json",
    "/home/ada/.config/tapgate/config.json",
    "/home/ada/.config/gh/hosts.yml",
    "/p/.git/config",
    "/p/certs/server.pem",
    "/p/tls.key",
    "/p/api_key.txt",
    "/p/KeyStore.jks",
    "/p/id_rsa",
    "/p/id_ed25519.pub",
    "/p/.npmrc",
    "/p/.netrc",
    "/p/.pypirc",
    "/p/.git-credentials",
    "/p/credentials.json",
    "/p/client_secret.json",
    "/p/github-token.txt",
    "/p/passwords.txt",
    "/p/vault.kdbx",
  ])("%s is sensitive", (path) => {
    expect(isSensitive(path, home)).toBe(true);
  });

  it.each([
    "/p/src/index.ts",
    "/p/README.md",
    "/p/environment.ts",
    "/p/tokenizer.ts",
    "/p/docs/ssh.md",
    "/home/ada/.config/other/settings.json",
    "/p/.github/workflows/ci.yml",
  ])("%s is not", (path) => {
    expect(isSensitive(path, home)).toBe(false);
  });
});
