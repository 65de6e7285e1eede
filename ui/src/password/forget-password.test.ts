// @vitest-environment happy-dom
import { describe, expect, it, vi } from "vitest";
import type { DocumentInfo } from "../api";
import { describePassword, ForgetPasswordButton, OPENED_REMEMBERED } from "./forget-password";

function doc(password: DocumentInfo["password"], passwordNotice: string | null = null, id = "doc-1"): DocumentInfo {
  return { id, path: `/f/${id}.pdf`, title: `Paper ${id}`, pages: [], password, passwordNotice };
}

function setup(forget: (id: string) => Promise<void> = () => Promise.resolve()) {
  const button = document.createElement("button");
  const said: string[] = [];
  const forgetting = vi.fn(forget);
  const control = new ForgetPasswordButton(button, forgetting, (message) => said.push(message));
  /** Clicks and waits for the answer. */
  const click = async () => {
    button.click();
    await new Promise((resolve) => setTimeout(resolve, 0));
  };
  return { button, said, forgetting, control, click };
}

describe("describePassword", () => {
  it("says Rust's notice, else that the password came from the keyring, else nothing", () => {
    expect(describePassword(doc("remembered"))).toBe(OPENED_REMEMBERED);
    expect(describePassword(doc("entered", "The system keyring is not available: the password is not remembered."))).toBe(
      "The system keyring is not available: the password is not remembered.",
    );
    expect(describePassword(doc("remembered", "Remembered anew."))).toBe("Remembered anew.");
    expect(describePassword(doc("entered"))).toBeNull();
    expect(describePassword(doc("none"))).toBeNull();
  });
});

describe("ForgetPasswordButton", () => {
  it("shows only for a document opened with a remembered password", () => {
    const { button, control } = setup();
    expect(button.hidden).toBe(true);
    control.show(doc("remembered"));
    expect(button.hidden).toBe(false);
    control.show(doc("entered"));
    expect(button.hidden).toBe(true);
    control.show(doc("remembered"));
    control.show(doc("none"));
    expect(button.hidden).toBe(true);
  });

  it("forgets the password of the document shown, then hides and says so", async () => {
    const { button, said, forgetting, control, click } = setup();
    control.show(doc("remembered", null, "doc-7"));
    await click();
    expect(forgetting).toHaveBeenCalledWith("doc-7");
    expect(button.hidden).toBe(true);
    expect(said).toEqual(["The password of Paper doc-7 is forgotten: it will be asked for next time."]);
  });

  it("says why the keyring refused, and stays", async () => {
    const { button, said, control, click } = setup(() => Promise.reject("the system keyring is not available"));
    control.show(doc("remembered"));
    await click();
    expect(button.hidden).toBe(false);
    expect(button.disabled).toBe(false);
    expect(said).toEqual(["Could not forget the password of Paper doc-1: the system keyring is not available"]);
  });

  it("leaves the button of a document opened while it forgot another's", async () => {
    let done: () => void = () => {};
    const { button, said, control } = setup(() => new Promise<void>((resolve) => (done = resolve)));
    control.show(doc("remembered", null, "first"));
    button.click();
    control.show(doc("remembered", null, "second"));
    done();
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(button.hidden).toBe(false);
    expect(said).toEqual(["The password of Paper first is forgotten: it will be asked for next time."]);
  });
});
