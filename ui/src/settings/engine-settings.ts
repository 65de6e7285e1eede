// The reading engine's settings as the panel's form holds them, and the checks the Rust side makes
// on saving (crates/core/src/recognizer/remote/endpoint.rs), made here first so a mistake is shown
// beside its field rather than as a refusal from the server.
import type { EngineSettings, Weights } from "../api";

export const DEFAULT_SETTINGS: EngineSettings = {
  engine: "local",
  endpoint: "http://127.0.0.1:8000/v1",
  model: "deepseek-ai/DeepSeek-OCR-2",
  concurrency: null,
  allowHttp: false,
  weights: "bf16",
};

/** Pages in flight when the field is blank (DEFAULT_CONCURRENCY in the core crate). */
export const DEFAULT_CONCURRENCY = 16;
export const MAX_CONCURRENCY = 1024;

/** What the form's fields hold: text as typed, so a half-typed number is not lost. */
export interface EngineForm {
  engine: "local" | "remote";
  endpoint: string;
  model: string;
  concurrency: string;
  allowHttp: boolean;
  weights: Weights;
}

export type Field = "endpoint" | "model" | "concurrency" | "allowHttp";

export interface Problem {
  field: Field;
  message: string;
}

export type Checked = { ok: true; settings: EngineSettings } | { ok: false; problems: Problem[] };

/** What int8 weights cost, shown under the choice. */
export const INT8_NOTE =
  "int8 is made once from the downloaded weights, in about a minute, and kept beside them. " +
  "It takes about half the memory; pages decode 13 to 28 % slower than in bf16.";

export const PLAIN_HTTP_WHY =
  "Plain http to another machine: page images and their text cross the network unencrypted, " +
  "readable by anyone on the way. Use https://, or allow it only on a network you trust.";

export function formFromSettings(settings: EngineSettings): EngineForm {
  return {
    engine: settings.engine,
    endpoint: settings.endpoint,
    model: settings.model,
    concurrency: settings.concurrency === null ? "" : String(settings.concurrency),
    allowHttp: settings.allowHttp,
    weights: settings.weights,
  };
}

/** The settings the form gives, or what is wrong with it. The server fields are checked only for
 * the remote engine: with the local one they are kept for later, not used. */
export function checkForm(form: EngineForm): Checked {
  const endpoint = form.endpoint.trim();
  const model = form.model.trim();
  const concurrency = parseConcurrency(form.concurrency);
  const problems: Problem[] = [];
  if (!/^https?:\/\/[^/?#]/i.test(endpoint)) {
    problems.push({ field: "endpoint", message: "The endpoint must start with http:// or https:// and name a host." });
  }
  if (model === "") problems.push({ field: "model", message: "Name the model the server serves." });
  if (concurrency === undefined) {
    problems.push({
      field: "concurrency",
      message: `Pages in flight is a whole number from 1 to ${MAX_CONCURRENCY}, or blank for ${DEFAULT_CONCURRENCY}.`,
    });
  }
  if (needsAllowHttp(endpoint) && !form.allowHttp) problems.push({ field: "allowHttp", message: PLAIN_HTTP_WHY });
  const settings: EngineSettings = {
    engine: form.engine,
    endpoint,
    model,
    concurrency: concurrency ?? null,
    allowHttp: form.allowHttp,
    weights: form.weights,
  };
  if (form.engine === "remote" && problems.length > 0) return { ok: false, problems };
  return { ok: true, settings };
}

/** Blank is null (the default); a whole number 1..1024 is itself; anything else is undefined. */
export function parseConcurrency(text: string): number | null | undefined {
  const trimmed = text.trim();
  if (trimmed === "") return null;
  if (!/^\d+$/.test(trimmed)) return undefined;
  const n = Number(trimmed);
  return n >= 1 && n <= MAX_CONCURRENCY ? n : undefined;
}

/** Whether `endpoint` is plain http to a host other than this machine: the server refuses it unless
 * plain http is allowed. */
export function needsAllowHttp(endpoint: string): boolean {
  const match = /^http:\/\/([^/?#]*)/i.exec(endpoint.trim());
  if (!match) return false;
  const authority = match[1]!;
  const hostPort = authority.slice(authority.lastIndexOf("@") + 1);
  const host = hostPort.startsWith("[") ? hostPort.slice(1, hostPort.indexOf("]")) : hostPort.split(":")[0]!;
  return host !== "" && !isLoopback(host);
}

/** localhost, 127.0.0.0/8 and ::1, as Rust's `IpAddr::is_loopback` reads them. */
function isLoopback(host: string): boolean {
  if (host.toLowerCase() === "localhost") return true;
  const v4 = /^127\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(host);
  if (v4) return v4.slice(1).every((octet) => Number(octet) <= 255);
  return isIpv6Loopback(host);
}

/** ::1 in any of its spellings: seven zero groups then 1, with at most one "::" standing for zeros. */
function isIpv6Loopback(host: string): boolean {
  const halves = host.split("::");
  if (halves.length > 2) return false;
  const groups = halves.flatMap((half) => (half === "" ? [] : half.split(":")));
  if (!groups.every((group) => /^[0-9a-f]{1,4}$/i.test(group))) return false;
  if (halves.length === 1 ? groups.length !== 8 : groups.length > 7) return false;
  const last = halves.length === 2 && halves[1] === "" ? 0 : parseInt(groups[groups.length - 1] ?? "0", 16);
  return last === 1 && groups.slice(0, -1).every((group) => parseInt(group, 16) === 0);
}

/** The key to send: null keeps the stored one, which is what a blank field means. */
export function typedKey(text: string): string | null {
  const key = text.trim();
  return key === "" ? null : key;
}
