// Decodes 8-bit, non-interlaced PNGs (what the app and the image crate write): signature, chunk CRCs, IHDR,
// the inflated image data's exact length, and the rows' filters undone. Enough to tell an image from a
// truncated file, and to look at the pixels of a page the app sent to a server.
import { readFileSync } from "node:fs";
import { crc32, inflateSync } from "node:zlib";

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
/** Bytes per pixel at 8 bits a sample, by PNG colour type. */
const CHANNELS = { 0: 1, 2: 3, 4: 2, 6: 4 };

/** `{ width, height }` of the PNG at `file`; throws if it does not decode. */
export function decodePng(file) {
  const { width, height } = parsePng(readFileSync(file), file);
  return { width, height };
}

/** `{ width, height, channels, pixels }` of PNG bytes, `pixels` row after row without filter bytes. */
export function decodePngPixels(bytes, name = "the PNG") {
  const { width, height, channels, data } = parsePng(bytes, name);
  return { width, height, channels, pixels: unfilter(data, width * channels, height, channels) };
}

function parsePng(bytes, name) {
  if (!bytes.subarray(0, 8).equals(SIGNATURE)) throw new Error(`${name} is not a PNG`);
  let offset = 8;
  let header;
  const data = [];
  while (offset < bytes.length) {
    const length = bytes.readUInt32BE(offset);
    const type = bytes.toString("latin1", offset + 4, offset + 8);
    const body = bytes.subarray(offset + 8, offset + 8 + length);
    const crc = bytes.readUInt32BE(offset + 8 + length);
    if (crc32(bytes.subarray(offset + 4, offset + 8 + length)) !== crc) throw new Error(`${name}: bad ${type} CRC`);
    if (type === "IHDR") {
      header = { width: body.readUInt32BE(0), height: body.readUInt32BE(4), depth: body[8], colour: body[9], interlace: body[12] };
    } else if (type === "IDAT") {
      data.push(body);
    } else if (type === "IEND") {
      break;
    }
    offset += 12 + length;
  }
  if (!header || header.depth !== 8 || !(header.colour in CHANNELS) || header.interlace !== 0) {
    throw new Error(`${name}: unexpected header`);
  }
  const channels = CHANNELS[header.colour];
  const pixels = inflateSync(Buffer.concat(data));
  const expected = header.height * (1 + header.width * channels);
  if (pixels.length !== expected) throw new Error(`${name}: ${pixels.length} bytes of pixels, expected ${expected}`);
  return { width: header.width, height: header.height, channels, data: pixels };
}

/** Undoes the per-row filters (None, Sub, Up, Average, Paeth) of the PNG specification. */
function unfilter(data, stride, height, bpp) {
  const out = Buffer.alloc(stride * height);
  for (let y = 0; y < height; y++) {
    const filter = data[y * (stride + 1)];
    const row = data.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    const at = y * stride;
    for (let x = 0; x < stride; x++) {
      const left = x >= bpp ? out[at + x - bpp] : 0;
      const up = y > 0 ? out[at - stride + x] : 0;
      const upLeft = y > 0 && x >= bpp ? out[at - stride + x - bpp] : 0;
      const predictor = [0, left, up, (left + up) >> 1, paeth(left, up, upLeft)][filter];
      if (predictor === undefined) throw new Error(`unknown PNG filter ${filter} on row ${y}`);
      out[at + x] = (row[x] + predictor) & 0xff;
    }
  }
  return out;
}

function paeth(a, b, c) {
  const p = a + b - c;
  const pa = Math.abs(p - a);
  const pb = Math.abs(p - b);
  const pc = Math.abs(p - c);
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}
