// @vitest-environment happy-dom
import { afterEach, describe, expect, it, vi } from "vitest";
import type { ConnectionTest, EngineSettings, StoredEngineSettings } from "../api";
import { DEFAULT_SETTINGS } from "./engine-settings";
import { EngineSettingsPanel, type SettingsApi } from "./settings-panel";

const REMOTE: EngineSettings = {
  engine: "remote",
  endpoint: "https://gpu.example.com/v1",
  model: "deepseek-ai/DeepSeek-OCR-2",
  concurrency: 32,
  allowHttp: false,
  weights: "bf16",
};

function stored(settings: EngineSettings, apiKeyStored = false, keyringProblem: string | null = null): StoredEngineSettings {
  return { settings, apiKeyStored, keyringProblem };
}

/** A promise the test settles when it wants, to look at the panel while a command is waiting. */
function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

function setup(current: StoredEngineSettings = stored(DEFAULT_SETTINGS)) {
  const dialog = document.createElement("dialog");
  document.body.append(dialog);
  const api = {
    engineSettings: vi.fn(() => Promise.resolve(current)),
    saveEngineSettings: vi.fn((settings: EngineSettings, apiKey: string | null) =>
      Promise.resolve(stored(settings, apiKey === null ? current.apiKeyStored : apiKey !== "")),
    ),
    testConnection: vi.fn((_settings: EngineSettings, _apiKey: string | null) =>
      Promise.resolve<ConnectionTest>({ ok: true, message: "Connected: 1 model", models: ["m1"] }),
    ),
  } satisfies SettingsApi;
  const onSaved = vi.fn();
  const panel = new EngineSettingsPanel(dialog, api, onSaved);
  const $ = <T extends HTMLElement>(id: string) => dialog.querySelector<T>(`#${id}`)!;
  const radio = (value: string) => dialog.querySelector<HTMLInputElement>(`input[name=engine][value=${value}]`)!;
  const choose = (value: string) => {
    radio(value).checked = true;
    radio(value).dispatchEvent(new Event("change", { bubbles: true }));
  };
  const type = (id: string, value: string) => {
    $<HTMLInputElement>(id).value = value;
    $<HTMLInputElement>(id).dispatchEvent(new Event("input", { bubbles: true }));
  };
  const submit = () => dialog.querySelector("form")!.dispatchEvent(new Event("submit", { cancelable: true }));
  const settle = () => new Promise((resolve) => setTimeout(resolve));
  return { dialog, api, onSaved, panel, $, radio, choose, type, submit, settle };
}

afterEach(() => document.body.replaceChildren());

describe("EngineSettingsPanel", () => {
  it("opens as a modal showing the saved settings, each field with its label", async () => {
    const { dialog, panel, $, radio } = setup(stored(REMOTE, true));
    expect(dialog.open).toBe(false);
    await panel.open();
    expect(dialog.open).toBe(true);
    expect(radio("remote").checked).toBe(true);
    expect($<HTMLInputElement>("remote-endpoint").value).toBe(REMOTE.endpoint);
    expect($<HTMLInputElement>("remote-concurrency").value).toBe("32");
    expect($<HTMLInputElement>("remote-api-key").type).toBe("password");
    expect($<HTMLInputElement>("remote-api-key").placeholder).toMatch(/stored in the system keyring/);
    expect($("forget-api-key").hidden).toBe(false);
    for (const id of ["remote-endpoint", "remote-model", "remote-api-key", "remote-concurrency", "remote-allow-http"]) {
      expect(dialog.querySelector(`label[for=${id}]`)?.textContent, id).toBeTruthy();
    }
  });

  it("enables the server fields only for a server", async () => {
    const { panel, $, choose } = setup();
    await panel.open();
    const fieldset = $<HTMLInputElement>("remote-endpoint").closest("fieldset")!;
    expect(fieldset.disabled).toBe(true);
    expect($<HTMLInputElement>("remote-api-key").placeholder).toBe("none");
    expect($("forget-api-key").hidden).toBe(true);
    choose("remote");
    expect(fieldset.disabled).toBe(false);
    choose("local");
    expect(fieldset.disabled).toBe(true);
  });

  it("saves the form with the typed key, then closes and says so", async () => {
    const { dialog, api, onSaved, panel, choose, type, submit, settle } = setup();
    await panel.open();
    choose("remote");
    type("remote-endpoint", "https://gpu.example.com/v1");
    type("remote-concurrency", "");
    type("remote-api-key", "sk-secret");
    submit();
    await settle();
    expect(api.saveEngineSettings).toHaveBeenCalledWith(
      { ...DEFAULT_SETTINGS, engine: "remote", endpoint: "https://gpu.example.com/v1" },
      "sk-secret",
    );
    expect(dialog.open).toBe(false);
    expect(onSaved).toHaveBeenCalledOnce();
  });

  it("saves the local model's weights, a choice open only for this computer", async () => {
    const { api, panel, $, choose, submit, settle } = setup();
    await panel.open();
    const weights = $<HTMLSelectElement>("local-weights");
    expect(weights.value).toBe("bf16");
    expect(weights.closest("fieldset")!.disabled).toBe(false);
    expect(weights.ownerDocument.querySelector("label[for=local-weights]")?.textContent).toBe("Weights");
    const note = weights.ownerDocument.getElementById(weights.getAttribute("aria-describedby")!);
    expect(note?.textContent).toMatch(/made once from the downloaded weights/);
    choose("remote");
    expect(weights.closest("fieldset")!.disabled).toBe(true);
    choose("local");
    weights.value = "int8";
    submit();
    await settle();
    expect(api.saveEngineSettings).toHaveBeenCalledWith({ ...DEFAULT_SETTINGS, weights: "int8" }, null);
  });

  it("keeps the stored key when the field is left blank", async () => {
    const { api, panel, submit, settle } = setup(stored(REMOTE, true));
    await panel.open();
    submit();
    await settle();
    expect(api.saveEngineSettings).toHaveBeenCalledWith(REMOTE, null);
  });

  it("shows the server's refusal and stays open", async () => {
    const { dialog, api, onSaved, panel, $, submit, settle } = setup(stored(REMOTE));
    api.saveEngineSettings.mockRejectedValueOnce("the keyring is locked");
    await panel.open();
    submit();
    await settle();
    expect($("engine-settings-error").textContent).toBe("the keyring is locked");
    expect(dialog.open).toBe(true);
    expect(onSaved).not.toHaveBeenCalled();
    expect($<HTMLButtonElement>("save-engine-settings").disabled).toBe(false);
  });

  it("does not send what the server would refuse, and marks the field", async () => {
    const { api, panel, $, type, submit, settle } = setup(stored(REMOTE));
    await panel.open();
    type("remote-concurrency", "0");
    submit();
    await settle();
    expect(api.saveEngineSettings).not.toHaveBeenCalled();
    expect($("remote-concurrency").getAttribute("aria-invalid")).toBe("true");
    expect($("engine-settings-error").textContent).toMatch(/1 to 1024/);
  });

  it("asks for plain http to another machine to be allowed, and says why", async () => {
    const { api, panel, $, type, submit, settle } = setup(stored(REMOTE));
    await panel.open();
    expect($("plain-http-why").hidden).toBe(true);
    type("remote-endpoint", "http://10.0.0.5:8000/v1");
    expect($("plain-http-why").hidden).toBe(false);
    expect($("plain-http-why").textContent).toMatch(/unencrypted/);
    submit();
    await settle();
    expect(api.saveEngineSettings).not.toHaveBeenCalled();
    expect($("remote-allow-http").getAttribute("aria-invalid")).toBe("true");
    $<HTMLInputElement>("remote-allow-http").checked = true;
    submit();
    await settle();
    expect(api.saveEngineSettings).toHaveBeenCalledWith({ ...REMOTE, endpoint: "http://10.0.0.5:8000/v1", allowHttp: true }, null);
  });

  it("tests the connection with the form, disabled while it waits, and shows the answer", async () => {
    const { api, panel, $, type, settle } = setup(stored(REMOTE, true));
    const answer = deferred<ConnectionTest>();
    api.testConnection.mockReturnValueOnce(answer.promise);
    await panel.open();
    type("remote-model", "other");
    const button = $<HTMLButtonElement>("test-connection");
    button.click();
    expect(button.disabled).toBe(true);
    expect(api.testConnection).toHaveBeenCalledWith({ ...REMOTE, model: "other" }, null);
    answer.resolve({ ok: false, message: "The server does not serve other", models: ["m1", "m2"] });
    await settle();
    expect(button.disabled).toBe(false);
    expect($("connection-status").textContent).toBe("The server does not serve other");
    expect($("connection-status").dataset["ok"]).toBe("false");
    expect([...$("remote-models").querySelectorAll("option")].map((o) => o.getAttribute("value"))).toEqual(["m1", "m2"]);
  });

  it("tests with the key typed, and says a failed call failed", async () => {
    const { api, panel, $, type, settle } = setup(stored(REMOTE));
    api.testConnection.mockRejectedValueOnce("connection refused");
    await panel.open();
    type("remote-api-key", "sk-new");
    $<HTMLButtonElement>("test-connection").click();
    await settle();
    expect(api.testConnection).toHaveBeenCalledWith(REMOTE, "sk-new");
    expect($("connection-status").dataset["ok"]).toBe("false");
    expect($("connection-status").textContent).toBe("connection refused");
    $<HTMLButtonElement>("test-connection").click();
    await settle();
    expect($("connection-status").dataset["ok"]).toBe("true");
  });

  it("forgets the stored key, keeping the saved settings rather than the form's", async () => {
    const { dialog, api, onSaved, panel, $, type, settle } = setup(stored(REMOTE, true));
    await panel.open();
    type("remote-model", "half-typed");
    $<HTMLButtonElement>("forget-api-key").click();
    await settle();
    expect(api.saveEngineSettings).toHaveBeenCalledWith(REMOTE, "");
    expect($("forget-api-key").hidden).toBe(true);
    expect($<HTMLInputElement>("remote-api-key").placeholder).toBe("none");
    expect($<HTMLInputElement>("remote-model").value).toBe("half-typed");
    expect(dialog.open).toBe(true);
    expect(onSaved).toHaveBeenCalledOnce();
  });

  it("says plainly when the keyring cannot keep a key", async () => {
    const { panel, $ } = setup(stored(REMOTE, false, "no Secret Service"));
    await panel.open();
    expect($("keyring-problem").hidden).toBe(false);
    expect($("keyring-problem").textContent).toMatch(/no Secret Service.*saving a key will fail/);
  });

  it("closes on Esc or Cancel without saving, the window not seeing the key, and clears the key typed", async () => {
    const { dialog, api, panel, $, type } = setup(stored(REMOTE));
    const windowKeys = vi.fn();
    window.addEventListener("keydown", windowKeys);
    await panel.open();
    type("remote-api-key", "sk-secret");
    $("remote-api-key").dispatchEvent(new KeyboardEvent("keydown", { key: "Escape", bubbles: true, cancelable: true }));
    window.removeEventListener("keydown", windowKeys);
    expect(dialog.open).toBe(false);
    expect(windowKeys).not.toHaveBeenCalled();
    expect($<HTMLInputElement>("remote-api-key").value).toBe("");
    await panel.open();
    [...dialog.querySelectorAll("button")].find((b) => b.textContent === "Cancel")!.click();
    expect(dialog.open).toBe(false);
    expect(api.saveEngineSettings).not.toHaveBeenCalled();
  });

  it("still opens, with the defaults, when the settings cannot be read", async () => {
    const { api, panel, $, radio } = setup();
    api.engineSettings.mockRejectedValueOnce("settings.json is not JSON");
    await panel.open();
    expect(radio("local").checked).toBe(true);
    expect($<HTMLInputElement>("remote-endpoint").value).toBe(DEFAULT_SETTINGS.endpoint);
    expect($("engine-settings-error").textContent).toMatch(/settings.json is not JSON/);
  });
});
