import { describe, expect, it } from "vitest";
import {
  checkForm,
  DEFAULT_SETTINGS,
  formFromSettings,
  needsAllowHttp,
  parseConcurrency,
  typedKey,
  type EngineForm,
} from "./engine-settings";

function remote(changes: Partial<EngineForm> = {}): EngineForm {
  return { ...formFromSettings(DEFAULT_SETTINGS), engine: "remote", ...changes };
}

function fieldsWrong(form: EngineForm): string[] {
  const result = checkForm(form);
  return result.ok ? [] : result.problems.map((problem) => problem.field);
}

describe("formFromSettings and checkForm", () => {
  it("give back the settings they were filled from, trimmed", () => {
    const settings = { ...DEFAULT_SETTINGS, engine: "remote" as const, concurrency: 64, allowHttp: true };
    expect(checkForm(formFromSettings(settings))).toEqual({ ok: true, settings });
    const typed = remote({ endpoint: "  https://gpu.example.com/v1 ", model: " m ", concurrency: " 8 " });
    expect(checkForm(typed)).toEqual({
      ok: true,
      settings: {
        engine: "remote",
        endpoint: "https://gpu.example.com/v1",
        model: "m",
        concurrency: 8,
        allowHttp: false,
        weights: "bf16",
      },
    });
  });

  it("keep the local model's weights, int8 or bf16", () => {
    const settings = { ...DEFAULT_SETTINGS, weights: "int8" as const };
    expect(formFromSettings(settings).weights).toBe("int8");
    expect(checkForm(formFromSettings(settings))).toEqual({ ok: true, settings });
  });

  it("take a blank concurrency as the server's default", () => {
    expect(formFromSettings(DEFAULT_SETTINGS).concurrency).toBe("");
    const result = checkForm(remote({ concurrency: "" }));
    expect(result.ok && result.settings.concurrency).toBeNull();
  });

  it("refuse an endpoint that is not http(s), a blank model and a concurrency out of range", () => {
    for (const endpoint of ["", "gpu:8000", "ftp://gpu/v1", "http:///v1", "127.0.0.1:8000/v1"]) {
      expect(fieldsWrong(remote({ endpoint })), endpoint).toEqual(["endpoint"]);
    }
    expect(fieldsWrong(remote({ model: "  " }))).toEqual(["model"]);
    for (const concurrency of ["0", "1025", "1.5", "-2", "many"]) {
      expect(fieldsWrong(remote({ concurrency })), concurrency).toEqual(["concurrency"]);
    }
  });

  it("want plain http to another machine allowed, with the reason", () => {
    const form = remote({ endpoint: "http://10.0.0.5:8000/v1" });
    const result = checkForm(form);
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.problems[0]?.field).toBe("allowHttp");
      expect(result.problems[0]?.message).toMatch(/unencrypted/);
    }
    expect(checkForm({ ...form, allowHttp: true }).ok).toBe(true);
  });

  it("leave the server fields unchecked while reading on this computer", () => {
    const result = checkForm({ ...remote({ endpoint: "", model: "", concurrency: "x" }), engine: "local" });
    expect(result).toEqual({
      ok: true,
      settings: { engine: "local", endpoint: "", model: "", concurrency: null, allowHttp: false, weights: "bf16" },
    });
  });
});

describe("needsAllowHttp", () => {
  it("is false for https and for this machine, as the server reads them", () => {
    for (const endpoint of [
      "https://gpu.example.com/v1",
      "http://127.0.0.1:8000/v1",
      "http://127.3.2.1/v1",
      "http://localhost:30000/v1/",
      "http://LOCALHOST/v1",
      "http://[::1]:8000/v1",
      "http://[0:0:0:0:0:0:0:1]/v1",
      "http://user:pw@localhost/v1",
      "not a url",
    ]) {
      expect(needsAllowHttp(endpoint), endpoint).toBe(false);
    }
  });

  it("is true for plain http to any other host", () => {
    for (const endpoint of [
      "http://10.0.0.5:8000/v1",
      "http://gpu.example.com/v1",
      "http://[2001:db8::1]/v1",
      "http://localhost.example.com/v1",
      "http://127.0.0.1.example.com/v1",
      "HTTP://gpu/v1",
      "http://[::2]/v1",
    ]) {
      expect(needsAllowHttp(endpoint), endpoint).toBe(true);
    }
  });
});

describe("parseConcurrency and typedKey", () => {
  it("read numbers and keys as the commands want them", () => {
    expect(parseConcurrency("1")).toBe(1);
    expect(parseConcurrency("1024")).toBe(1024);
    expect(parseConcurrency(" ")).toBeNull();
    expect(parseConcurrency("1e3")).toBeUndefined();
    expect(typedKey("")).toBeNull();
    expect(typedKey(" sk-1\n")).toBe("sk-1");
  });
});
