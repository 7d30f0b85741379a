#!/usr/bin/env python3
"""Writes the fixtures of tests/test_io.c into the directory argv[1] (created if missing).
Python 3 standard library only (zlib, struct).

  png_good.txt   "name width height" per line: name.png decodes to name.rgba (RGBA8, exact)
  png_bad.txt    "name|substring": name.png must fail with a message containing substring
  stl_bad.txt    the same for name.stl
  robot*.png, cube_*.stl, tetra_*.stl, sphere_binary.stl, open_cube.stl: see test_io.c

PNG scanlines are filtered here (not by a library), per image with one filter type or a
per-row mix; the zlib streams come from zlib with level 0 (stored blocks), Z_FIXED
(fixed Huffman) and level 9 (dynamic Huffman), and the first block's type is asserted.
"""
import math
import os
import random
import struct
import sys
import zlib

OUT = None


def write(name, data):
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)


# ------------------------------------------------------------------ PNG writing
def chunk(ctype, data):
    return struct.pack(">I", len(data)) + ctype + data + struct.pack(">I", zlib.crc32(ctype + data) & 0xFFFFFFFF)


def paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    if pb <= pc:
        return b
    return c


def filter_row(ft, row, prev, bpp):
    out = bytearray(len(row))
    for i in range(len(row)):
        a = row[i - bpp] if i >= bpp else 0
        b = prev[i] if prev is not None else 0
        c = prev[i - bpp] if (prev is not None and i >= bpp) else 0
        if ft == 0:
            pred = 0
        elif ft == 1:
            pred = a
        elif ft == 2:
            pred = b
        elif ft == 3:
            pred = (a + b) >> 1
        else:
            pred = paeth(a, b, c)
        out[i] = (row[i] - pred) & 0xFF
    return bytes([ft]) + bytes(out)


def compress(data, mode):
    if mode == "stored":
        z = zlib.compress(data, 0)
    elif mode == "fixed":
        # zlib falls back to stored blocks when those are smaller even with Z_FIXED, so the
        # fixed-Huffman streams come from the small encoder below
        z = zwrap(fixed_deflate(data), data)
        assert zlib.decompress(z) == data
    elif mode in ("dyn", "z9"):      # z9: level 9, whatever block type zlib picks
        z = zlib.compress(data, 9)
    elif mode == "rle":
        c = zlib.compressobj(9, zlib.DEFLATED, 15, 9, zlib.Z_RLE)
        z = c.compress(data) + c.flush()
    else:
        raise ValueError(mode)
    btype = (z[2] >> 1) & 3
    want = {"stored": 0, "fixed": 1, "dyn": 2, "rle": None, "z9": None}[mode]
    if want is not None:
        assert btype == want, (mode, btype)
    return z


CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}


def pack_row(samples, depth):
    """samples: flat list of channel values at the given depth -> packed bytes"""
    if depth == 8:
        return bytes(samples)
    if depth == 16:
        return b"".join(struct.pack(">H", s) for s in samples)
    out, acc, nbits = bytearray(), 0, 0
    for s in samples:
        acc = (acc << depth) | s
        nbits += depth
        if nbits == 8:
            out.append(acc)
            acc, nbits = 0, 0
    if nbits:
        out.append(acc << (8 - nbits))
    return bytes(out)


def to8(v, depth):
    if depth == 16:
        return v >> 8
    if depth == 8:
        return v
    return v * 255 // ((1 << depth) - 1)


def make_png(w, h, ctype, depth, pixels, filters, mode, plte=None, trns=None, split=1, extra_chunks=b""):
    """pixels: h rows of w tuples of channel samples.  filters: one int or a list per row.
    Returns (png bytes, expected rgba bytes)."""
    ch = CHANNELS[ctype]
    bits = ch * depth
    bpp = max(1, bits // 8)
    raw, prev = bytearray(), None
    for y in range(h):
        row = pack_row([s for px in pixels[y] for s in px], depth)
        ft = filters[y % len(filters)] if isinstance(filters, list) else filters
        raw += filter_row(ft, row, prev, bpp)
        prev = row
    z = compress(bytes(raw), mode)
    ihdr = struct.pack(">IIBBBBB", w, h, depth, ctype, 0, 0, 0)
    out = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + extra_chunks
    if plte is not None:
        out += chunk(b"PLTE", b"".join(bytes(c) for c in plte))
    if trns is not None:
        out += chunk(b"tRNS", trns)
    n = max(1, split)
    step = (len(z) + n - 1) // n
    for i in range(n):
        out += chunk(b"IDAT", z[i * step:(i + 1) * step])
    out += chunk(b"IEND", b"")
    # expected RGBA
    exp = bytearray()
    for y in range(h):
        for px in pixels[y]:
            if ctype == 0:
                g = to8(px[0], depth)
                a = 255
                if trns is not None and px[0] == struct.unpack(">H", trns)[0]:
                    a = 0
                exp += bytes([g, g, g, a])
            elif ctype == 2:
                a = 255
                if trns is not None and tuple(px) == struct.unpack(">HHH", trns):
                    a = 0
                exp += bytes([to8(px[0], depth), to8(px[1], depth), to8(px[2], depth), a])
            elif ctype == 3:
                r, g, b = plte[px[0]]
                a = trns[px[0]] if (trns is not None and px[0] < len(trns)) else 255
                exp += bytes([r, g, b, a])
            elif ctype == 4:
                g = to8(px[0], depth)
                exp += bytes([g, g, g, to8(px[1], depth)])
            else:
                exp += bytes([to8(v, depth) for v in px])
    return out, bytes(exp)


def gen_pixels(rng, w, h, ctype, depth, npal=0):
    """structured (compressible) but varied samples"""
    ch = CHANNELS[ctype]
    maxv = (1 << depth) - 1
    rows = []
    for y in range(h):
        row = []
        for x in range(w):
            px = []
            for c in range(ch):
                if ctype == 3:
                    v = ((x // 3 + y // 2) * 7 + rng.randrange(2)) % npal
                else:
                    base = ((x // 4) * (37 + 11 * c) + (y // 3) * (23 + 5 * c) + 50 * c) * (maxv + 1) // 256
                    v = (base + (rng.randrange(maxv // 8 + 1) if rng.random() < 0.1 else 0)) % (maxv + 1)
                px.append(v)
            row.append(tuple(px))
        rows.append(row)
    return rows


def good_pngs(rng):
    good = []

    def add(name, w, h, png, rgba):
        write(name + ".png", png)
        write(name + ".rgba", rgba)
        assert len(rgba) == w * h * 4
        good.append((name, w, h))

    sizes = {"stored": (9, 5), "fixed": (13, 7), "dyn": (37, 29)}
    for ctype in (0, 2, 3, 4, 6):
        for mode in ("stored", "fixed", "dyn"):
            for filt in (0, 1, 2, 3, 4, "mix"):
                w, h = sizes[mode]
                npal = 0
                plte = None
                if ctype == 3:
                    npal = 40
                    plte = [((i * 53) % 256, (i * 101 + 7) % 256, (255 - i * 5) % 256) for i in range(npal)]
                pixels = gen_pixels(rng, w, h, ctype, 8, npal)
                filters = [0, 1, 2, 3, 4] if filt == "mix" else filt
                png, rgba = make_png(w, h, ctype, 8, pixels, filters, mode, plte=plte)
                add("c%d_%s_f%s" % (ctype, mode, filt), w, h, png, rgba)

    # low and high bit depths, tRNS, multiple IDATs, ancillary chunks, bigger images
    for depth in (1, 2, 4, 16):
        w, h = (40, 24) if depth == 16 else (13, 6)
        pixels = gen_pixels(rng, w, h, 0, depth)
        png, rgba = make_png(w, h, 0, depth, pixels, [0, 1, 2, 3, 4, 1], "dyn" if depth == 16 else "fixed")
        add("gray_d%d" % depth, w, h, png, rgba)
    for depth in (1, 2, 4):
        w, h, npal = 11, 5, 1 << depth
        plte = [((i * 70) % 256, (i * 30) % 256, (i * 90 + 3) % 256) for i in range(npal)]
        pixels = gen_pixels(rng, w, h, 3, depth, npal)
        trns = bytes([(i * 97) % 256 for i in range(npal - 1)])      # shorter than the palette
        png, rgba = make_png(w, h, 3, depth, pixels, [4, 3, 2, 1, 0], "fixed", plte=plte, trns=trns)
        add("pal_d%d_trns" % depth, w, h, png, rgba)
    for ctype in (2, 4, 6):
        w, h = 41, 23
        pixels = gen_pixels(rng, w, h, ctype, 16)
        png, rgba = make_png(w, h, ctype, 16, pixels, [1, 2, 3, 4, 0], "dyn")
        add("c%d_d16" % ctype, w, h, png, rgba)
    # grey and RGB colour keys
    w, h = 8, 4
    pixels = [[((x * 30 + y * 9) % 256,) for x in range(w)] for y in range(h)]
    key = pixels[1][2][0]
    png, rgba = make_png(w, h, 0, 8, pixels, 4, "z9", trns=struct.pack(">H", key))
    add("gray_trns", w, h, png, rgba)
    pixels = [[((x * 40) % 256, (y * 60) % 256, 77) for x in range(w)] for y in range(h)]
    key = pixels[2][3]
    png, rgba = make_png(w, h, 2, 8, pixels, [1, 4], "fixed", trns=struct.pack(">HHH", *key))
    add("rgb_trns", w, h, png, rgba)
    # many IDAT chunks (one of them empty after splitting a tiny stream) + ancillary chunks
    w, h = 23, 19
    pixels = gen_pixels(rng, w, h, 6, 8)
    png, rgba = make_png(w, h, 6, 8, pixels, [0, 1, 2, 3, 4], "dyn", split=7,
                         extra_chunks=chunk(b"tEXt", b"Comment\x00made by make_io_fixtures.py") + chunk(b"gAMA", struct.pack(">I", 45455)))
    add("rgba_split_idat", w, h, png, rgba)
    # big images: several deflate blocks of each kind, long matches, far distances
    w, h = 211, 157
    pixels = gen_pixels(rng, w, h, 6, 8)
    for mode in ("stored", "dyn", "rle"):
        png, rgba = make_png(w, h, 6, 8, pixels, [4, 1, 2, 3, 0, 4, 4], mode)
        add("big_rgba_%s" % mode, w, h, png, rgba)
    # 1 x 1
    png, rgba = make_png(1, 1, 6, 8, [[(1, 2, 3, 4)]], 4, "fixed")
    add("one_pixel", 1, 1, png, rgba)
    # a wide single row (stride > 64 KiB at 16-bit RGBA: stored blocks split)
    w = 9000
    pixels = [[((x * 7) % 65536, (x * 13) % 65536, (x * 3) % 65536, 65535 - x) for x in range(w)]]
    png, rgba = make_png(w, 1, 6, 16, pixels, 1, "stored")
    add("wide_row", w, 1, png, rgba)
    with open(os.path.join(OUT, "png_good.txt"), "w") as f:
        for name, w, h in good:
            f.write("%s %d %d\n" % (name, w, h))
    return good


class Bits:
    """LSB-first deflate bit writer (Huffman codes are given MSB-first)"""

    def __init__(self):
        self.out, self.acc, self.n = bytearray(), 0, 0

    def put(self, value, nbits):
        for i in range(nbits):
            self.acc |= ((value >> i) & 1) << self.n
            self.n += 1
            if self.n == 8:
                self.out.append(self.acc)
                self.acc, self.n = 0, 0

    def code(self, code, nbits):     # Huffman code, most significant bit first
        for i in range(nbits - 1, -1, -1):
            self.put((code >> i) & 1, 1)

    def bytes(self):
        if self.n:
            self.out.append(self.acc)
            self.acc, self.n = 0, 0
        return bytes(self.out)


LBASE = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258]
LEXT = [0] * 8 + [1] * 4 + [2] * 4 + [3] * 4 + [4] * 4 + [5] * 4 + [0]
DBASE = [1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073,
         4097, 6145, 8193, 12289, 16385, 24577]
DEXT = [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13]


def fixed_deflate(data):
    """one final fixed-Huffman block, greedy LZ77 (overlapping copies included)"""
    bw = Bits()
    bw.put(1, 1)
    bw.put(1, 2)
    table, i, n = {}, 0, len(data)
    while i < n:
        best, bestd = 0, 0
        if i + 3 <= n:
            for j in reversed(table.get(data[i:i + 3], [])[-16:]):
                d = i - j
                if d > 32768:
                    continue
                l = 0
                while l < 258 and i + l < n and data[j + l] == data[i + l]:
                    l += 1
                if l > best:
                    best, bestd = l, d
        step = best if best >= 3 else 1
        if best >= 3:
            li = max(k for k in range(29) if LBASE[k] <= best)
            sym = 257 + li
            if sym < 280:
                bw.code(sym - 256, 7)
            else:
                bw.code(0xC0 + sym - 280, 8)
            bw.put(best - LBASE[li], LEXT[li])
            di = max(k for k in range(30) if DBASE[k] <= bestd)
            bw.code(di, 5)
            bw.put(bestd - DBASE[di], DEXT[di])
        else:
            fixed_lit(bw, data[i])
        for k in range(i, min(i + step, n - 2)):
            table.setdefault(data[k:k + 3], []).append(k)
        i += step
    bw.code(0, 7)
    return bw.bytes()


def fixed_lit(bw, lit):
    if lit < 144:
        bw.code(0x30 + lit, 8)
    else:
        bw.code(0x190 + lit - 144, 9)


def zwrap(deflate, data_for_adler):
    return b"\x78\x01" + deflate + struct.pack(">I", zlib.adler32(data_for_adler) & 0xFFFFFFFF)


def bad_pngs(rng):
    bad = []

    def add(name, data, sub):
        write(name + ".png", data)
        bad.append((name, sub))

    # base: 16 x 16 RGB, dynamic Huffman
    w, h = 16, 16
    pixels = gen_pixels(rng, w, h, 2, 8)
    base, _ = make_png(w, h, 2, 8, pixels, 4, "dyn")
    ihdr_at, idat_at = 8, 8 + 25
    assert base[ihdr_at + 4:ihdr_at + 8] == b"IHDR" and base[idat_at + 4:idat_at + 8] == b"IDAT"
    idat_len = struct.unpack(">I", base[idat_at:idat_at + 4])[0]
    z = base[idat_at + 8:idat_at + 8 + idat_len]
    raw = zlib.decompress(z)

    def with_ihdr(wd, ht, depth=8, ctype=2, interlace=0, comp=0, filt=0):
        ihdr = struct.pack(">IIBBBBB", wd, ht, depth, ctype, comp, filt, interlace)
        return base[:8] + chunk(b"IHDR", ihdr) + base[33:]

    def with_idat(zdata, ihdr=None, plte=b""):
        hdr = base[:33] if ihdr is None else base[:8] + chunk(b"IHDR", ihdr)
        return hdr + plte + chunk(b"IDAT", zdata) + chunk(b"IEND", b"")

    add("empty", b"", "empty")
    add("short_sig", base[:5], "signature")
    add("garbage", bytes(rng.randrange(256) for _ in range(300)), "signature")
    add("truncated_half", base[:len(base) // 2], "truncated")
    add("truncated_no_iend", base[:-12], "IEND")
    add("truncated_in_header", base[:8 + 25 + 6], "truncated")
    b = bytearray(base)
    b[idat_at + 8 + 10] ^= 0x40
    add("bad_crc", bytes(b), "CRC")
    b = bytearray(base)
    b[ihdr_at + 10] ^= 1
    add("bad_crc_ihdr", bytes(b), "CRC")
    add("bad_zlib_header", with_idat(b"\x79" + z[1:]), "zlib")
    add("bad_zlib_check", with_idat(b"\x78\x9d" + z[2:]), "header check")
    add("zlib_dict", with_idat(b"\x78\xbb" + z[2:]), "dictionary")
    zb = bytearray(z)
    zb[-1] ^= 0xFF
    add("bad_adler", with_idat(bytes(zb)), "Adler")
    add("zlib_truncated", with_idat(z[:len(z) // 2]), "truncated")
    add("zlib_no_adler", with_idat(z[:-4]), "Adler")
    add("too_tall", with_ihdr(16, 17), "expected")         # data too short for the declared size
    add("too_short", with_ihdr(16, 15), "exceeds")         # more data than declared
    add("too_wide_hdr", with_ihdr(15, 16), "")
    add("huge_dims", with_ihdr(100000, 100000), "limit")
    add("huge_area", with_ihdr(16384, 16384), "limit")
    add("zero_width", with_ihdr(0, 16), "zero")
    add("interlaced", with_ihdr(16, 16, interlace=1), "unsupported")
    add("bad_interlace", with_ihdr(16, 16, interlace=2), "interlace")
    add("bad_depth", with_ihdr(16, 16, depth=4), "bit depth")
    add("bad_ctype", with_ihdr(16, 16, ctype=5), "colour type")
    add("bad_compression_method", with_ihdr(16, 16, comp=1), "compression")
    add("bad_filter_method", with_ihdr(16, 16, filt=1), "filter method")
    rb = bytearray(raw)
    rb[3 * (16 * 3 + 1)] = 5
    add("bad_filter_type", with_idat(zlib.compress(bytes(rb), 9)), "filter type 5")
    add("no_idat", base[:33] + chunk(b"IEND", b""), "IDAT")
    add("ihdr_not_first", base[:8] + chunk(b"tEXt", b"a\x00b") + base[8:], "IHDR")
    add("ihdr_bad_len", base[:8] + chunk(b"IHDR", base[16:28]) + base[33:], "IHDR")
    add("unknown_critical", base[:33] + chunk(b"XYZW", b"1234") + base[33:], "critical")
    add("bad_chunk_type", base[:33] + chunk(b"ab1d", b"") + base[33:], "chunk type")
    add("huge_chunk_len", base[:33] + struct.pack(">I", 0xFFFFFFF0) + b"IDAT" + b"\0" * 20, "declares")
    add("split_idat", base[:33] + chunk(b"IDAT", z[:10]) + chunk(b"tEXt", b"a\x00b") + chunk(b"IDAT", z[10:]) +
        chunk(b"IEND", b""), "consecutive")
    # palette problems
    ih3 = struct.pack(">IIBBBBB", 4, 2, 8, 3, 0, 0, 0)
    praw = bytes([0, 0, 1, 2, 3, 0, 3, 2, 1, 0])
    add("pal_missing", with_idat(zlib.compress(praw), ih3), "PLTE")
    add("pal_index_oob", with_idat(zlib.compress(praw), ih3, chunk(b"PLTE", bytes(range(9)))), "palette index 3")
    add("pal_bad_len", with_idat(zlib.compress(praw), ih3, chunk(b"PLTE", bytes(range(10)))), "PLTE")
    # hand-made deflate streams (fixed Huffman)
    ih_g = struct.pack(">IIBBBBB", 4, 1, 8, 0, 0, 0, 0)          # 4 x 1 grey: 5 raw bytes
    bw = Bits()
    bw.put(1, 1); bw.put(1, 2)                                  # final, fixed
    fixed_lit(bw, 0); fixed_lit(bw, 65)
    bw.code(1, 7)                                               # length 3 (symbol 257)
    bw.code(4, 5); bw.put(0, 1)                                 # distance 5: only 2 bytes so far
    bw.code(0, 7)
    add("zlib_far_distance", with_idat(zwrap(bw.bytes(), b"\0A\0A\0"), ih_g), "distance")
    bw = Bits()
    bw.put(1, 1); bw.put(3, 2)
    add("zlib_block_type3", with_idat(zwrap(bw.bytes() + b"\0" * 8, b""), ih_g), "block type")
    bw = Bits()
    bw.put(1, 1); bw.put(1, 2)
    fixed_lit(bw, 0)
    bw.code(0xC6, 8)                                            # literal/length symbol 286: invalid
    add("zlib_bad_symbol", with_idat(zwrap(bw.bytes() + b"\0" * 4, b""), ih_g), "length symbol")
    stored = b"\x01" + struct.pack("<HH", 5, 0x1234) + b"\0ABCD"
    add("zlib_stored_nlen", with_idat(zwrap(stored, b"\0ABCD"), ih_g), "complement")
    # dynamic block with a repeat code (16) as the very first code length
    bw = Bits()
    bw.put(1, 1); bw.put(2, 2)
    bw.put(0, 5); bw.put(0, 5); bw.put(15, 4)                   # 257, 1, 19 code-length codes
    for _ in range(19):
        bw.put(5, 3)                                            # 19 codes of length 5: incomplete
    add("zlib_incomplete_cl", with_idat(zwrap(bw.bytes() + b"\0" * 8, b""), ih_g), "code-length")
    add("zlib_empty_idat", with_idat(b""), "too short")
    with open(os.path.join(OUT, "png_bad.txt"), "w") as f:
        for name, sub in bad:
            f.write("%s|%s\n" % (name, sub))


def robot_pngs():
    T, H = (0, 0, 0, 0), (255, 0, 0, 100)      # transparent, half-transparent red
    R, G, B, W, Y = (255, 0, 0, 255), (0, 255, 0, 255), (0, 0, 255, 255), (255, 255, 255, 255), (255, 255, 0, 255)
    img = [[T, R, R, H, T, T],
           [W, G, G, G, G, W],
           [W, G, B, B, G, W],
           [G, G, G, G, G, G]]
    png, rgba = make_png(6, 4, 6, 8, img, [1, 4, 2, 3], "z9")
    write("robot.png", png)
    write("robot.rgba", rgba)
    img[2][4] = Y
    png, _ = make_png(6, 4, 6, 8, img, 0, "fixed")
    write("robot_unmatched.png", png)


# ------------------------------------------------------------------ STL writing
CUBE_V = [(0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0), (0, 0, 1), (1, 0, 1), (1, 1, 1), (0, 1, 1)]
CUBE_T = [(0, 3, 2), (0, 2, 1),          # z = 0, outward -z
          (4, 5, 6), (4, 6, 7),          # z = 1
          (0, 1, 5), (0, 5, 4),          # y = 0
          (3, 7, 6), (3, 6, 2),          # y = 1
          (0, 4, 7), (0, 7, 3),          # x = 0 (diagonal y = z)
          (1, 2, 6), (1, 6, 5)]          # x = 1
TET_V = [(0, 0, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1)]
TET_T = [(0, 2, 1), (0, 1, 3), (0, 3, 2), (1, 2, 3)]


def normal(a, b, c):
    u = [b[i] - a[i] for i in range(3)]
    v = [c[i] - a[i] for i in range(3)]
    n = [u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]]
    l = math.sqrt(sum(x * x for x in n)) or 1.0
    return [x / l for x in n]


def stl_ascii(name, V, T, upper=False, crlf=False, fmt="%.6f"):
    lines = ["solid " + name]
    for t in T:
        a, b, c = (V[i] for i in t)
        lines.append("  facet normal " + " ".join(fmt % x for x in normal(a, b, c)))
        lines.append("    outer loop")
        for p in (a, b, c):
            lines.append("      vertex " + " ".join(fmt % x for x in p))
        lines.append("    endloop")
        lines.append("  endfacet")
    lines.append("endsolid " + name)
    text = ("\r\n" if crlf else "\n").join(lines) + "\n"
    if upper:
        text = text.upper()
    return text.encode()


def stl_binary(V, T, header=b"binary STL written by make_io_fixtures.py", count=None):
    out = header.ljust(80, b" ")[:80] + struct.pack("<I", len(T) if count is None else count)
    for t in T:
        a, b, c = (V[i] for i in t)
        out += struct.pack("<12fH", *(normal(a, b, c) + list(a) + list(b) + list(c)), 0)
    return out


def icosphere(levels):
    p = (1 + 5 ** 0.5) / 2
    V = [(-1, p, 0), (1, p, 0), (-1, -p, 0), (1, -p, 0), (0, -1, p), (0, 1, p), (0, -1, -p), (0, 1, -p),
         (p, 0, -1), (p, 0, 1), (-p, 0, -1), (-p, 0, 1)]
    V = [tuple(x / math.sqrt(sum(y * y for y in v)) for x in v) for v in V]
    T = [(0, 11, 5), (0, 5, 1), (0, 1, 7), (0, 7, 10), (0, 10, 11), (1, 5, 9), (5, 11, 4), (11, 10, 2), (10, 7, 6),
         (7, 1, 8), (3, 9, 4), (3, 4, 2), (3, 2, 6), (3, 6, 8), (3, 8, 9), (4, 9, 5), (2, 4, 11), (6, 2, 10),
         (8, 6, 7), (9, 8, 1)]
    for _ in range(levels):
        cache, NT = {}, []

        def mid(i, j):
            key = (min(i, j), max(i, j))
            if key not in cache:
                m = [(V[i][k] + V[j][k]) / 2 for k in range(3)]
                l = math.sqrt(sum(x * x for x in m))
                V.append(tuple(x / l for x in m))
                cache[key] = len(V) - 1
            return cache[key]
        for a, b, c in T:
            ab, bc, ca = mid(a, b), mid(b, c), mid(c, a)
            NT += [(a, ab, ca), (b, bc, ab), (c, ca, bc), (ab, bc, ca)]
        T = NT
    # round to float32 once so every copy of a vertex is bit-identical
    V = [tuple(struct.unpack("<3f", struct.pack("<3f", *v))) for v in V]
    return V, T


def stls():
    write("cube_ascii.stl", stl_ascii("cube", CUBE_V, CUBE_T))
    write("cube_binary.stl", stl_binary(CUBE_V, CUBE_T))
    write("cube_binary_solidheader.stl", stl_binary(CUBE_V, CUBE_T, header=b"solid but actually binary"))
    write("tetra_binary.stl", stl_binary(TET_V, TET_T))
    write("tetra_ascii.stl", stl_ascii("tetra", TET_V, TET_T, upper=True, crlf=True, fmt="%.4e"))
    V, T = icosphere(3)
    write("sphere_binary.stl", stl_binary(V, T))
    write("open_cube.stl", stl_ascii("open", CUBE_V, CUBE_T[:-1]))
    # two solids in one ASCII file
    write("two_solids.stl", stl_ascii("a", CUBE_V, CUBE_T[:6]) + stl_ascii("b", CUBE_V, CUBE_T[6:]))

    bad = []

    def add(name, data, sub):
        write(name + ".stl", data)
        bad.append((name, sub))
    good = stl_ascii("cube", CUBE_V, CUBE_T).decode()
    add("stl_empty", b"", "empty")
    add("stl_garbage", bytes(range(1, 41)), "too short")
    add("stl_binary_wrong_count", stl_binary(CUBE_V, CUBE_T, count=13), "declares 13 triangles")
    add("stl_binary_huge_count", stl_binary(CUBE_V, CUBE_T, count=0xFFFFFFFF), "declares")
    add("stl_binary_truncated", stl_binary(CUBE_V, CUBE_T)[:-7], "declares 12")
    nan = bytearray(stl_binary(CUBE_V, CUBE_T))
    nan[84 + 50 * 3 + 12 + 4:84 + 50 * 3 + 12 + 8] = struct.pack("<f", float("nan"))
    add("stl_binary_nan", bytes(nan), "triangle 3")
    lines = good.split("\n")
    assert lines[4].strip().startswith("vertex")
    typo = list(lines)
    typo[4] = typo[4].replace("vertex", "vertx")
    add("stl_ascii_typo", "\n".join(typo).encode(), "line 5")
    num = list(lines)
    num[11] = "      vertex 1.0.0 0 0"
    add("stl_ascii_badnumber", "\n".join(num).encode(), "line 12")
    add("stl_ascii_truncated", good[:len(good) // 2].encode(), "end of file")
    add("stl_ascii_no_endsolid", "\n".join(lines[:-2]).encode(), "end of file")
    add("stl_ascii_trailing", (good + "garbage\n").encode(), "after 'endsolid'")
    add("stl_ascii_four_vertices", good.replace("    endloop", "      vertex 0 0 0\n    endloop", 1).encode(), "endloop")
    add("stl_ascii_nan", good.replace("vertex 0.000000", "vertex nan", 1).encode(), "number")
    with open(os.path.join(OUT, "stl_bad.txt"), "w") as f:
        for name, sub in bad:
            f.write("%s|%s\n" % (name, sub))


def main():
    global OUT
    if len(sys.argv) != 2:
        sys.exit("usage: make_io_fixtures.py OUTDIR")
    OUT = sys.argv[1]
    os.makedirs(OUT, exist_ok=True)
    rng = random.Random(20240607)
    good = good_pngs(rng)
    bad_pngs(rng)
    robot_pngs()
    stls()
    print("wrote %d good PNGs and the bad/robot/STL fixtures to %s" % (len(good), OUT))


if __name__ == "__main__":
    main()
