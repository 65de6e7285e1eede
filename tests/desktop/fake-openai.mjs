// A stand-in for a vLLM server of DeepSeek-OCR-2 on 127.0.0.1: `/v1/models`, and streamed chat completions
// in the chunk shapes vLLM sends (a role chunk, small text deltas, a finish chunk, a usage chunk, `[DONE]`),
// behind a bearer key. Each request's page image is decoded and matched to the page of the document it
// shows, whose recorded DeepSeek-OCR output is the reply, streamed at a model's pace.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { decodePngPixels } from "./png.mjs";

/** A page's look at 24 × 24: the mean grey of each cell, whatever the resolution it was drawn at. */
const GRID = 24;

function fingerprint({ width, height, channels, pixels }) {
  const sums = new Float64Array(GRID * GRID);
  const counts = new Float64Array(GRID * GRID);
  for (let y = 0; y < height; y++) {
    const row = Math.min(GRID - 1, Math.floor((y * GRID) / height));
    for (let x = 0; x < width; x++) {
      const cell = row * GRID + Math.min(GRID - 1, Math.floor((x * GRID) / width));
      const at = (y * width + x) * channels;
      let grey = 0;
      for (let c = 0; c < Math.min(channels, 3); c++) grey += pixels[at + c];
      sums[cell] += grey / Math.min(channels, 3);
      counts[cell] += 1;
    }
  }
  return sums.map((sum, i) => sum / counts[i]);
}

/** Every page of `pdf` drawn by poppler (not by the app's PDFium), as fingerprints. */
function pageFingerprints(pdf) {
  const dir = mkdtempSync(path.join(tmpdir(), "deepread-fake-openai-"));
  try {
    const run = spawnSync("pdftoppm", ["-png", "-gray", "-r", "30", pdf, path.join(dir, "page")]);
    if (run.status !== 0) throw new Error(`pdftoppm failed: ${run.stderr}`);
    return readdirSync(dir)
      .sort()
      .map((name) => fingerprint(decodePngPixels(readFileSync(path.join(dir, name)), name)));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function nearestPage(pages, print) {
  let best = { page: -1, distance: Infinity };
  pages.forEach((page, index) => {
    const distance = page.reduce((sum, v, i) => sum + (v - print[i]) ** 2, 0);
    if (distance < best.distance) best = { page: index, distance };
  });
  return best.page;
}

/** vLLM's deltas are a token or two: about four characters of text. */
function deltas(text) {
  return text.match(/[\s\S]{1,4}/g) ?? [];
}

function chunk(model, choice, extra = {}) {
  return `data: ${JSON.stringify({
    id: "chatcmpl-fake",
    object: "chat.completion.chunk",
    created: 1764115200,
    model,
    choices: choice ? [{ index: 0, logprobs: null, finish_reason: null, ...choice }] : [],
    ...extra,
  })}\n\n`;
}

/**
 * Serves `pdf`'s pages, whose recorded outputs are `outputs[i]`, as `model`, to clients that send `apiKey`.
 * Returns `{ endpoint, requests, close() }`; `requests` lists `{ path, authorization, page, prompt, body }`.
 */
export async function startFakeOpenAi({ pdf, outputs, model, apiKey, pauseMs = 1 }) {
  const pages = pageFingerprints(pdf);
  if (pages.length !== outputs.length) throw new Error(`${pages.length} pages but ${outputs.length} outputs`);
  const requests = [];

  const server = createServer(async (request, response) => {
    const seen = { path: request.url, authorization: request.headers.authorization ?? null };
    requests.push(seen);
    if (request.headers.authorization !== `Bearer ${apiKey}`) {
      response.writeHead(401, { "content-type": "application/json" });
      response.end(JSON.stringify({ error: { message: "Invalid API key", type: "invalid_request_error", code: 401 } }));
      return;
    }
    if (request.method === "GET" && request.url === "/v1/models") {
      response.writeHead(200, { "content-type": "application/json" });
      response.end(JSON.stringify({ object: "list", data: [{ id: model, object: "model", owned_by: "vllm" }] }));
      return;
    }
    if (request.method !== "POST" || request.url !== "/v1/chat/completions") {
      response.writeHead(404, { "content-type": "application/json" });
      response.end(JSON.stringify({ error: { message: `no route ${request.method} ${request.url}` } }));
      return;
    }
    const body = JSON.parse(Buffer.concat(await request.toArray()).toString("utf8"));
    const content = body.messages[0].content;
    const url = content.find((part) => part.type === "image_url").image_url.url;
    const png = Buffer.from(url.slice(url.indexOf(",") + 1), "base64");
    seen.page = nearestPage(pages, fingerprint(decodePngPixels(png, "the request's image")));
    seen.prompt = content.find((part) => part.type === "text").text;
    seen.body = { ...body, messages: undefined };
    await stream(response, model, outputs[seen.page], pauseMs);
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    endpoint: `http://127.0.0.1:${server.address().port}/v1`,
    requests,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

async function stream(response, model, text, pauseMs) {
  response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  response.write(chunk(model, { delta: { role: "assistant", content: "" } }));
  const pieces = deltas(text);
  for (const piece of pieces) {
    if (response.destroyed) return;
    response.write(chunk(model, { delta: { content: piece } }));
    await sleep(pauseMs);
  }
  response.write(chunk(model, { delta: {}, finish_reason: "stop", stop_reason: null }));
  const usage = { prompt_tokens: 1131, completion_tokens: pieces.length, total_tokens: 1131 + pieces.length };
  response.write(chunk(model, null, { usage }));
  response.end("data: [DONE]\n\n");
}
