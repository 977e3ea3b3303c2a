import { describe, expect, it } from "vitest";
import { duplicateKeyMessage, findDuplicateKey } from "./duplicate-keys.js";

const dup = (text: string) => {
  JSON.parse(text); // the scanner only ever sees text JSON.parse accepted
  return findDuplicateKey(text);
};

describe("findDuplicateKey", () => {
  it("finds nothing in objects whose keys differ, or in scalars and arrays", () => {
    for (const text of ['{"a":1,"b":2}', "[]", "{}", "1", '"a"', '[{"a":1},{"a":2}]', '{"a":{"a":{"a":1}}}']) {
      expect(dup(text)).toBeNull();
    }
  });

  it("finds a key repeated in one object, at any depth, and says how deep", () => {
    expect(dup('{"a":1,"a":2}')).toEqual({ key: "a", depth: 1 });
    expect(dup('{"p":{"x":1,"y":[1,2],"x":3}}')).toEqual({ key: "x", depth: 2 });
    expect(dup('[{"a":1},{"b":1,"b":2}]')).toEqual({ key: "b", depth: 2 });
    expect(dup('{"l":[[{"k":1}],{"k":1,"j":{},"k":2}]}')).toEqual({ key: "k", depth: 3 });
  });

  it("compares keys decoded: escapes spell the same key", () => {
    expect(dup('{"a":1,"\\u0061":2}')).toEqual({ key: "a", depth: 1 });
    expect(dup('{"a\\"b":1,"a\\u0022b":2}')).toEqual({ key: 'a"b', depth: 1 });
    expect(dup('{"\\\\":1,"\\u005c":2}')).toEqual({ key: "\\", depth: 1 });
    expect(dup('{"é":1,"\\u00e9":2}')).toEqual({ key: "é", depth: 1 });
    expect(dup('{"a\\\\":1,"a":2}')).toBeNull();
  });

  it("is not fooled by strings that look like keys or structure", () => {
    expect(dup('{"a":"a","b":"a"}')).toBeNull();
    expect(dup('{"a":"{\\"a\\":1,\\"a\\":2}","b":"}],\\"a\\":"}')).toBeNull();
    expect(dup('{"a":["a","a"],"b":{"a":1}}')).toBeNull();
    expect(dup('{"s":"\\\\","a":1,"s":2}')).toEqual({ key: "s", depth: 1 });
    expect(dup(' { "a" : 1 , "a" : 2 } ')).toEqual({ key: "a", depth: 1 });
  });

  it("survives hostile depth without recursion", () => {
    const depth = 200_000;
    const deep = `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`;
    expect(findDuplicateKey(deep)).toBeNull();
    const deepDup = `${"[".repeat(depth)}{"z":1,"z":2}${"]".repeat(depth)}`;
    expect(findDuplicateKey(deepDup)).toEqual({ key: "z", depth: depth + 1 });
  });

  it("scans a large frame in linear time", () => {
    const wide = JSON.stringify(Object.fromEntries(Array.from({ length: 20_000 }, (_, i) => [`k${i}`, `v\\"${i}`])));
    const started = performance.now();
    expect(findDuplicateKey(wide)).toBeNull();
    expect(findDuplicateKey(`${wide.slice(0, -1)},"k19999":0}`)).toEqual({ key: "k19999", depth: 1 });
    expect(performance.now() - started).toBeLessThan(500);
  });

  it("names the key in its message, cut short when long", () => {
    expect(duplicateKeyMessage({ key: "id", depth: 1 })).toBe('duplicate key "id" in a JSON object');
    expect(duplicateKeyMessage({ key: "x".repeat(500), depth: 1 })).toHaveLength(
      duplicateKeyMessage({ key: "x".repeat(100), depth: 1 }).length,
    );
  });
});
