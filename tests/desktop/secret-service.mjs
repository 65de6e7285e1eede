// A system keyring of the test's own: a private D-Bus session bus with GNOME Keyring answering the Secret
// Service API on it, its login keyring created and unlocked, as a desktop session has it after log-in.
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

/** The address of the bus `daemon` prints on its first line. */
async function busAddress(daemon) {
  let printed = "";
  for await (const data of daemon.stdout) {
    printed += data;
    if (printed.includes("\n")) return printed.split("\n")[0].trim();
  }
  throw new Error("dbus-daemon exited before printing its address");
}

function dbusSend(env, destination, objectPath, method, ...args) {
  const reply = spawnSync("dbus-send", ["--session", "--print-reply", `--dest=${destination}`, objectPath, method, ...args], {
    env,
    encoding: "utf8",
  });
  return reply.stdout;
}

/** The login keyring's object path, once GNOME Keyring has created it and made it the default. Asks only
 *  once the daemon owns the service's name, which it takes when it is ready. */
function defaultCollection(env) {
  const owned = dbusSend(env, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus.NameHasOwner",
    "string:org.freedesktop.secrets");
  if (!owned.includes("boolean true")) return undefined;
  const alias = dbusSend(env, "org.freedesktop.secrets", "/org/freedesktop/secrets",
    "org.freedesktop.Secret.Service.ReadAlias", "string:default");
  return /object path "(\/org\/freedesktop\/secrets\/collection\/[^"]+)"/.exec(alias)?.[1];
}

/** A session bus that starts no services on demand: only what the test starts itself answers on it. */
function busConfig(dir) {
  return `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:dir=${dir}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default"><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/><allow own="*"/></policy>
</busconfig>
`;
}

/** Starts the bus and the keyring; `env` is what the app needs to reach them; `close()` stops both. */
export async function startSecretService() {
  const home = mkdtempSync(path.join(tmpdir(), "deepread-keyring-"));
  const runtime = path.join(home, "run");
  mkdirSync(runtime, { mode: 0o700 });
  const config = path.join(home, "session.conf");
  writeFileSync(config, busConfig(runtime));
  const base = { ...process.env, HOME: home, XDG_DATA_HOME: path.join(home, "data"), XDG_RUNTIME_DIR: runtime };
  // Its complaint that it may not raise its file limit (as an unprivileged bus) is left out.
  const bus = spawn("dbus-daemon", [`--config-file=${config}`, "--nofork", "--print-address=1"], {
    env: base,
    stdio: ["ignore", "pipe", "ignore"],
  });
  const env = { DBUS_SESSION_BUS_ADDRESS: await busAddress(bus) };
  // --unlock reads the login password from standard input, and creates the login keyring with it.
  const keyring = spawn("gnome-keyring-daemon", ["--foreground", "--unlock", "--components=secrets"], {
    env: { ...base, ...env },
    stdio: ["pipe", "ignore", "inherit"],
  });
  keyring.stdin.end("login password of the test");
  const close = () => {
    keyring.kill();
    bus.kill();
    rmSync(home, { recursive: true, force: true });
  };
  for (let waited = 0; !defaultCollection({ ...base, ...env }); waited += 100) {
    if (waited > 10_000) {
      close();
      throw new Error("GNOME Keyring did not open its login keyring within 10 s");
    }
    await sleep(100);
  }
  return { env, close };
}
