import { describe, expect, it } from "vitest";
import { lookingWords } from "./claims";

const claim = (name: string) => ({ approvalId: "apr_1", by: { userId: `usr_${name}`, name }, until: 1 });

describe("who is looking, in words", () => {
  it("names one or two people, then counts the others", () => {
    expect(lookingWords([claim("Ada")])).toBe("Ada is looking");
    expect(lookingWords([claim("Ada"), claim("Sam")])).toBe("Ada and Sam are looking");
    expect(lookingWords([claim("Ada"), claim("Sam"), claim("Lin")])).toBe("Ada, Sam and 1 other are looking");
    expect(lookingWords(["Ada", "Sam", "Lin", "Bo"].map(claim))).toBe("Ada, Sam and 2 others are looking");
    expect(lookingWords([claim("")])).toBe("Someone is looking");
  });
});
