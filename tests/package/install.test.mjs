// The .deb as a person installs it: apt installs the package that `make test-package` built, every library
// the installed binaries load comes with a package the .deb depends on, the installed command line and
// window find the PDFium the package brought (no DEEPREAD_PDFIUM), and the window opens a PDF.
// Installing needs root, or sudo without a password.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fixtures, openApp, repoRoot, startDriver } from "../desktop/session.mjs";

const config = JSON.parse(readFileSync(path.join(repoRoot, "tauri.conf.json"), "utf8"));
const deb = path.join(repoRoot, `target/debug/bundle/deb/${config.productName}_${config.version}_amd64.deb`);
const installedApp = "/usr/bin/deepread-app";
const installedCli = "/usr/bin/deepread";
const packagedPdfium = `/usr/lib/${config.productName}/pdfium/libpdfium.so`;
const paper = path.join(fixtures, "pdfs/born_digital_papers_math_tables/pdfjs__tracemonkey.pdf");
const title = "Trace-based Just-in-Time Type Specialization for Dynamic Languages";

function run(command, args, options = {}) {
  const result = spawnSync(command, args, { encoding: "utf8", ...options });
  if (result.status !== 0) {
    throw new Error(`${command} ${args.join(" ")} failed (${result.status}): ${result.stderr}${result.stdout}`);
  }
  return result.stdout;
}

function asRoot(command, args) {
  const root = process.getuid() === 0;
  return run(root ? command : "sudo", root ? args : ["-n", command, ...args], {
    env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
  });
}

/** The environment of a person who installed the package: nothing of the source checkout's. */
function userEnv(extra = {}) {
  const env = { ...process.env, ...extra };
  delete env.DEEPREAD_PDFIUM;
  delete env.LD_LIBRARY_PATH;
  return env;
}

let packageName;
before(() => {
  assert.ok(existsSync(deb), `${deb} is missing: run \`make test-package\`, which builds it`);
  packageName = run("dpkg-deb", ["--field", deb, "Package"]).trim();
  // apt, not dpkg: it must find every dependency the package names.
  asRoot("apt-get", ["install", "--yes", "--quiet", "--no-install-recommends", deb]);
});
after(() => {
  if (packageName) asRoot("apt-get", ["remove", "--yes", "--quiet", packageName]);
});

test("the package holds the app, the command line, PDFium and a menu entry", () => {
  const files = new Set(run("dpkg", ["--listfiles", packageName]).split("\n"));
  for (const file of [installedApp, installedCli, packagedPdfium]) assert.ok(files.has(file), `${file} is not in the package`);
  const desktop = [...files].find((file) => file.startsWith("/usr/share/applications/") && file.endsWith(".desktop"));
  assert.ok(desktop, "no menu entry");
  const entry = readFileSync(desktop, "utf8");
  assert.match(entry, /^Exec=deepread-app\b/m);
  assert.match(entry, new RegExp(`^Name=${config.productName}$`, "m"));
  const icon = entry.match(/^Icon=(.+)$/m)?.[1];
  assert.ok(icon && [...files].some((file) => file.includes("/icons/") && file.includes(icon)), `icon ${icon} is not installed`);
});

/** The Debian package that owns each file, looked up on both sides of the /usr merge in one dpkg call. */
function owners(files) {
  const variants = files.flatMap((file) => [file, file.startsWith("/usr/") ? file.slice(4) : `/usr${file}`]);
  // dpkg exits 1 when some variant is nobody's, which half of them are.
  const found = spawnSync("dpkg", ["--search", ...variants], { encoding: "utf8" }).stdout;
  const owner = new Map();
  for (const line of found.split("\n")) {
    const match = line.match(/^([^:,]+)(?::\w+)?: (\/.+)$/);
    if (match) owner.set(match[2], match[1]);
  }
  return new Map(files.map((file, i) => [file, owner.get(variants[2 * i]) ?? owner.get(variants[2 * i + 1])]));
}

test("every library the installed binaries load comes with a package the .deb depends on", () => {
  const closure = new Set(
    run("apt-cache", [
      "depends", "--recurse", "--installed", "--no-recommends", "--no-suggests", "--no-conflicts",
      "--no-breaks", "--no-replaces", "--no-enhances", packageName,
    ])
      .split("\n")
      .filter((line) => line && !line.startsWith(" "))
      .map((name) => name.replace(/:amd64$/, "")),
  );
  const libraries = new Set();
  for (const binary of [installedApp, installedCli, packagedPdfium]) {
    const linked = run("ldd", [binary], { env: userEnv() })
      .split("\n")
      .map((line) => line.match(/=> (\/\S+)/)?.[1])
      .filter(Boolean);
    assert.ok(linked.some((library) => /\/libc\.so/.test(library)), `ldd ${binary} found no libc: ${linked}`);
    for (const library of linked) libraries.add(library);
  }
  assert.ok([...libraries].some((library) => /libwebkit2gtk-4\.1/.test(library)), "the app does not link WebKitGTK");
  const missing = [...owners([...libraries])].filter(([, pkg]) => !closure.has(pkg));
  assert.deepEqual(missing, [], "libraries whose packages the .deb does not pull in");
});

test("the installed command line reads a PDF with the PDFium the package brought", () => {
  const out = mkdtempSync(path.join(tmpdir(), "deepread-package-"));
  try {
    const result = spawnSync(installedCli, ["convert", paper, "--engine", "text", "--out", out, "--cache", path.join(out, "cache.sqlite3")], {
      encoding: "utf8",
      cwd: out,
      env: userEnv({ RUST_LOG: "deepread_pdf=info" }),
    });
    assert.equal(result.status, 0, result.stderr);
    // Without colour codes: tracing colours its fields when it thinks stderr is a terminal.
    assert.match(result.stderr.replace(/\x1b\[[0-9;]*m/g, ""), /bound PDFium library=\/usr\/bin\/\.\.\/lib\/DeepRead\/pdfium\/libpdfium\.so/);
    const markdown = readdirSync(out).filter((name) => name.endsWith(".md"));
    assert.equal(markdown.length, 1, `wrote ${readdirSync(out)}`);
    assert.ok(readFileSync(path.join(out, markdown[0]), "utf8").includes(title));
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});

test("the installed window opens a PDF and reads it", async () => {
  const driver = await startDriver({ DEEPREAD_PDFIUM: undefined, LD_LIBRARY_PATH: undefined }, installedApp);
  try {
    const app = await openApp(driver, [paper]);
    try {
      const width = await app.waitFor(
        "the first page to render",
        `const img = document.querySelector(".page-image");
         return img !== null && img.complete && img.naturalWidth > 0 ? img.naturalWidth : 0;`,
      );
      assert.ok(width >= 500, `the page image is ${width} px wide`);
      const read = await app.waitFor(
        "the paper's title in page 1's Markdown",
        `const page = document.querySelector('#markdown-pane [data-page="0"]');
         return page !== null && page.textContent.includes(${JSON.stringify(title)});`,
      );
      assert.ok(read);
    } finally {
      await app.close();
    }
  } finally {
    driver.close();
  }
});
