/**
 * Draws the app icons (a rounded square with a check mark) and writes them as PNGs to
 * public/icons/. Dependency-free on purpose: the PNGs are committed, and regenerating them should
 * need nothing but Node. Run: node pwa/scripts/icons.mjs
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { deflateSync } from "node:zlib";

const OUT = join(import.meta.dirname, "..", "public", "icons");
const BRAND = [47, 84, 235];
const WHITE = [255, 255, 255];
const SAMPLES = 4; // per axis: 16 samples per pixel smooth the edges

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(bytes) {
  let c = 0xffffffff;
  for (const b of bytes) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function chunk(type, data) {
  const body = Buffer.concat([Buffer.from(type, "ascii"), data]);
  const out = Buffer.alloc(body.length + 8);
  out.writeUInt32BE(data.length, 0);
  body.copy(out, 4);
  out.writeUInt32BE(crc32(body), body.length + 4);
  return out;
}

/** RGBA pixels (row-major, 4 bytes each) → PNG file bytes. */
function encodePng(width, height, rgba) {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 6, 0, 0, 0], 8); // 8-bit depth, RGBA, deflate, no filter method, no interlace
  const raw = Buffer.alloc((width * 4 + 1) * height);
  for (let y = 0; y < height; y++) {
    raw[y * (width * 4 + 1)] = 0; // filter: none
    rgba.copy(raw, y * (width * 4 + 1) + 1, y * width * 4, (y + 1) * width * 4);
  }
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", header),
    chunk("IDAT", deflateSync(raw, { level: 9 })),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}

function insideRoundedSquare(x, y, inset, radius) {
  const lo = inset + radius;
  const hi = 1 - inset - radius;
  const dx = Math.max(lo - x, 0, x - hi);
  const dy = Math.max(lo - y, 0, y - hi);
  return dx * dx + dy * dy <= radius * radius && x >= inset && x <= 1 - inset && y >= inset && y <= 1 - inset;
}

function distanceToSegment(px, py, [ax, ay], [bx, by]) {
  const t = Math.max(
    0,
    Math.min(1, ((px - ax) * (bx - ax) + (py - ay) * (by - ay)) / ((bx - ax) ** 2 + (by - ay) ** 2)),
  );
  return Math.hypot(px - (ax + t * (bx - ax)), py - (ay + t * (by - ay)));
}

/** The check mark, in unit coordinates, scaled about the centre by `scale`. */
function onCheck(x, y, scale) {
  const points = [
    [0.27, 0.53],
    [0.43, 0.68],
    [0.74, 0.34],
  ].map(([px, py]) => [0.5 + (px - 0.5) * scale, 0.5 + (py - 0.5) * scale]);
  const half = 0.055 * scale;
  return distanceToSegment(x, y, points[0], points[1]) <= half || distanceToSegment(x, y, points[1], points[2]) <= half;
}

/** `maskable`: full-bleed background and the glyph inside the 80 % safe zone the OS may crop to. */
function drawIcon(size, maskable) {
  const rgba = Buffer.alloc(size * size * 4);
  for (let py = 0; py < size; py++) {
    for (let px = 0; px < size; px++) {
      let bg = 0;
      let fg = 0;
      for (let sy = 0; sy < SAMPLES; sy++) {
        for (let sx = 0; sx < SAMPLES; sx++) {
          const x = (px + (sx + 0.5) / SAMPLES) / size;
          const y = (py + (sy + 0.5) / SAMPLES) / size;
          if (!(maskable || insideRoundedSquare(x, y, 0.04, 0.2))) continue;
          bg++;
          if (onCheck(x, y, maskable ? 0.78 : 1)) fg++;
        }
      }
      const n = SAMPLES * SAMPLES;
      const i = (py * size + px) * 4;
      for (let c = 0; c < 3; c++) rgba[i + c] = bg ? Math.round((BRAND[c] * (bg - fg) + WHITE[c] * fg) / bg) : 0;
      rgba[i + 3] = Math.round((255 * bg) / n);
    }
  }
  return encodePng(size, size, rgba);
}

mkdirSync(OUT, { recursive: true });
for (const [name, size, maskable] of [
  ["icon-192.png", 192, false],
  ["icon-512.png", 512, false],
  ["maskable-512.png", 512, true],
]) {
  writeFileSync(join(OUT, name), drawIcon(size, maskable));
  console.log(`wrote public/icons/${name}`);
}
