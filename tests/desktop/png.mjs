// Decodes a PNG far enough to know it is whole: signature, chunk CRCs, IHDR, and the inflated image
// data's exact length for its size and colour type. Enough to tell an image from a truncated file.
import { readFileSync } from "node:fs";
import { crc32, inflateSync } from "node:zlib";

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
/** Bytes per pixel at 8 bits a sample, by PNG colour type. */
const CHANNELS = { 0: 1, 2: 3, 4: 2, 6: 4 };

/** `{ width, height }` of the PNG at `file`; throws if it does not decode. */
export function decodePng(file) {
  const bytes = readFileSync(file);
  if (!bytes.subarray(0, 8).equals(SIGNATURE)) throw new Error(`${file} is not a PNG`);
  let offset = 8;
  let header;
  const data = [];
  while (offset < bytes.length) {
    const length = bytes.readUInt32BE(offset);
    const type = bytes.toString("latin1", offset + 4, offset + 8);
    const body = bytes.subarray(offset + 8, offset + 8 + length);
    const crc = bytes.readUInt32BE(offset + 8 + length);
    if (crc32(bytes.subarray(offset + 4, offset + 8 + length)) !== crc) throw new Error(`${file}: bad ${type} CRC`);
    if (type === "IHDR") {
      header = { width: body.readUInt32BE(0), height: body.readUInt32BE(4), depth: body[8], colour: body[9] };
    } else if (type === "IDAT") {
      data.push(body);
    } else if (type === "IEND") {
      break;
    }
    offset += 12 + length;
  }
  if (!header || header.depth !== 8 || !(header.colour in CHANNELS)) throw new Error(`${file}: unexpected header`);
  const pixels = inflateSync(Buffer.concat(data));
  const expected = header.height * (1 + header.width * CHANNELS[header.colour]);
  if (pixels.length !== expected) throw new Error(`${file}: ${pixels.length} bytes of pixels, expected ${expected}`);
  return { width: header.width, height: header.height };
}
