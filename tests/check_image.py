#!/usr/bin/env python3
"""Validate the PNG and GIF files written by tests/test_image.c.

Usage: python3 tests/check_image.py OUTDIR

Standard library only. PNG: signature, chunk layout and every CRC, IHDR,
zlib stream (Adler-32, no trailing data), filter bytes, pixels against the
raw .rgb file. GIF: block structure, palette, NETSCAPE2.0 loop, graphic
control extension per frame, an independent LZW decoder, decoded indices
against the .idx file and colours against the .rgb file (each palette colour
must be a nearest one to the original pixel). Exits 0 on success, 1 otherwise.
"""
import operator
import os
import struct
import sys
import zlib

GIF_DELAY = 7  # must match tests/test_image.c


class CheckError(Exception):
    pass


def need(cond, msg):
    if not cond:
        raise CheckError(msg)


def read(path):
    with open(path, "rb") as f:
        return f.read()


# ---------------------------------------------------------------- PNG ----

def decode_png(data):
    """Return (w, h, rgb bytes) of an 8-bit RGB, non-interlaced PNG."""
    need(data[:8] == b"\x89PNG\r\n\x1a\n", "bad PNG signature")
    pos, chunks = 8, []
    while pos < len(data):
        need(pos + 12 <= len(data), "truncated chunk header at %d" % pos)
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        need(length < 2 ** 31, "chunk length too large")
        ctype = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        need(len(body) == length and pos + 12 + length <= len(data),
             "truncated %r chunk" % ctype)
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        need(zlib.crc32(ctype + body) & 0xFFFFFFFF == crc, "bad CRC in %r chunk" % ctype)
        chunks.append((ctype, body))
        pos += 12 + length
        if ctype == b"IEND":
            break
    need(pos == len(data), "data after IEND")
    types = [c[0] for c in chunks]
    need(types[0] == b"IHDR" and types[-1] == b"IEND", "chunk order: %r" % types)
    need(types.count(b"IHDR") == 1 and b"IDAT" in types, "chunk set: %r" % types)
    w, h, depth, ctype, comp, filt, inter = struct.unpack(">IIBBBBB", chunks[0][1])
    need(len(chunks[0][1]) == 13, "IHDR length")
    need(w > 0 and h > 0, "zero size")
    need((depth, ctype, comp, filt, inter) == (8, 2, 0, 0, 0),
         "IHDR fields %r" % ((depth, ctype, comp, filt, inter),))
    idat = [i for i, t in enumerate(types) if t == b"IDAT"]
    need(idat == list(range(idat[0], idat[-1] + 1)), "IDAT chunks not consecutive")
    z = b"".join(chunks[i][1] for i in idat)
    need(len(z) >= 6 and (z[0] * 256 + z[1]) % 31 == 0 and z[0] & 15 == 8, "bad zlib header")
    d = zlib.decompressobj()
    raw = d.decompress(z) + d.flush()
    need(d.eof and d.unused_data == b"", "zlib stream incomplete or trailing data")
    need(struct.unpack(">I", z[-4:])[0] == zlib.adler32(raw) & 0xFFFFFFFF, "Adler-32")
    stride = 1 + 3 * w
    need(len(raw) == h * stride, "raw size %d != %d" % (len(raw), h * stride))
    rows = []
    for y in range(h):
        need(raw[y * stride] == 0, "row %d filter byte %d" % (y, raw[y * stride]))
        rows.append(raw[y * stride + 1:(y + 1) * stride])
    return w, h, b"".join(rows)


def check_png(outdir, name, size, spots=()):
    w, h, rgb = decode_png(read(os.path.join(outdir, name)))
    need((w, h) == size, "%s: size %dx%d, expected %dx%d" % ((name, w, h) + size))
    expect = read(os.path.join(outdir, name[:-4] + ".rgb"))
    need(len(expect) == w * h * 3, "%s: .rgb size" % name)
    if rgb != expect:
        i = next(i for i in range(len(rgb)) if rgb[i] != expect[i]) // 3
        raise CheckError("%s: pixel (%d,%d) differs" % (name, i % w, i // w))
    for (x, y), col in spots:  # independent of the C program's .rgb file
        got = tuple(rgb[(y * w + x) * 3:(y * w + x) * 3 + 3])
        need(got == col, "%s: pixel (%d,%d) is %r, expected %r" % (name, x, y, got, col))


# ---------------------------------------------------------------- GIF ----

def lzw_decode(data, min_size, npix):
    """Independent GIF LZW decoder: returns the index bytes."""
    need(2 <= min_size <= 8, "LZW min code size %d" % min_size)
    clear, eoi = 1 << min_size, (1 << min_size) + 1
    base = [bytes([i]) for i in range(clear)] + [b"", b""]
    table, size, prev = list(base), min_size + 1, None
    out = bytearray()
    bitpos, nbits = 0, len(data) * 8
    while True:
        need(bitpos + size <= nbits, "LZW data ends without EOI")
        k = bitpos >> 3  # codes are packed least significant bit first
        chunk = int.from_bytes(data[k:k + 3], "little") >> (bitpos & 7)
        code = chunk & ((1 << size) - 1)
        bitpos += size
        if code == clear:
            table, size, prev = list(base), min_size + 1, None
            continue
        if code == eoi:
            break
        if prev is None:
            need(code < clear, "first code %d after clear is not a literal" % code)
            entry = table[code]
        elif code < len(table):
            entry = table[code]
        elif code == len(table):  # KwKwK
            entry = table[prev] + table[prev][:1]
        else:
            raise CheckError("LZW code %d beyond table (%d)" % (code, len(table)))
        out += entry
        if prev is not None and len(table) < 4096:
            table.append(table[prev] + entry[:1])
            if len(table) == (1 << size) and size < 12:
                size += 1
        prev = code
        need(len(out) <= npix, "LZW output longer than the image")
    need((bitpos + 7) // 8 == len(data), "%d bytes after EOI" % (len(data) - (bitpos + 7) // 8))
    need(len(out) == npix, "LZW output %d pixels, expected %d" % (len(out), npix))
    return bytes(out)


def sub_blocks(data, pos):
    out = bytearray()
    while True:
        need(pos < len(data), "truncated sub-blocks")
        n = data[pos]
        pos += 1
        if n == 0:
            return bytes(out), pos
        need(pos + n <= len(data), "truncated sub-block")
        out += data[pos:pos + n]
        pos += n


def decode_gif(data):
    """Return (w, h, palette, [(delay, indices)])."""
    need(data[:6] == b"GIF89a", "bad GIF signature")
    w, h, flags, _bg, _aspect = struct.unpack("<HHBBB", data[6:13])
    need(flags & 0x80, "no global colour table")
    ncol = 2 << (flags & 7)
    pal = [tuple(data[13 + 3 * i:16 + 3 * i]) for i in range(ncol)]
    need(len(data) >= 13 + 3 * ncol, "truncated palette")
    pos, frames, gce_delay, loop = 13 + 3 * ncol, [], None, None
    while True:
        need(pos < len(data), "missing trailer")
        tag = data[pos]
        pos += 1
        if tag == 0x3B:
            break
        if tag == 0x21:
            label = data[pos]
            body, pos = sub_blocks(data, pos + 1)
            if label == 0xF9:
                need(len(body) == 4, "GCE size")
                need(body[0] & 1 == 0, "unexpected transparency")
                gce_delay = struct.unpack("<H", body[1:3])[0]
            elif label == 0xFF and body[:11] == b"NETSCAPE2.0":
                need(len(body) == 14 and body[11] == 1, "NETSCAPE2.0 block")
                need(not frames, "loop extension after first image")
                loop = struct.unpack("<H", body[12:14])[0]
        elif tag == 0x2C:
            x, y, iw, ih, iflags = struct.unpack("<HHHHB", data[pos:pos + 9])
            pos += 9
            need((x, y, iw, ih) == (0, 0, w, h), "frame rect %r" % ((x, y, iw, ih),))
            need(iflags & 0xC0 == 0, "local palette / interlace not expected")
            need(gce_delay is not None, "frame %d without graphic control ext" % len(frames))
            min_size = data[pos]
            lzw, pos = sub_blocks(data, pos + 1)
            idx = lzw_decode(lzw, min_size, w * h)
            frames.append((gce_delay, idx))
            gce_delay = None
        else:
            raise CheckError("unknown block 0x%02x at %d" % (tag, pos - 1))
    need(pos == len(data), "data after trailer")
    need(loop == 0, "no NETSCAPE2.0 loop-forever extension")
    return w, h, pal, frames


def check_gif(outdir, base, size):
    w, h, pal, frames = decode_gif(read(os.path.join(outdir, base + ".gif")))
    need((w, h) == size, "%s.gif: size %dx%d" % (base, w, h))
    need(len(pal) == 256, "%s.gif: palette has %d entries" % (base, len(pal)))
    exp_rgb = read(os.path.join(outdir, base + "_gif.rgb"))
    exp_idx = read(os.path.join(outdir, base + "_gif.idx"))
    n = w * h
    need(len(exp_idx) == len(frames) * n and len(exp_rgb) == 3 * len(exp_idx),
         "%s.gif: %d frames, expected files hold %d" % (base, len(frames), len(exp_idx) // n))
    nearest = {}
    # sq[ch][v][p] = (v - pal[p][ch])**2, so a colour's distances to all
    # entries are three element-wise list additions (done in C by map)
    sq = [[[(v - p[ch]) ** 2 for p in pal] for v in range(256)] for ch in range(3)]
    for f, (delay, idx) in enumerate(frames):
        need(delay == GIF_DELAY, "%s.gif frame %d: delay %d" % (base, f, delay))
        want = exp_idx[f * n:(f + 1) * n]
        if idx != want:
            i = next(i for i in range(n) if idx[i] != want[i])
            raise CheckError("%s.gif frame %d: index at (%d,%d) is %d, expected %d"
                             % (base, f, i % w, i // w, idx[i], want[i]))
        for i in range(n):  # the palette colour must be a nearest colour
            c = tuple(exp_rgb[(f * n + i) * 3:(f * n + i) * 3 + 3])
            if c not in nearest:
                d = list(map(operator.add, map(operator.add, sq[0][c[0]], sq[1][c[1]]),
                             sq[2][c[2]]))
                nearest[c] = min(d), d
            best, d = nearest[c]
            if d[idx[i]] != best:
                raise CheckError("%s.gif frame %d: pixel (%d,%d) %r -> %r is not nearest"
                                 % (base, f, i % w, i // w, c, pal[idx[i]]))


def check_compressed(out, name, most):
    """The PNG is at most `most` of its raw scanline bytes (real deflate, not stored blocks)."""
    w, h, _ = decode_png(read(os.path.join(out, name)))
    size = os.path.getsize(os.path.join(out, name))
    raw = h * (1 + 3 * w)
    need(size <= most * raw, "%s: %d bytes for %d raw bytes (more than %.0f%%)" % (name, size, raw, 100 * most))


def main():
    if len(sys.argv) != 2:
        print("usage: check_image.py OUTDIR", file=sys.stderr)
        return 1
    out = sys.argv[1]
    bg, red, blue, black = (230, 230, 230), (200, 30, 30), (30, 60, 200), (0, 0, 0)
    cases = [
        ("test_image.png", lambda: check_png(out, "test_image.png", (200, 150), [
            ((199, 75), bg), ((10, 10), red), ((59, 39), red), ((60, 40), bg),
            ((100, 50), blue), ((130, 75), blue), ((131, 75), bg),
            ((0, 149), black), ((199, 0), black), ((0, 0), black), ((199, 149), black)])),
        ("test_image_edge.png", lambda: check_png(out, "test_image_edge.png", (428, 102), [
            ((300, 50), (300 & 255, 100, (300 ^ 50) & 255))])),
        ("test_image_1x1.png", lambda: check_png(out, "test_image_1x1.png", (1, 1),
                                                 [((0, 0), (12, 34, 56))])),
        ("test_image.png is compressed", lambda: check_compressed(out, "test_image.png", 0.10)),
        ("test_image_edge.png is compressed", lambda: check_compressed(out, "test_image_edge.png", 0.75)),
        ("test_image.gif", lambda: check_gif(out, "test_image", (160, 120))),
        ("test_image_small.gif", lambda: check_gif(out, "test_image_small", (1, 1))),
        ("test_image_lzw.gif", lambda: check_gif(out, "test_image_lzw", (4093, 1))),
    ]
    failed = 0
    for name, fn in cases:
        try:
            fn()
            print("ok   %s" % name)
        except (CheckError, OSError, zlib.error, struct.error, IndexError) as e:
            failed += 1
            print("FAIL %s: %s" % (name, e))
    print("check_image: %d passed, %d failed" % (len(cases) - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
