/* cq_image.h - tiny dependency-free RGB canvas + PNG / animated GIF writer.
 *
 * Single-file C99 library (also compiles as C++). In exactly ONE translation
 * unit write
 *     #define CQ_IMAGE_IMPLEMENTATION
 *     #include "cq_image.h"
 * (define CQ_IMAGE_STATIC as well to make every function static).
 *
 * Conventions
 *  - Pixel (x, y) is centred on the integer point (x, y); x grows right,
 *    y grows down; im->rgb is row-major, 3 bytes per pixel, no padding.
 *  - Fallible functions return int: 0 = success, nonzero = failure. Nothing
 *    calls abort()/exit(); there is no global mutable state.
 *  - Canvas size: 1..65535 in each dimension (also the GIF limit).
 *  - Drawing functions clip to the canvas and do nothing on an empty canvas.
 *  - PNG: 8-bit RGB, deflate-compressed (LZ77 + fixed Huffman codes), one IDAT chunk.
 *  - GIF: GIF89a, fixed global 6x7x6 colour-cube palette (252 colours used,
 *    entries 252..255 are black and never referenced), nearest-colour
 *    quantisation, LZW with 8-bit minimum code size, loops forever.
 */
#ifndef CQ_IMAGE_H
#define CQ_IMAGE_H

#include <stdio.h>

#if defined(CQ_IMAGE_STATIC) && defined(__GNUC__)
#define CQ_IMG_DEF static __attribute__((unused))
#elif defined(CQ_IMAGE_STATIC)
#define CQ_IMG_DEF static
#else
#define CQ_IMG_DEF extern
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cq_img {
    int w, h;
    unsigned char *rgb; /* w*h*3 bytes, or NULL */
} cq_img;

typedef struct cq_gif {
    FILE *f;            /* NULL when not open */
    int w, h, delay, err;
    unsigned char *idx; /* w*h quantised indices of the current frame */
    int *hkey;          /* LZW hash table: keys (-1 = empty) */
    unsigned short *hval; /* LZW hash table: codes */
} cq_gif;

/* Allocates a w x h canvas filled with white. On failure im->rgb is NULL. */
CQ_IMG_DEF int cq_img_init(cq_img *im, int w, int h);
/* Frees the pixels; safe on a zeroed or already freed canvas. */
CQ_IMG_DEF void cq_img_free(cq_img *im);
CQ_IMG_DEF void cq_img_clear(cq_img *im, unsigned char r, unsigned char g, unsigned char b);
/* Filled disc: every pixel whose centre is within `radius` of (cx, cy). */
CQ_IMG_DEF void cq_img_disc(cq_img *im, double cx, double cy, double radius,
                            unsigned char r, unsigned char g, unsigned char b);
/* Filled rectangle, both corners inclusive, any corner order. */
CQ_IMG_DEF void cq_img_rect(cq_img *im, int x0, int y0, int x1, int y1,
                            unsigned char r, unsigned char g, unsigned char b);
/* 1-pixel line, both endpoints inclusive. Coordinates beyond +-2^28 are
 * rejected (nothing drawn). */
CQ_IMG_DEF void cq_img_line(cq_img *im, int x0, int y0, int x1, int y1,
                            unsigned char r, unsigned char g, unsigned char b);
CQ_IMG_DEF int cq_img_write_png(const char *path, const cq_img *im);
/* Text in a 5x7 pixel font (our own glyphs: digits, letters shown as capitals, and
   . , - + / : ( ) = % _ < > ' ^ *; other characters are blank), each glyph `scale` pixels per
   font pixel, 6*scale apart; (x, y) is the top-left corner.  cq_img_text_width: its width. */
CQ_IMG_DEF void cq_img_text(cq_img *im, int x, int y, const char *text, int scale,
                            unsigned char r, unsigned char g, unsigned char b);
CQ_IMG_DEF int cq_img_text_width(const char *text, int scale);

/* GIF palette helpers: index of the nearest palette colour, palette entry. */
CQ_IMG_DEF int cq_img_palette_index(unsigned char r, unsigned char g, unsigned char b);
CQ_IMG_DEF void cq_img_palette_color(int index, unsigned char rgb[3]);

/* Animated GIF. After a failed cq_gif_begin nothing is left open (calling
 * cq_gif_end is harmless and returns nonzero). cq_gif_end always closes and
 * frees, and returns nonzero if any write since cq_gif_begin failed. */
CQ_IMG_DEF int cq_gif_begin(cq_gif *g, const char *path, int w, int h, int delay_centiseconds);
CQ_IMG_DEF int cq_gif_frame(cq_gif *g, const cq_img *im); /* im must be w x h */
CQ_IMG_DEF int cq_gif_end(cq_gif *g);

#ifdef __cplusplus
}
#endif
#endif /* CQ_IMAGE_H */

#ifdef CQ_IMAGE_IMPLEMENTATION
#ifndef CQ_IMAGE_IMPLEMENTED
#define CQ_IMAGE_IMPLEMENTED
#include <stdlib.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

static int cq__img_ok(const cq_img *im)
{
    return im && im->rgb && im->w > 0 && im->h > 0;
}

static int cq__dims_ok(int w, int h)
{
    return w > 0 && h > 0 && w <= 65535 && h <= 65535 &&
           (size_t)h <= ((size_t)-1) / 3 / (size_t)w;
}

CQ_IMG_DEF int cq_img_init(cq_img *im, int w, int h)
{
    if (!im) return 1;
    im->w = im->h = 0;
    im->rgb = NULL;
    if (!cq__dims_ok(w, h)) return 1;
    im->rgb = (unsigned char *)malloc((size_t)w * (size_t)h * 3);
    if (!im->rgb) return 1;
    im->w = w;
    im->h = h;
    memset(im->rgb, 255, (size_t)w * (size_t)h * 3);
    return 0;
}

CQ_IMG_DEF void cq_img_free(cq_img *im)
{
    if (!im) return;
    free(im->rgb);
    im->rgb = NULL;
    im->w = im->h = 0;
}

static void cq__put(cq_img *im, int x, int y, unsigned char r, unsigned char g, unsigned char b)
{
    unsigned char *p;
    if (x < 0 || y < 0 || x >= im->w || y >= im->h) return;
    p = im->rgb + ((size_t)y * (size_t)im->w + (size_t)x) * 3;
    p[0] = r; p[1] = g; p[2] = b;
}

CQ_IMG_DEF void cq_img_clear(cq_img *im, unsigned char r, unsigned char g, unsigned char b)
{
    size_t i, n;
    if (!cq__img_ok(im)) return;
    n = (size_t)im->w * (size_t)im->h;
    for (i = 0; i < n; i++) {
        im->rgb[3 * i] = r; im->rgb[3 * i + 1] = g; im->rgb[3 * i + 2] = b;
    }
}

/* integer range [*a, *b] of [c - r, c + r] within [0, n - 1]; 0 if empty.
 * Clamps in double before converting, so inf/huge values are safe. */
static int cq__span(double c, double r, int n, int *a, int *b)
{
    double lo = c - r, hi = c + r;
    if (lo != lo || hi != hi || hi < 0 || lo > n - 1) return 0;
    if (lo < 0) lo = 0;
    if (hi > n - 1) hi = n - 1;
    *a = (int)lo;
    if ((double)*a < lo) (*a)++;
    *b = (int)hi;
    return 1;
}

CQ_IMG_DEF void cq_img_disc(cq_img *im, double cx, double cy, double radius,
                            unsigned char r, unsigned char g, unsigned char b)
{
    double dx, dy, s, rr;
    int x, y, x0, x1, y0, y1;
    if (!cq__img_ok(im) || !(radius >= 0) || cx != cx || cy != cy) return;
    if (!cq__span(cx, radius, im->w, &x0, &x1) || !cq__span(cy, radius, im->h, &y0, &y1))
        return;
    s = radius > 1e150 ? 1.0 / radius : 1.0; /* avoid overflow to inf */
    rr = (radius * s) * (radius * s);
    for (y = y0; y <= y1; y++) {
        dy = (y - cy) * s;
        for (x = x0; x <= x1; x++) {
            dx = (x - cx) * s;
            if (dx * dx + dy * dy <= rr) cq__put(im, x, y, r, g, b);
        }
    }
}

CQ_IMG_DEF void cq_img_rect(cq_img *im, int x0, int y0, int x1, int y1,
                            unsigned char r, unsigned char g, unsigned char b)
{
    int x, y, t;
    if (!cq__img_ok(im)) return;
    if (x0 > x1) { t = x0; x0 = x1; x1 = t; }
    if (y0 > y1) { t = y0; y0 = y1; y1 = t; }
    if (x1 < 0 || y1 < 0 || x0 >= im->w || y0 >= im->h) return;
    if (x0 < 0) x0 = 0;
    if (y0 < 0) y0 = 0;
    if (x1 >= im->w) x1 = im->w - 1;
    if (y1 >= im->h) y1 = im->h - 1;
    for (y = y0; y <= y1; y++)
        for (x = x0; x <= x1; x++) cq__put(im, x, y, r, g, b);
}

/* floor(n / d) for d > 0 */
static long long cq__fdiv(long long n, long long d)
{
    long long q = n / d;
    if (n % d != 0 && n < 0) q--;
    return q;
}

CQ_IMG_DEF void cq_img_line(cq_img *im, int x0, int y0, int x1, int y1,
                            unsigned char r, unsigned char g, unsigned char b)
{
    const long long lim = 1LL << 28;
    long long a0, b0, a1, b1, da, db, t, lo, hi, s, n;
    int steep;
    if (!cq__img_ok(im)) return;
    if (x0 < -lim || x0 > lim || x1 < -lim || x1 > lim ||
        y0 < -lim || y0 > lim || y1 < -lim || y1 > lim) return;
    /* walk the major axis a; minor axis b = round(b0 + (a - a0) * db / da) */
    steep = (y1 > y0 ? y1 - y0 : y0 - y1) > (x1 > x0 ? x1 - x0 : x0 - x1);
    if (steep) { a0 = y0; b0 = x0; a1 = y1; b1 = x1; n = im->h; }
    else       { a0 = x0; b0 = y0; a1 = x1; b1 = y1; n = im->w; }
    if (a0 > a1) { t = a0; a0 = a1; a1 = t; t = b0; b0 = b1; b1 = t; }
    da = a1 - a0;
    db = b1 - b0;
    lo = a0 < 0 ? 0 : a0;
    hi = a1 > n - 1 ? n - 1 : a1;
    for (t = lo; t <= hi; t++) {
        s = da ? b0 + cq__fdiv(2 * (t - a0) * db + da, 2 * da) : b0;
        if (s < -1 || s > 65536) continue;
        if (steep) cq__put(im, (int)s, (int)t, r, g, b);
        else       cq__put(im, (int)t, (int)s, r, g, b);
    }
}

/* ---------------------------------------------------------------- PNG --- */

typedef struct cq__out {
    FILE *f;
    unsigned long crc;   /* running CRC-32 of the current chunk */
    int err;
} cq__out;

static unsigned long cq__crc_update(unsigned long crc, const unsigned char *p, size_t n)
{
    size_t i;
    int k;
    for (i = 0; i < n; i++) {
        crc ^= p[i];
        for (k = 0; k < 8; k++)
            crc = (crc >> 1) ^ (0xEDB88320UL & (0UL - (crc & 1UL)));
    }
    return crc;
}

static void cq__bytes(cq__out *o, const unsigned char *p, size_t n)
{
    if (n && fwrite(p, 1, n, o->f) != n) o->err = 1;
    o->crc = cq__crc_update(o->crc, p, n);
}

static void cq__be32(cq__out *o, unsigned long v)
{
    unsigned char b[4];
    b[0] = (unsigned char)(v >> 24); b[1] = (unsigned char)(v >> 16);
    b[2] = (unsigned char)(v >> 8);  b[3] = (unsigned char)v;
    cq__bytes(o, b, 4);
}

static void cq__chunk_begin(cq__out *o, unsigned long len, const char *type)
{
    cq__be32(o, len);
    o->crc = 0xFFFFFFFFUL;
    cq__bytes(o, (const unsigned char *)type, 4);
}

static void cq__chunk_end(cq__out *o)
{
    cq__be32(o, (o->crc ^ 0xFFFFFFFFUL) & 0xFFFFFFFFUL);
}

/* ---- deflate: LZ77 over a 32 KiB window (hash chains of 3-byte prefixes) with the fixed
   Huffman codes of RFC 1951, into a growing memory buffer (the IDAT length comes first). */
typedef struct cq__zbuf {
    unsigned char *p;
    size_t n, cap;
    unsigned long bits;
    int nbits, err;
} cq__zbuf;

static void cq__zbyte(cq__zbuf *z, unsigned char c)
{
    if (z->err) return;
    if (z->n == z->cap) {
        size_t cap = z->cap ? 2 * z->cap : 4096;
        unsigned char *q = (unsigned char *)realloc(z->p, cap);
        if (!q) { z->err = 1; return; }
        z->p = q; z->cap = cap;
    }
    z->p[z->n++] = c;
}

static void cq__zbits(cq__zbuf *z, unsigned long v, int n)   /* LSB first */
{
    z->bits |= v << z->nbits;
    z->nbits += n;
    while (z->nbits >= 8) { cq__zbyte(z, (unsigned char)(z->bits & 255)); z->bits >>= 8; z->nbits -= 8; }
}

static void cq__zhuff(cq__zbuf *z, unsigned code, int len)   /* Huffman codes go MSB first */
{
    unsigned r = 0;
    for (int i = 0; i < len; i++) r |= ((code >> i) & 1u) << (len - 1 - i);
    cq__zbits(z, r, len);
}

static void cq__zlit(cq__zbuf *z, int c)   /* fixed code of literal/length symbol c */
{
    if (c < 144) cq__zhuff(z, 0x30u + (unsigned)c, 8);
    else if (c < 256) cq__zhuff(z, 0x190u + (unsigned)(c - 144), 9);
    else if (c < 280) cq__zhuff(z, (unsigned)(c - 256), 7);
    else cq__zhuff(z, 0xC0u + (unsigned)(c - 280), 8);
}

static void cq__zmatch(cq__zbuf *z, int len, int dist)
{
    static const int lbase[29] = {3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59,
                                  67, 83, 99, 115, 131, 163, 195, 227, 258};
    static const int lext[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
    static const int dbase[30] = {1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769,
                                  1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
    static const int dext[30] = {0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};
    int li = 28, di = 29;
    while (lbase[li] > len) li--;
    while (dbase[di] > dist) di--;
    cq__zlit(z, 257 + li);
    if (lext[li]) cq__zbits(z, (unsigned long)(len - lbase[li]), lext[li]);
    cq__zhuff(z, (unsigned)di, 5);
    if (dext[di]) cq__zbits(z, (unsigned long)(dist - dbase[di]), dext[di]);
}

/* one final fixed-Huffman block of in[0..n); 0 on success */
static int cq__deflate(cq__zbuf *z, const unsigned char *in, size_t n)
{
    enum { HBITS = 15, WIN = 32768, CHAIN = 32 };
    int *head = (int *)malloc(sizeof(int) << HBITS), *prev = (int *)malloc(sizeof(int) * WIN);
    size_t i = 0;
    if (!head || !prev) { free(head); free(prev); return 1; }
    for (int k = 0; k < (1 << HBITS); k++) head[k] = -1;
    cq__zbits(z, 1, 1);   /* BFINAL */
    cq__zbits(z, 1, 2);   /* BTYPE = 01: fixed Huffman */
#define CQ__ZHASH(q) ((((unsigned)(q)[0] << 10) ^ ((unsigned)(q)[1] << 5) ^ (unsigned)(q)[2]) & ((1u << HBITS) - 1))
    while (i < n) {
        int best = 0, bestd = 0;
        if (i + 3 <= n) {
            unsigned h = CQ__ZHASH(in + i);
            int cand = head[h], tries = CHAIN;
            while (cand >= 0 && i - (size_t)cand <= WIN - 1 && tries--) {
                size_t m = 0, lim = n - i < 258 ? n - i : 258;
                while (m < lim && in[(size_t)cand + m] == in[i + m]) m++;
                if ((int)m > best) { best = (int)m; bestd = (int)(i - (size_t)cand); if (m == lim) break; }
                cand = prev[cand & (WIN - 1)];
            }
        }
        if (best >= 3) {
            cq__zmatch(z, best, bestd);
            for (int k = 0; k < best; k++, i++)
                if (i + 3 <= n) { unsigned h = CQ__ZHASH(in + i); prev[i & (WIN - 1)] = head[h]; head[h] = (int)i; }
        } else {
            if (i + 3 <= n) { unsigned h = CQ__ZHASH(in + i); prev[i & (WIN - 1)] = head[h]; head[h] = (int)i; }
            cq__zlit(z, in[i]);
            i++;
        }
    }
#undef CQ__ZHASH
    cq__zlit(z, 256);   /* end of block */
    if (z->nbits > 0) cq__zbits(z, 0, 8 - z->nbits);
    free(head); free(prev);
    return z->err;
}

CQ_IMG_DEF int cq_img_write_png(const char *path, const cq_img *im)
{
    static const unsigned char sig[8] = {137, 80, 78, 71, 13, 10, 26, 10};
    unsigned char ihdr[5] = {8, 2, 0, 0, 0}; /* depth, RGB, deflate, filter, no interlace */
    unsigned long long raw;
    unsigned long s1 = 1, s2 = 0;
    unsigned char *scan;
    cq__zbuf z;
    cq__out o;
    size_t row;
    if (!path || !cq__img_ok(im)) return 1;
    row = 1 + 3 * (size_t)im->w;
    raw = (unsigned long long)im->h * row;
    if (raw > 0x3FFFFFFFULL) return 1;   /* keeps the compressed IDAT under the chunk limit */
    scan = (unsigned char *)malloc((size_t)raw);
    if (!scan) return 1;
    for (int y = 0; y < im->h; y++) {   /* filter type 0 per row */
        scan[(size_t)y * row] = 0;
        memcpy(scan + (size_t)y * row + 1, im->rgb + (size_t)y * (size_t)im->w * 3, row - 1);
    }
    for (size_t i = 0; i < (size_t)raw; i++) { s1 = (s1 + scan[i]) % 65521UL; s2 = (s2 + s1) % 65521UL; }
    memset(&z, 0, sizeof z);
    cq__zbyte(&z, 0x78); cq__zbyte(&z, 0x01);   /* zlib header: deflate, 32 KiB window */
    if (cq__deflate(&z, scan, (size_t)raw)) { free(scan); free(z.p); return 1; }
    free(scan);
    for (int k = 3; k >= 0; k--) cq__zbyte(&z, (unsigned char)(((s2 << 16) | s1) >> (8 * k)));
    if (z.err || z.n > 0x7FFFFFFFUL) { free(z.p); return 1; }
    memset(&o, 0, sizeof o);
    o.f = fopen(path, "wb");
    if (!o.f) { free(z.p); return 1; }
    cq__bytes(&o, sig, 8);
    cq__chunk_begin(&o, 13, "IHDR");
    cq__be32(&o, (unsigned long)im->w);
    cq__be32(&o, (unsigned long)im->h);
    cq__bytes(&o, ihdr, 5);
    cq__chunk_end(&o);
    cq__chunk_begin(&o, (unsigned long)z.n, "IDAT");
    cq__bytes(&o, z.p, z.n);
    cq__chunk_end(&o);
    cq__chunk_begin(&o, 0, "IEND");
    cq__chunk_end(&o);
    free(z.p);
    if (fclose(o.f) != 0) o.err = 1;
    return o.err;
}

/* ---------------------------------------------------------------- text --- */
/* The font: one row of 7 bytes per character of cqx__font_chars, bit 4 = leftmost pixel. */
static const char cq__font_chars[] = " 0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ.,-+/:()=%_<>'^*";
static const unsigned char cq__font_rows[][7] = {
    {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00}, /* ' ' */
    {0x0e, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0e}, /* '0' */
    {0x04, 0x0c, 0x04, 0x04, 0x04, 0x04, 0x0e}, /* '1' */
    {0x0e, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1f}, /* '2' */
    {0x1f, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0e}, /* '3' */
    {0x02, 0x06, 0x0a, 0x12, 0x1f, 0x02, 0x02}, /* '4' */
    {0x1f, 0x10, 0x1e, 0x01, 0x01, 0x11, 0x0e}, /* '5' */
    {0x06, 0x08, 0x10, 0x1e, 0x11, 0x11, 0x0e}, /* '6' */
    {0x1f, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08}, /* '7' */
    {0x0e, 0x11, 0x11, 0x0e, 0x11, 0x11, 0x0e}, /* '8' */
    {0x0e, 0x11, 0x11, 0x0f, 0x01, 0x02, 0x0c}, /* '9' */
    {0x0e, 0x11, 0x11, 0x1f, 0x11, 0x11, 0x11}, /* 'A' */
    {0x1e, 0x11, 0x11, 0x1e, 0x11, 0x11, 0x1e}, /* 'B' */
    {0x0e, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0e}, /* 'C' */
    {0x1e, 0x11, 0x11, 0x11, 0x11, 0x11, 0x1e}, /* 'D' */
    {0x1f, 0x10, 0x10, 0x1e, 0x10, 0x10, 0x1f}, /* 'E' */
    {0x1f, 0x10, 0x10, 0x1e, 0x10, 0x10, 0x10}, /* 'F' */
    {0x0e, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0f}, /* 'G' */
    {0x11, 0x11, 0x11, 0x1f, 0x11, 0x11, 0x11}, /* 'H' */
    {0x0e, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0e}, /* 'I' */
    {0x07, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0c}, /* 'J' */
    {0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11}, /* 'K' */
    {0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1f}, /* 'L' */
    {0x11, 0x1b, 0x15, 0x15, 0x11, 0x11, 0x11}, /* 'M' */
    {0x11, 0x11, 0x19, 0x15, 0x13, 0x11, 0x11}, /* 'N' */
    {0x0e, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0e}, /* 'O' */
    {0x1e, 0x11, 0x11, 0x1e, 0x10, 0x10, 0x10}, /* 'P' */
    {0x0e, 0x11, 0x11, 0x11, 0x15, 0x12, 0x0d}, /* 'Q' */
    {0x1e, 0x11, 0x11, 0x1e, 0x14, 0x12, 0x11}, /* 'R' */
    {0x0f, 0x10, 0x10, 0x0e, 0x01, 0x01, 0x1e}, /* 'S' */
    {0x1f, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04}, /* 'T' */
    {0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0e}, /* 'U' */
    {0x11, 0x11, 0x11, 0x11, 0x11, 0x0a, 0x04}, /* 'V' */
    {0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0a}, /* 'W' */
    {0x11, 0x11, 0x0a, 0x04, 0x0a, 0x11, 0x11}, /* 'X' */
    {0x11, 0x11, 0x0a, 0x04, 0x04, 0x04, 0x04}, /* 'Y' */
    {0x1f, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1f}, /* 'Z' */
    {0x00, 0x00, 0x00, 0x00, 0x00, 0x0c, 0x0c}, /* '.' */
    {0x00, 0x00, 0x00, 0x00, 0x0c, 0x04, 0x08}, /* ',' */
    {0x00, 0x00, 0x00, 0x1f, 0x00, 0x00, 0x00}, /* '-' */
    {0x00, 0x04, 0x04, 0x1f, 0x04, 0x04, 0x00}, /* '+' */
    {0x01, 0x01, 0x02, 0x04, 0x08, 0x10, 0x10}, /* '/' */
    {0x00, 0x0c, 0x0c, 0x00, 0x0c, 0x0c, 0x00}, /* ':' */
    {0x02, 0x04, 0x08, 0x08, 0x08, 0x04, 0x02}, /* '(' */
    {0x08, 0x04, 0x02, 0x02, 0x02, 0x04, 0x08}, /* ')' */
    {0x00, 0x00, 0x1f, 0x00, 0x1f, 0x00, 0x00}, /* '=' */
    {0x18, 0x19, 0x02, 0x04, 0x08, 0x13, 0x03}, /* '%' */
    {0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x1f}, /* '_' */
    {0x02, 0x04, 0x08, 0x10, 0x08, 0x04, 0x02}, /* '<' */
    {0x08, 0x04, 0x02, 0x01, 0x02, 0x04, 0x08}, /* '>' */
    {0x04, 0x04, 0x08, 0x00, 0x00, 0x00, 0x00}, /* "'" */
    {0x04, 0x0a, 0x11, 0x00, 0x00, 0x00, 0x00}, /* '^' */
    {0x00, 0x04, 0x15, 0x0e, 0x15, 0x04, 0x00}, /* '*' */
};

CQ_IMG_DEF int cq_img_text_width(const char *text, int scale)
{
    size_t n = text ? strlen(text) : 0;
    return n ? (int)(n * 6 - 1) * (scale < 1 ? 1 : scale) : 0;
}

CQ_IMG_DEF void cq_img_text(cq_img *im, int x, int y, const char *text, int scale,
                            unsigned char r, unsigned char g, unsigned char b)
{
    if (!cq__img_ok(im) || !text) return;
    if (scale < 1) scale = 1;
    for (; *text; ++text, x += 6 * scale) {
        int c = (unsigned char)*text;
        const char *at;
        if (c >= 'a' && c <= 'z') c -= 'a' - 'A';
        at = c ? strchr(cq__font_chars, c) : NULL;
        if (!at) continue;
        for (int row = 0; row < 7; row++)
            for (int col = 0; col < 5; col++)
                if (cq__font_rows[at - cq__font_chars][row] & (0x10 >> col))
                    cq_img_rect(im, x + col * scale, y + row * scale, x + col * scale + scale - 1, y + row * scale + scale - 1, r, g, b);
    }
}

/* ---------------------------------------------------------------- GIF --- */

static const unsigned char cq__lv6[6] = {0, 51, 102, 153, 204, 255};
static const unsigned char cq__lv7[7] = {0, 43, 85, 128, 170, 213, 255};

static int cq__nearest(unsigned char v, const unsigned char *lv, int n)
{
    int i, best = 0;
    for (i = 1; i < n; i++)
        if (abs((int)v - (int)lv[i]) < abs((int)v - (int)lv[best])) best = i;
    return best;
}

CQ_IMG_DEF int cq_img_palette_index(unsigned char r, unsigned char g, unsigned char b)
{
    return (cq__nearest(r, cq__lv6, 6) * 7 + cq__nearest(g, cq__lv7, 7)) * 6 +
           cq__nearest(b, cq__lv6, 6);
}

CQ_IMG_DEF void cq_img_palette_color(int index, unsigned char rgb[3])
{
    if (index < 0 || index >= 252) { rgb[0] = rgb[1] = rgb[2] = 0; return; }
    rgb[0] = cq__lv6[index / 42];
    rgb[1] = cq__lv7[(index / 6) % 7];
    rgb[2] = cq__lv6[index % 6];
}

static void cq__gput(cq_gif *g, const unsigned char *p, size_t n)
{
    if (n && fwrite(p, 1, n, g->f) != n) g->err = 1;
}

static void cq__gle16(cq_gif *g, int v)
{
    unsigned char b[2];
    b[0] = (unsigned char)(v & 255); b[1] = (unsigned char)((v >> 8) & 255);
    cq__gput(g, b, 2);
}

static void cq__gif_reset(cq_gif *g)
{
    free(g->idx); free(g->hkey); free(g->hval);
    memset(g, 0, sizeof *g);
}

CQ_IMG_DEF int cq_gif_begin(cq_gif *g, const char *path, int w, int h, int delay_centiseconds)
{
    static const unsigned char lsd_tail[3] = {0xF7, 0, 0}; /* GCT, 8bpp, 256 colours */
    static const unsigned char loop[19] = {0x21, 0xFF, 11, 'N', 'E', 'T', 'S', 'C', 'A', 'P',
                                           'E', '2', '.', '0', 3, 1, 0, 0, 0};
    unsigned char pal[768];
    int i;
    if (!g) return 1;
    memset(g, 0, sizeof *g);
    if (!path || !cq__dims_ok(w, h)) return 1;
    g->idx = (unsigned char *)malloc((size_t)w * (size_t)h);
    g->hkey = (int *)malloc(8192 * sizeof(int));
    g->hval = (unsigned short *)malloc(8192 * sizeof(unsigned short));
    if (g->idx && g->hkey && g->hval) g->f = fopen(path, "wb");
    if (!g->f) { cq__gif_reset(g); return 1; }
    g->w = w; g->h = h;
    g->delay = delay_centiseconds < 0 ? 0 : delay_centiseconds > 65535 ? 65535 : delay_centiseconds;
    for (i = 0; i < 256; i++) cq_img_palette_color(i, pal + 3 * i);
    cq__gput(g, (const unsigned char *)"GIF89a", 6);
    cq__gle16(g, w);
    cq__gle16(g, h);
    cq__gput(g, lsd_tail, 3);
    cq__gput(g, pal, 768);
    cq__gput(g, loop, 19);
    return g->err;
}

typedef struct cq__bits {
    cq_gif *g;
    unsigned long acc;
    int nbits, size, len;
    unsigned char blk[256]; /* blk[0] = sub-block length */
} cq__bits;

static void cq__code(cq__bits *b, int code)
{
    b->acc |= (unsigned long)code << b->nbits;
    b->nbits += b->size;
    while (b->nbits >= 8) {
        b->blk[1 + b->len++] = (unsigned char)(b->acc & 255);
        b->acc >>= 8;
        b->nbits -= 8;
        if (b->len == 255) {
            b->blk[0] = 255;
            cq__gput(b->g, b->blk, 256);
            b->len = 0;
        }
    }
}

/* LZW-encode n (>= 1) 8-bit indices as GIF image data sub-blocks */
static void cq__lzw(cq_gif *g, const unsigned char *px, size_t n)
{
    enum { CLEAR = 256, EOI = 257, FIRST = 258, MAXC = 4096, HMASK = 8191 };
    cq__bits b;
    size_t i;
    int prefix, next = FIRST, key;
    unsigned long hh;
    unsigned char min_size = 8;
    memset(&b, 0, sizeof b);
    b.g = g;
    b.size = 9;
    cq__gput(g, &min_size, 1);
    for (i = 0; i < 8192; i++) g->hkey[i] = -1;
    cq__code(&b, CLEAR);
    prefix = px[0];
    for (i = 1; i < n; i++) {
        key = (prefix << 8) | px[i];
        hh = (((unsigned long)key * 2654435761UL) & 0xFFFFFFFFUL) >> 19;
        while (g->hkey[hh] != -1 && g->hkey[hh] != key) hh = (hh + 1) & HMASK;
        if (g->hkey[hh] == key) { prefix = g->hval[hh]; continue; }
        cq__code(&b, prefix);
        g->hkey[hh] = key;
        g->hval[hh] = (unsigned short)next++;
        if (next == MAXC) { /* table full: start over */
            cq__code(&b, CLEAR);
            for (hh = 0; hh < 8192; hh++) g->hkey[hh] = -1;
            next = FIRST;
            b.size = 9;
        } else if (next == (1 << b.size) + 1) {
            b.size++; /* the decoder widens one code later than we add */
        }
        prefix = px[i];
    }
    cq__code(&b, prefix);
    next++; /* the decoder adds an entry for the last code before EOI */
    if (next == (1 << b.size) + 1 && b.size < 12) b.size++;
    cq__code(&b, EOI);
    if (b.nbits > 0) { b.size = 8 - b.nbits; cq__code(&b, 0); } /* pad last byte */
    if (b.len > 0) { b.blk[0] = (unsigned char)b.len; cq__gput(g, b.blk, (size_t)b.len + 1); }
    b.blk[0] = 0;
    cq__gput(g, b.blk, 1); /* block terminator */
}

CQ_IMG_DEF int cq_gif_frame(cq_gif *g, const cq_img *im)
{
    unsigned char gce[8] = {0x21, 0xF9, 4, 0x04, 0, 0, 0, 0}; /* disposal: keep */
    unsigned char desc[10] = {0x2C, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    size_t i, n;
    const unsigned char *p;
    if (!g || !g->f || !cq__img_ok(im) || im->w != g->w || im->h != g->h) return 1;
    n = (size_t)g->w * (size_t)g->h;
    for (i = 0, p = im->rgb; i < n; i++, p += 3)
        g->idx[i] = (unsigned char)cq_img_palette_index(p[0], p[1], p[2]);
    gce[4] = (unsigned char)(g->delay & 255);
    gce[5] = (unsigned char)(g->delay >> 8);
    desc[5] = (unsigned char)(g->w & 255); desc[6] = (unsigned char)(g->w >> 8);
    desc[7] = (unsigned char)(g->h & 255); desc[8] = (unsigned char)(g->h >> 8);
    cq__gput(g, gce, 8);
    cq__gput(g, desc, 10);
    cq__lzw(g, g->idx, n);
    return g->err;
}

CQ_IMG_DEF int cq_gif_end(cq_gif *g)
{
    unsigned char trailer = 0x3B;
    int err;
    if (!g || !g->f) return 1;
    cq__gput(g, &trailer, 1);
    if (fclose(g->f) != 0) g->err = 1;
    err = g->err;
    cq__gif_reset(g);
    return err;
}

#ifdef __cplusplus
}
#endif
#endif /* CQ_IMAGE_IMPLEMENTED */
#endif /* CQ_IMAGE_IMPLEMENTATION */
