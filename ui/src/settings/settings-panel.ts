// The reading engine's settings, in a modal dialog opened from the top bar: read on this computer or
// through a server (vLLM, SGLang, deepread serve), where it is, which model, the API key (kept in the
// system keyring by Rust, never shown back), and how many pages go at once.
import type { ConnectionTest, EngineSettings, StoredEngineSettings } from "../api";
import { checkRow, el } from "../dom";
import {
  checkForm,
  DEFAULT_CONCURRENCY,
  DEFAULT_SETTINGS,
  formFromSettings,
  INT8_NOTE,
  MAX_CONCURRENCY,
  needsAllowHttp,
  PLAIN_HTTP_WHY,
  typedKey,
  type EngineForm,
  type Field,
} from "./engine-settings";

/** The commands the panel calls (api.ts's; tests give their own). */
export interface SettingsApi {
  engineSettings(): Promise<StoredEngineSettings>;
  saveEngineSettings(settings: EngineSettings, apiKey: string | null): Promise<StoredEngineSettings>;
  testConnection(settings: EngineSettings, apiKey: string | null): Promise<ConnectionTest>;
}

export class EngineSettingsPanel {
  private readonly form: HTMLFormElement;
  private readonly radios: Record<EngineForm["engine"], HTMLInputElement>;
  private readonly localFields: HTMLFieldSetElement;
  private readonly weights: HTMLSelectElement;
  private readonly serverFields: HTMLFieldSetElement;
  private readonly fields: Record<Exclude<Field, "allowHttp">, HTMLInputElement>;
  private readonly apiKey: HTMLInputElement;
  private readonly allowHttp: HTMLInputElement;
  private readonly httpWhy: HTMLElement;
  private readonly forgetKey: HTMLButtonElement;
  private readonly keyring: HTMLElement;
  private readonly models: HTMLDataListElement;
  private readonly testButton: HTMLButtonElement;
  private readonly connection: HTMLElement;
  private readonly error: HTMLElement;
  private readonly saveButton: HTMLButtonElement;
  private stored: StoredEngineSettings = { settings: DEFAULT_SETTINGS, apiKeyStored: false, keyringProblem: null };

  constructor(
    private readonly dialog: HTMLDialogElement,
    private readonly api: SettingsApi,
    /** Settings or the key changed: the top bar asks the engine again. */
    private readonly onSaved: () => void,
  ) {
    dialog.replaceChildren();
    dialog.classList.add("settings-dialog");
    dialog.setAttribute("aria-labelledby", "engine-settings-title");
    this.form = el("form", { className: "settings-form" });
    const heading = el("h2", { id: "engine-settings-title", textContent: "Reading engine" });

    const choice = el("fieldset", { className: "engine-choice" });
    choice.append(el("legend", { textContent: "Read pages" }));
    this.radios = {
      local: radio(choice, "local", "On this computer"),
      remote: radio(choice, "remote", "On a server (vLLM, SGLang, deepread serve)"),
    };

    // The model on this computer: its weights as downloaded, or int8, made from them once and kept beside them.
    this.localFields = el("fieldset", { className: "local-fields" });
    this.localFields.append(el("legend", { textContent: "On this computer" }));
    this.weights = el("select", { id: "local-weights" });
    this.weights.append(
      el("option", { value: "bf16", textContent: "bf16, as downloaded" }),
      el("option", { value: "int8", textContent: "int8, half the memory" }),
    );
    const weightsRow = el("div", { className: "settings-field" });
    weightsRow.append(el("label", { htmlFor: this.weights.id, textContent: "Weights" }), this.weights);
    // What int8 costs, under the choice rather than in it: an option that long widened the dialog past its edge.
    const weightsNote = el("p", { id: "local-weights-note", className: "settings-note", textContent: INT8_NOTE });
    this.weights.setAttribute("aria-describedby", weightsNote.id);
    this.localFields.append(weightsRow, weightsNote);

    // One fieldset, so that choosing "On this computer" disables every server field at once.
    this.serverFields = el("fieldset", { className: "server-fields" });
    this.serverFields.append(el("legend", { textContent: "Server" }));
    const endpoint = field(this.serverFields, "remote-endpoint", "Endpoint", "url");
    endpoint.placeholder = DEFAULT_SETTINGS.endpoint;
    const model = field(this.serverFields, "remote-model", "Model");
    this.models = el("datalist", { id: "remote-models" });
    model.setAttribute("list", this.models.id);
    this.apiKey = field(this.serverFields, "remote-api-key", "API key", "password");
    this.apiKey.autocomplete = "off";
    this.forgetKey = el("button", { id: "forget-api-key", type: "button", textContent: "Forget key" });
    this.forgetKey.title = "Remove the API key from the system keyring";
    this.apiKey.after(this.forgetKey);
    this.keyring = el("p", { id: "keyring-problem", className: "settings-warning" });
    this.apiKey.parentElement!.after(this.keyring);
    const concurrency = field(this.serverFields, "remote-concurrency", "Pages in flight", "number");
    concurrency.min = "1";
    concurrency.max = String(MAX_CONCURRENCY);
    concurrency.step = "1";
    concurrency.placeholder = `server default ${DEFAULT_CONCURRENCY}`;
    this.fields = { endpoint, model, concurrency };

    const httpRow = el("div", { className: "settings-check" });
    this.allowHttp = el("input", { id: "remote-allow-http", type: "checkbox" });
    httpRow.append(this.allowHttp, el("label", { htmlFor: this.allowHttp.id, textContent: "Allow plain http to another machine" }));
    this.httpWhy = el("p", { id: "plain-http-why", className: "settings-warning", textContent: PLAIN_HTTP_WHY });
    this.allowHttp.setAttribute("aria-describedby", this.httpWhy.id);

    const test = el("div", { className: "settings-test" });
    this.testButton = el("button", { id: "test-connection", type: "button", textContent: "Test connection" });
    this.connection = el("p", { id: "connection-status", className: "connection-status" });
    this.connection.setAttribute("role", "status");
    test.append(this.testButton, this.connection);
    this.serverFields.append(this.models, httpRow, this.httpWhy, test);

    this.error = el("p", { id: "engine-settings-error", className: "settings-error" });
    this.error.setAttribute("role", "alert");
    const buttons = el("div", { className: "settings-buttons" });
    const cancel = el("button", { type: "button", textContent: "Cancel" });
    this.saveButton = el("button", { id: "save-engine-settings", type: "submit", textContent: "Save" });
    buttons.append(cancel, this.saveButton);
    this.form.append(heading, choice, this.localFields, this.serverFields, this.error, buttons);
    dialog.append(this.form);

    choice.addEventListener("change", () => this.showEngine());
    endpoint.addEventListener("input", () => this.showPlainHttp());
    this.allowHttp.addEventListener("change", () => this.showPlainHttp());
    this.form.addEventListener("submit", (event) => {
      event.preventDefault();
      void this.save();
    });
    cancel.addEventListener("click", () => this.close());
    this.testButton.addEventListener("click", () => void this.test());
    this.forgetKey.addEventListener("click", () => void this.forget());
    dialog.addEventListener("keydown", (event) => {
      // Keys typed here are the dialog's: the window's shortcuts (Esc stops reading) are not for them.
      event.stopPropagation();
      if (event.key === "Escape") {
        event.preventDefault();
        this.close();
      }
    });
    // The key typed is not left in the page once the dialog is gone, however it went.
    dialog.addEventListener("close", () => (this.apiKey.value = ""));
  }

  get isOpen(): boolean {
    return this.dialog.open;
  }

  /** Asks Rust for the settings and shows them. */
  async open(): Promise<void> {
    let problem = "";
    try {
      this.stored = await this.api.engineSettings();
    } catch (error) {
      problem = `The saved settings could not be read: ${String(error)}`;
    }
    this.fill(formFromSettings(this.stored.settings));
    this.showKey();
    this.say(problem);
    this.showConnection(null);
    this.models.replaceChildren();
    if (!this.dialog.open) this.dialog.showModal();
    (this.radios.remote.checked ? this.fields.endpoint : this.radios.local).focus();
  }

  close(): void {
    this.dialog.close();
  }

  private read(): EngineForm {
    return {
      engine: this.radios.remote.checked ? "remote" : "local",
      endpoint: this.fields.endpoint.value,
      model: this.fields.model.value,
      concurrency: this.fields.concurrency.value,
      allowHttp: this.allowHttp.checked,
      weights: this.weights.value === "int8" ? "int8" : "bf16",
    };
  }

  private fill(form: EngineForm): void {
    this.radios[form.engine].checked = true;
    this.radios[form.engine === "local" ? "remote" : "local"].checked = false;
    this.fields.endpoint.value = form.endpoint;
    this.fields.model.value = form.model;
    this.fields.concurrency.value = form.concurrency;
    this.allowHttp.checked = form.allowHttp;
    this.weights.value = form.weights;
    this.apiKey.value = "";
    this.showEngine();
  }

  private showEngine(): void {
    const remote = this.radios.remote.checked;
    this.serverFields.disabled = !remote;
    this.localFields.disabled = remote;
    this.dialog.dataset["engine"] = remote ? "remote" : "local";
    this.showPlainHttp();
  }

  /** The checkbox and its reason stand out while the endpoint is plain http to another machine. */
  private showPlainHttp(): void {
    const needed = needsAllowHttp(this.fields.endpoint.value);
    this.allowHttp.parentElement!.dataset["needed"] = String(needed);
    this.httpWhy.hidden = !needed;
  }

  private showKey(): void {
    const { apiKeyStored, keyringProblem } = this.stored;
    this.apiKey.placeholder = apiKeyStored ? "stored in the system keyring" : "none";
    this.apiKey.title = apiKeyStored ? "Leave blank to keep the stored key" : "";
    this.forgetKey.hidden = !apiKeyStored;
    this.keyring.hidden = keyringProblem === null;
    this.keyring.textContent = keyringProblem
      ? `The API key cannot be kept in the system keyring (${keyringProblem}), so saving a key will fail.`
      : "";
  }

  /** The form's settings; with a problem, says it, marks its fields and gives null. */
  private checked(): EngineSettings | null {
    const result = checkForm(this.read());
    for (const input of [...Object.values(this.fields), this.allowHttp]) input.removeAttribute("aria-invalid");
    if (result.ok) return result.settings;
    for (const problem of result.problems) this.input(problem.field).setAttribute("aria-invalid", "true");
    this.say(result.problems.map((problem) => problem.message).join(" "));
    this.input(result.problems[0]!.field).focus();
    return null;
  }

  private input(field: Field): HTMLInputElement {
    return field === "allowHttp" ? this.allowHttp : this.fields[field];
  }

  private async save(): Promise<void> {
    const settings = this.checked();
    if (!settings) return;
    this.say("");
    this.saveButton.disabled = true;
    try {
      this.stored = await this.api.saveEngineSettings(settings, typedKey(this.apiKey.value));
      this.close();
      this.onSaved();
    } catch (error) {
      this.say(String(error));
    } finally {
      this.saveButton.disabled = false;
    }
  }

  /** Forgets the stored key and nothing else: the settings sent are those last saved, not the form's. */
  private async forget(): Promise<void> {
    this.forgetKey.disabled = true;
    try {
      this.stored = await this.api.saveEngineSettings(this.stored.settings, "");
      this.say("");
      this.showKey();
      this.onSaved();
    } catch (error) {
      this.say(String(error));
    } finally {
      this.forgetKey.disabled = false;
    }
  }

  private async test(): Promise<void> {
    const settings = this.checked();
    if (!settings) return;
    this.say("");
    this.testButton.disabled = true;
    this.showConnection({ ok: null, message: `Asking ${settings.endpoint}…` });
    try {
      const result = await this.api.testConnection(settings, typedKey(this.apiKey.value));
      this.showConnection(result);
      // The model field offers what the server serves.
      this.models.replaceChildren(...result.models.map((name) => el("option", { value: name })));
    } catch (error) {
      this.showConnection({ ok: false, message: String(error) });
    } finally {
      this.testButton.disabled = false;
    }
  }

  private showConnection(result: { ok: boolean | null; message: string } | null): void {
    this.connection.textContent = result?.message ?? "";
    if (result?.ok == null) delete this.connection.dataset["ok"];
    else this.connection.dataset["ok"] = String(result.ok);
  }

  private say(message: string): void {
    this.error.textContent = message;
    this.error.hidden = message === "";
  }
}

function radio(parent: HTMLElement, value: EngineForm["engine"], text: string): HTMLInputElement {
  return checkRow(parent, el("input", { type: "radio", name: "engine", value, id: `engine-${value}` }), text);
}

/** A labelled text field in the settings grid. */
function field(parent: HTMLElement, id: string, text: string, type = "text"): HTMLInputElement {
  const input = el("input", { id, type, spellcheck: false });
  const row = el("div", { className: "settings-field" });
  row.append(el("label", { htmlFor: id, textContent: text }), input);
  parent.append(row);
  return input;
}
