import { describe, expect, it } from "vitest";
import { traceIdOf } from "./trace.js";

describe("traceIdOf", () => {
  it("reads the trace id of a valid traceparent, and nothing else", () => {
    const id = "4bf92f3577b34da6a3ce929d0e0e4736";
    expect(traceIdOf({ traceparent: `00-${id}-00f067aa0ba902b7-01` })).toBe(id);
    expect(traceIdOf({ traceparent: `01-${id}-00f067aa0ba902b7-01-future` })).toBe(id);
    expect(traceIdOf({ traceparent: `00-${id}-00f067aa0ba902b7-01-extra` })).toBeNull();
    expect(traceIdOf({ traceparent: `ff-${id}-00f067aa0ba902b7-01` })).toBeNull();
    expect(traceIdOf({ traceparent: `00-${"0".repeat(32)}-00f067aa0ba902b7-01` })).toBeNull();
    expect(traceIdOf({ traceparent: `00-${id.toUpperCase()}-00f067aa0ba902b7-01` })).toBeNull();
    expect(traceIdOf({ traceparent: 7 })).toBeNull();
    expect(traceIdOf(undefined)).toBeNull();
  });
});
