import { describe, expect, it } from "vitest";
import { webhookUrlProblem } from "./url";

describe("where a webhook may go", () => {
  it("takes https on a public host, any port", () => {
    expect(webhookUrlProblem("https://hooks.example.com/tapgate", false)).toBeNull();
    expect(webhookUrlProblem("https://siem.example.org:8443/in", false)).toBeNull();
    expect(webhookUrlProblem("https://93.184.216.34/in", false)).toBeNull();
  });

  it("refuses http, credentials and what is not a URL", () => {
    expect(webhookUrlProblem("http://hooks.example.com/", false)).toMatch(/https/);
    expect(webhookUrlProblem("https://user:pw@hooks.example.com/", false)).toMatch(/credentials/);
    expect(webhookUrlProblem("ftp://hooks.example.com/", false)).toMatch(/https/);
    expect(webhookUrlProblem("hooks.example.com", false)).toMatch(/not a URL/);
  });

  it("refuses private, loopback, link-local and reserved addresses, however spelled", () => {
    for (const url of [
      "https://10.0.0.7/",
      "https://172.16.3.4/",
      "https://192.168.1.1/",
      "https://127.0.0.1/",
      "https://0x7f.1/",
      "https://169.254.169.254/latest/meta-data",
      "https://100.64.0.1/",
      "https://0.0.0.0/",
      "https://[::1]/",
      "https://[fd00::1]/",
      "https://[fe80::1]/",
      "https://[::ffff:10.0.0.1]/",
    ]) {
      expect(webhookUrlProblem(url, false), url).toMatch(/not a public address/);
    }
  });

  it("refuses names that only mean something inside a network", () => {
    for (const url of ["https://localhost/", "https://intranet/", "https://a.localhost/", "https://nas.local/"]) {
      expect(webhookUrlProblem(url, false), url).toMatch(/not a public host name/);
    }
    expect(webhookUrlProblem("https://db.internal/", false)).toMatch(/not a public host name/);
    // The same names with the root's trailing dot.
    for (const url of ["https://localhost./", "https://db.internal./", "https://nas.local../"]) {
      expect(webhookUrlProblem(url, false), url).toMatch(/not a public host name/);
    }
  });

  it("takes this machine, http too, only in local mode", () => {
    for (const url of ["http://127.0.0.1:9000/hook", "http://localhost:9000/hook", "http://[::1]:9000/"]) {
      expect(webhookUrlProblem(url, true), url).toBeNull();
      expect(webhookUrlProblem(url, false), url).not.toBeNull();
    }
    // Local mode opens this machine only, not the network around it.
    expect(webhookUrlProblem("http://10.0.0.7/", true)).toMatch(/https/);
    expect(webhookUrlProblem("https://192.168.1.1/", true)).toMatch(/not a public address/);
  });
});
