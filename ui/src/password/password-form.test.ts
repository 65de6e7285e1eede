// @vitest-environment happy-dom
import { afterEach, describe, expect, it } from "vitest";
import { fileName, PasswordForm } from "./password-form";

function setup() {
  const element = document.createElement("form");
  document.body.append(element);
  const form = new PasswordForm(element);
  const input = element.querySelector<HTMLInputElement>("input[type=password]")!;
  const remember = element.querySelector<HTMLInputElement>(".password-form-remember input[type=checkbox]")!;
  const failure = element.querySelector<HTMLElement>(".password-form-failure")!;
  const submit = () => element.dispatchEvent(new Event("submit", { cancelable: true }));
  const cancel = () => element.querySelector<HTMLButtonElement>(".password-form-cancel")!.click();
  return { element, form, input, remember, failure, submit, cancel };
}

afterEach(() => document.body.replaceChildren());

describe("PasswordForm", () => {
  it("asks for a document by its file name, with a focused password field, and gives what was typed", async () => {
    const { element, form, input, remember, failure, submit } = setup();
    expect(element.hidden).toBe(true);
    const answer = form.ask("/home/me/papers/crazyones.pdf", null);
    expect(element.hidden).toBe(false);
    expect(element.querySelector(".password-form-name")?.textContent).toBe("crazyones.pdf");
    expect(input.type).toBe("password");
    expect(document.activeElement).toBe(input);
    expect(failure.hidden).toBe(true);
    expect(remember.checked, "remembering is asked for, never assumed").toBe(false);
    input.value = "password";
    submit();
    expect(await answer).toEqual({ password: "password", remember: false });
    expect(input.value, "the password is not left in the field").toBe("");
  });

  it("says why it asks again, and Cancel or Esc answers null", async () => {
    const { form, input, failure, cancel } = setup();
    const again = form.ask("a.pdf", "The password is not correct.");
    expect(failure.hidden).toBe(false);
    expect(failure.textContent).toBe("The password is not correct.");
    cancel();
    expect(await again).toBeNull();
    const escaped = form.ask("a.pdf", null);
    input.dispatchEvent(new KeyboardEvent("keydown", { key: "Escape", bubbles: true, cancelable: true }));
    expect(await escaped).toBeNull();
  });

  it("gives whether to remember the password, kept through a wrong password, unchecked for another document", async () => {
    const { element, form, input, remember, submit } = setup();
    expect(element.querySelector(".password-form-remember")?.textContent?.trim()).toBe("Remember in the system keyring");
    const first = form.ask("a.pdf", null);
    remember.checked = true;
    input.value = "guess";
    submit();
    expect(await first).toEqual({ password: "guess", remember: true });
    const again = form.ask("a.pdf", "The password is not correct.");
    expect(remember.checked, "the same document asked again keeps the choice").toBe(true);
    input.value = "1234";
    submit();
    expect(await again).toEqual({ password: "1234", remember: true });
    void form.ask("b.pdf", null);
    expect(remember.checked, "another document is asked afresh").toBe(false);
    form.close();
    remember.checked = true;
    void form.ask("b.pdf", null);
    expect(remember.checked, "a form opened again is asked afresh").toBe(false);
  });

  it("keeps keys in the form from the window's shortcuts, Esc in the checkbox cancelling", async () => {
    const { form, input, remember } = setup();
    const reached: string[] = [];
    const listener = (event: KeyboardEvent) => reached.push(event.key);
    window.addEventListener("keydown", listener);
    try {
      const answer = form.ask("a.pdf", null);
      input.dispatchEvent(new KeyboardEvent("keydown", { key: "j", bubbles: true, cancelable: true }));
      remember.dispatchEvent(new KeyboardEvent("keydown", { key: "k", bubbles: true, cancelable: true }));
      remember.dispatchEvent(new KeyboardEvent("keydown", { key: "Escape", bubbles: true, cancelable: true }));
      expect(await answer).toBeNull();
      expect(reached).toEqual([]);
    } finally {
      window.removeEventListener("keydown", listener);
    }
  });

  it("hides when closed", () => {
    const { element, form } = setup();
    void form.ask("a.pdf", null);
    form.close();
    expect(element.hidden).toBe(true);
  });
});

describe("fileName", () => {
  it("takes the last part of a path of either kind", () => {
    expect(fileName("/a/b/c.pdf")).toBe("c.pdf");
    expect(fileName("C:\\docs\\d.pdf")).toBe("d.pdf");
    expect(fileName("e.pdf")).toBe("e.pdf");
  });
});
