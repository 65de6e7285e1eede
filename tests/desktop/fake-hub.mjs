// A stand-in for the Hugging Face hub on 127.0.0.1: serves a model folder in the hub's URL layout, with the
// headers the hub sends (commit, etag, linked size), Range requests, and the weights through a redirect, as
// the hub does with its CDN. Its transfers are paced so that a download lasts long enough to be watched.
import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

const CHUNK = 256 * 1024;

/** The hub's etag of a file: the sha256 for LFS files (the weights), the git blob sha1 for the rest. */
function describe(name, bytes) {
  const lfs = name.endsWith(".safetensors");
  const etag = lfs
    ? createHash("sha256").update(bytes).digest("hex")
    : createHash("sha1").update(`blob ${bytes.length}\0`).update(bytes).digest("hex");
  return { name, bytes, lfs, etag };
}

/**
 * Serves `dir` as `repo` at commit `commit`; every file's bytes take about `seconds` in all to send.
 * Returns `{ endpoint, requests, close() }`; `requests` lists "METHOD path range" lines as they come.
 */
export async function startFakeHub({ dir, repo, commit, seconds = 6 }) {
  const files = new Map(
    readdirSync(dir).map((name) => [name, describe(name, readFileSync(path.join(dir, name)))]),
  );
  const totalBytes = [...files.values()].reduce((sum, f) => sum + f.bytes.length, 0);
  const pauseMs = (seconds * 1000 * CHUNK) / Math.max(totalBytes, 1);
  const requests = [];

  const server = createServer(async (request, response) => {
    const url = new URL(request.url, "http://127.0.0.1");
    requests.push(`${request.method} ${url.pathname} ${request.headers.range ?? ""}`.trim());
    if (url.pathname === `/api/models/${repo}/revision/${commit}` || url.pathname === `/api/models/${repo}/revision/main`) {
      response.writeHead(200, { "content-type": "application/json" });
      response.end(JSON.stringify({ id: repo, sha: commit, siblings: [...files.keys()].map((rfilename) => ({ rfilename })) }));
      return;
    }
    const resolve = new RegExp(`^/${repo}/resolve/([^/]+)/(.+)$`).exec(url.pathname);
    const cdn = /^\/cdn\/(.+)$/.exec(url.pathname);
    const file = files.get(decodeURIComponent(resolve?.[2] ?? cdn?.[1] ?? ""));
    if (!file) {
      response.writeHead(404, { "x-error-code": "EntryNotFound" });
      response.end("Entry not found");
      return;
    }
    if (resolve && file.lfs) {
      // The hub answers for an LFS file with its metadata and a redirect to the CDN.
      response.writeHead(302, {
        location: `/cdn/${encodeURIComponent(file.name)}`,
        "x-repo-commit": commit,
        "x-linked-etag": `"${file.etag}"`,
        "x-linked-size": String(file.bytes.length),
        etag: `"${file.etag}"`,
      });
      response.end();
      return;
    }
    await send(request, response, file, commit, pauseMs);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    endpoint: `http://127.0.0.1:${server.address().port}`,
    requests,
    totalBytes,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

async function send(request, response, file, commit, pauseMs) {
  const range = /^bytes=(\d+)-$/.exec(request.headers.range ?? "");
  const start = range ? Number(range[1]) : 0;
  const body = file.bytes.subarray(start);
  response.writeHead(range ? 206 : 200, {
    "content-length": String(body.length),
    "x-repo-commit": commit,
    etag: `"${file.etag}"`,
    ...(range ? { "content-range": `bytes ${start}-${file.bytes.length - 1}/${file.bytes.length}` } : {}),
  });
  if (request.method === "HEAD") {
    response.end();
    return;
  }
  for (let at = 0; at < body.length && !response.destroyed; at += CHUNK) {
    response.write(body.subarray(at, at + CHUNK));
    await sleep(pauseMs);
  }
  response.end();
}
