// Drives the real DeepRead window: Xvfb for a display, tauri-driver in front of WebKitWebDriver, and a
// minimal W3C WebDriver client over fetch. Used by the desktop tests in this folder.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { createServer } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import path from "node:path";

export const repoRoot = path.resolve(import.meta.dirname, "../..");
export const fixtures = process.env.DEEPREAD_FIXTURES ?? path.resolve(repoRoot, "../shared/fixtures");
const app = path.join(repoRoot, "target/debug/deepread-app");
const tauriDriver = path.join(repoRoot, ".deps/tools/bin/tauri-driver");

async function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
    server.on("error", reject);
  });
}

function freeDisplay() {
  for (let n = 90; n < 200; n++) {
    if (!existsSync(`/tmp/.X11-unix/X${n}`) && !existsSync(`/tmp/.X${n}-lock`)) return `:${n}`;
  }
  throw new Error("no free X display number");
}

async function until(what, timeoutMs, probe) {
  const deadline = Date.now() + timeoutMs;
  let last;
  while (Date.now() < deadline) {
    try {
      const value = await probe();
      if (value) return value;
    } catch (error) {
      last = error;
    }
    await sleep(150);
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${last.message}` : ""}`);
}

/**
 * Starts a display and the driver once for a test file; `close()` stops both. `extraEnv` adds to the
 * app's environment (a variable set to `undefined` is taken out); `application` is the binary the
 * windows start (the installed one, for the package's test).
 */
export async function startDriver(extraEnv = {}, application = app) {
  for (const needed of [application, tauriDriver, "/usr/bin/WebKitWebDriver", "/usr/bin/Xvfb"]) {
    if (!existsSync(needed)) throw new Error(`${needed} is missing: run \`make test\`, which builds and installs it`);
  }
  const display = freeDisplay();
  const xvfb = spawn("Xvfb", [display, "-screen", "0", "1400x900x24", "-nolisten", "tcp"], { stdio: "ignore" });
  await until("Xvfb", 10_000, () => existsSync(`/tmp/.X11-unix/X${display.slice(1)}`));
  const port = await freePort();
  const nativePort = await freePort();
  const scratch = mkdtempSync(path.join(tmpdir(), "deepread-desktop-"));
  const env = {
    ...process.env,
    DISPLAY: display,
    WEBKIT_DISABLE_COMPOSITING_MODE: "1",
    // A cache of the test's own, and no model: born-digital pages are read through their text layer.
    DEEPREAD_CACHE: path.join(scratch, "cache.sqlite3"),
    DEEPREAD_MODEL: path.join(scratch, "no-model"),
    // The webview's storage (the panes' layout) of the test's own, not the person's or another test's.
    XDG_DATA_HOME: path.join(scratch, "data"),
    XDG_CONFIG_HOME: path.join(scratch, "config"),
    XDG_CACHE_HOME: path.join(scratch, "cache"),
    ...extraEnv,
  };
  for (const [name, value] of Object.entries(env)) if (value === undefined) delete env[name];
  const driver = spawn(
    tauriDriver,
    ["--port", String(port), "--native-port", String(nativePort), "--native-driver", "/usr/bin/WebKitWebDriver"],
    { env, stdio: ["ignore", "inherit", "inherit"] },
  );
  const base = `http://127.0.0.1:${port}`;
  await until("tauri-driver", 15_000, async () => (await fetch(`${base}/status`)).ok);
  return {
    base,
    application,
    /** The X display the window is on, for other X clients of a test. */
    display,
    close() {
      driver.kill("SIGTERM");
      xvfb.kill("SIGTERM");
      rmSync(scratch, { recursive: true, force: true });
    },
  };
}

async function call(base, method, route, body) {
  const response = await fetch(`${base}${route}`, {
    method,
    headers: { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await response.json();
  if (!response.ok) throw new Error(`${method} ${route}: ${JSON.stringify(json.value ?? json)}`);
  return json.value;
}

// WebDriver's key codes for the modifiers.
const CTRL = "\uE009";
const SHIFT = "\uE008";

/** `key` pressed with `modifier` held. */
function chord(modifier, key) {
  return [
    { type: "keyDown", value: modifier },
    { type: "keyDown", value: key },
    { type: "keyUp", value: key },
    { type: "keyUp", value: modifier },
  ];
}

/** One app window, launched with `args` (files to open). */
export async function openApp(driver, args) {
  const value = await call(driver.base, "POST", "/session", {
    capabilities: { alwaysMatch: { "tauri:options": { application: driver.application, args } } },
  });
  const id = value.sessionId;
  const route = (r) => `/session/${id}${r}`;
  const keyboard = (actions) =>
    call(driver.base, "POST", route("/actions"), { actions: [{ type: "key", id: "keyboard", actions }] });
  const session = {
    run: (script, ...scriptArgs) =>
      call(driver.base, "POST", route("/execute/sync"), { script, args: scriptArgs }),
    waitFor: (what, script, timeoutMs = 20_000) => until(what, timeoutMs, () => session.run(script)),
    /** A real pointer click at a point of the viewport (CSS pixels). */
    clickAt: (x, y) =>
      call(driver.base, "POST", route("/actions"), {
        actions: [
          {
            type: "pointer",
            id: "mouse",
            parameters: { pointerType: "mouse" },
            actions: [
              { type: "pointerMove", origin: "viewport", x: Math.round(x), y: Math.round(y) },
              { type: "pointerDown", button: 0 },
              { type: "pointerUp", button: 0 },
            ],
          },
        ],
      }),
    /** The middle of the element `selector` finds, in viewport CSS pixels, once scrolled into view. */
    middleOf: async (selector) => {
      const at = await session.run(`
        const element = document.querySelector(${JSON.stringify(selector)});
        if (!element) return null;
        element.scrollIntoView({ block: "center" });
        const r = element.getBoundingClientRect();
        return { x: r.left + r.width / 2, y: r.top + r.height / 2, visible: r.width > 0 && r.height > 0 };`);
      if (!at?.visible) throw new Error(`${selector} is not on screen`);
      return at;
    },
    /** A real pointer click on the middle of the element `selector` finds, scrolled into view first. */
    clickOn: async (selector) => {
      const at = await session.middleOf(selector);
      await session.clickAt(at.x, at.y);
    },
    /** A real pointer double-click on the middle of the element `selector` finds, scrolled into view first. */
    doubleClickOn: async (selector) => {
      const middle = await session.middleOf(selector);
      const at = { x: Math.round(middle.x), y: Math.round(middle.y) };
      const click = [
        { type: "pointerDown", button: 0 },
        { type: "pointerUp", button: 0 },
      ];
      await call(driver.base, "POST", route("/actions"), {
        actions: [
          {
            type: "pointer",
            id: "mouse",
            parameters: { pointerType: "mouse" },
            actions: [{ type: "pointerMove", origin: "viewport", x: at.x, y: at.y }, ...click, ...click],
          },
        ],
      });
    },
    /** A real pointer drag from one viewport point to another (CSS pixels). */
    drag: (from, to) =>
      call(driver.base, "POST", route("/actions"), {
        actions: [
          {
            type: "pointer",
            id: "mouse",
            parameters: { pointerType: "mouse" },
            actions: [
              { type: "pointerMove", origin: "viewport", x: Math.round(from.x), y: Math.round(from.y) },
              { type: "pointerDown", button: 0 },
              { type: "pointerMove", origin: "viewport", x: Math.round((from.x + to.x) / 2), y: Math.round(to.y), duration: 100 },
              { type: "pointerMove", origin: "viewport", x: Math.round(to.x), y: Math.round(to.y), duration: 100 },
              { type: "pointerUp", button: 0 },
            ],
          },
        ],
      }),
    /** A real wheel turn over a viewport point (CSS pixels): `deltaY` < 0 scrolls up. */
    wheel: (x, y, deltaY) =>
      call(driver.base, "POST", route("/actions"), {
        actions: [
          {
            type: "wheel",
            id: "wheel",
            actions: [{ type: "scroll", origin: "viewport", x: Math.round(x), y: Math.round(y), deltaX: 0, deltaY, duration: 100 }],
          },
        ],
      }),
    /** Presses `key` with Ctrl held, as a person types a shortcut. */
    pressCtrl: (key) => keyboard(chord(CTRL, key)),
    /** Types `text` key by key into whatever has the focus. */
    type: (text) => keyboard([...text].flatMap((c) => [{ type: "keyDown", value: c }, { type: "keyUp", value: c }])),
    /** Presses `key` with Shift held (Shift+Enter steps back through search matches). */
    pressShift: (key) => keyboard(chord(SHIFT, key)),
    screenshot: async () => Buffer.from(await call(driver.base, "GET", route("/screenshot")), "base64"),
    /** A PNG of the first element `selector` finds, as drawn. */
    elementScreenshot: async (selector) => {
      const found = await call(driver.base, "POST", route("/element"), { using: "css selector", value: selector });
      const element = Object.values(found)[0];
      return Buffer.from(await call(driver.base, "GET", route(`/element/${element}/screenshot`)), "base64");
    },
    close: () => call(driver.base, "DELETE", route("")),
  };
  return session;
}

/** Page count as poppler reports it: an independent count to hold ours against. */
export function popplerPageCount(file) {
  const out = spawnSync("pdfinfo", [file], { encoding: "utf8" });
  const match = /^Pages:\s+(\d+)/m.exec(out.stdout);
  if (!match) throw new Error(`pdfinfo could not read ${file}: ${out.stderr}`);
  return Number(match[1]);
}

/** Page `page` (1-based) size in points as poppler reports it: `{ width, height }`. */
export function popplerPageSize(file, page) {
  const out = spawnSync("pdfinfo", ["-f", String(page), "-l", String(page), file], { encoding: "utf8" });
  const match = /^Page\s+\d+ size:\s+([\d.]+) x ([\d.]+) pts/m.exec(out.stdout);
  if (!match) throw new Error(`pdfinfo could not size page ${page} of ${file}: ${out.stderr}`);
  return { width: Number(match[1]), height: Number(match[2]) };
}
