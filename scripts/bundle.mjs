// Packages the built app with Tauri's bundler: `node scripts/bundle.mjs --profile release --pdfium PATH
// --bundles deb,appimage` writes target/<profile>/bundle/<kind>/ (or under $CARGO_TARGET_DIR): the window
// (`deepread-app`), the command line (`deepread`) and PDFium inside.
//
// Tauri's command line wants tauri.conf.json beside the app crate's Cargo.toml (src-tauri/), and ours is
// at the repository root by design (architecture.md). So the bundler is given the root config with every
// path made absolute, written into src-tauri/ for the run and removed after it. Tauri adds WebKitGTK and
// GTK to the .deb's dependencies itself; tauri.conf.json names the rest (the fonts). The binary is not
// patched with the bundle type: that is for Tauri's updater, which DeepRead does not use, and it would
// rewrite the binary the desktop tests start.
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";

const root = path.resolve(import.meta.dirname, "..");
const { values: options } = parseArgs({
  options: {
    profile: { type: "string", default: "release" },
    pdfium: { type: "string" },
    bundles: { type: "string", default: "deb,appimage" },
  },
});
if (!options.pdfium) fail("--pdfium PATH is required");

// Where cargo put the binaries; the bundler looks in the same place.
const built = path.join(path.resolve(root, process.env.CARGO_TARGET_DIR ?? "target"), options.profile);
const pdfium = path.resolve(options.pdfium);
for (const file of [path.join(built, "deepread-app"), path.join(built, "deepread"), pdfium]) {
  if (!existsSync(file)) fail(`${file} is missing: build the app and the command line first`);
}

const config = JSON.parse(readFileSync(path.join(root, "tauri.conf.json"), "utf8"));
const cli = path.join(built, "deepread");
config.build.frontendDist = path.join(root, config.build.frontendDist);
config.bundle.icon = config.bundle.icon.map((icon) => path.join(root, icon));
// PDFium goes to the resource folder (/usr/lib/DeepRead/pdfium/), where PACKAGED_PDFIUM in
// crates/pdf/src/pdfium.rs looks for it; the command line goes beside the app.
config.bundle.resources = { [pdfium]: "pdfium/libpdfium.so" };
config.bundle.linux.deb.files = { "/usr/bin/deepread": cli };
config.bundle.linux.appimage = { ...config.bundle.linux.appimage, files: { "/usr/bin/deepread": cli } };

const staged = path.join(root, "src-tauri/tauri.conf.json");
if (existsSync(staged)) fail(`${staged} exists: remove it (the root tauri.conf.json is the app's config)`);
writeFileSync(staged, JSON.stringify(config, null, 2));
try {
  const tauri = path.join(root, "ui/node_modules/.bin/tauri");
  const args = ["bundle", "--ci", "--no-binary-patching", "--bundles", options.bundles, ...(options.profile === "debug" ? ["--debug"] : [])];
  const result = spawnSync(tauri, args, {
    cwd: root,
    stdio: "inherit",
    env: { ...process.env, TAURI_APP_PATH: path.join(root, "src-tauri"), TAURI_FRONTEND_PATH: path.join(root, "ui") },
  });
  if (result.status !== 0) fail(`tauri bundle ${args.join(" ")} failed (${result.status ?? result.signal})`);
} finally {
  rmSync(staged, { force: true });
}

function fail(message) {
  console.error(`bundle: ${message}`);
  process.exit(1);
}
