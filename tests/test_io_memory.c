/* chainqueen_io.h's memory bounds, measured: a counting allocator (CQ_IO_MALLOC / REALLOC /
   FREE) records the peak of live bytes while a large-but-legal PNG is decoded and while a file
   over the size limit is refused.  The manual's bound: a PNG decode holds at most the compressed
   data + 8 bytes per pixel (+ one byte per row); a file over the limit is refused before it is
   read.  Compiles as C99 and C++11. */
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

static size_t live_bytes, peak_bytes;
static void *cnt_malloc(size_t n)
{
    size_t *p = (size_t *)malloc(n + sizeof(size_t) * 2);
    if (!p) return NULL;
    p[0] = n;
    live_bytes += n;
    if (live_bytes > peak_bytes) peak_bytes = live_bytes;
    return p + 2;
}
static void cnt_free(void *q)
{
    size_t *p;
    if (!q) return;
    p = (size_t *)q - 2;
    live_bytes -= p[0];
    free(p);
}
static void *cnt_realloc(void *q, size_t n)
{
    void *r = cnt_malloc(n);   /* counts as the realloc of an allocator that must move: old + new */
    if (!r) return NULL;
    if (q) { size_t old = ((size_t *)q - 2)[0]; memcpy(r, q, old < n ? old : n); cnt_free(q); }
    return r;
}
#define CQ_IO_MALLOC(n) cnt_malloc(n)
#define CQ_IO_REALLOC(p, n) cnt_realloc(p, n)
#define CQ_IO_FREE(p) cnt_free(p)
#ifndef CQT_LINKED   /* tests/run.sh may link the implementation built once (tests/compile/impl.c) */
#define CHAINQUEEN_IMPLEMENTATION
#endif
#include "../chainqueen.h"
#define CHAINQUEEN_IO_IMPLEMENTATION
#include "../chainqueen_io.h"
#include "harness.h"

/* ---- a PNG writer with stored deflate blocks (the test needs no compressor) */
static unsigned long crc_of(const unsigned char *p, size_t n, unsigned long c)
{
    for (size_t i = 0; i < n; ++i) {
        c ^= p[i];
        for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320UL & (0UL - (c & 1UL)));
    }
    return c;
}
static void put32(unsigned char *o, unsigned long v)
{
    o[0] = (unsigned char)(v >> 24); o[1] = (unsigned char)(v >> 16); o[2] = (unsigned char)(v >> 8); o[3] = (unsigned char)v;
}
static size_t chunk(unsigned char *o, const char *type, const unsigned char *d, size_t n)
{
    put32(o, (unsigned long)n);
    memcpy(o + 4, type, 4);
    if (n) memcpy(o + 8, d, n);
    put32(o + 8 + n, crc_of(o + 4, n + 4, 0xFFFFFFFFUL) ^ 0xFFFFFFFFUL);
    return n + 12;
}
/* w x h, 16-bit RGBA (8 bytes per pixel), a gradient; returns the PNG (malloc) and its size */
static unsigned char *png16(int w, int h, size_t *size)
{
    const size_t row = 1 + 8 * (size_t)w, raw = row * (size_t)h, blocks = (raw + 65534) / 65535;
    const size_t zlen = 2 + raw + 5 * blocks + 4;
    unsigned char *r = (unsigned char *)malloc(raw), *z = (unsigned char *)malloc(zlen), *png = (unsigned char *)malloc(zlen + 64);
    unsigned char ihdr[13];
    unsigned long s1 = 1, s2 = 0;
    size_t o = 0, zp = 2;
    for (int y = 0; y < h; ++y) {
        r[(size_t)y * row] = 0;
        for (int x = 0; x < 8 * w; ++x) r[(size_t)y * row + 1 + (size_t)x] = (unsigned char)(x + 3 * y);
    }
    for (size_t i = 0; i < raw; ++i) { s1 = (s1 + r[i]) % 65521UL; s2 = (s2 + s1) % 65521UL; }
    z[0] = 0x78; z[1] = 0x01;
    for (size_t b = 0; b < blocks; ++b) {
        size_t n = raw - b * 65535 < 65535 ? raw - b * 65535 : 65535;
        z[zp++] = (unsigned char)(b + 1 == blocks);
        z[zp++] = (unsigned char)(n & 255); z[zp++] = (unsigned char)(n >> 8);
        z[zp++] = (unsigned char)(~n & 255); z[zp++] = (unsigned char)((~n >> 8) & 255);
        memcpy(z + zp, r + b * 65535, n);
        zp += n;
    }
    put32(z + zp, (s2 << 16) | s1);
    memcpy(png, "\x89PNG\r\n\x1a\n", 8);
    o = 8;
    put32(ihdr, (unsigned long)w); put32(ihdr + 4, (unsigned long)h);
    ihdr[8] = 16; ihdr[9] = 6; ihdr[10] = ihdr[11] = ihdr[12] = 0;
    o += chunk(png + o, "IHDR", ihdr, 13);
    o += chunk(png + o, "IDAT", z, zlen);
    o += chunk(png + o, "IEND", NULL, 0);
    free(r); free(z);
    *size = o;
    return png;
}

TEST(png_decode_peak_within_the_documented_bound)
{
    const int w = 1024, h = 768;
    size_t size;
    unsigned char *png = png16(w, h, &size);
    cq_io_image img;
    char err[256];
    size_t bound;
    live_bytes = peak_bytes = 0;
    CHECK_OK(cq_io_png_decode(png, size, &img, err, sizeof err));
    bound = size + 8 * (size_t)w * (size_t)h + (size_t)h + 65536;
    CHECK(peak_bytes <= bound, "peak %lu bytes > the bound %lu (file %lu + 8 bytes per pixel)", (unsigned long)peak_bytes,
          (unsigned long)bound, (unsigned long)size);
    printf("    16-bit RGBA %d x %d: file %lu bytes, decode peak %lu bytes (bound %lu)\n", w, h, (unsigned long)size,
           (unsigned long)peak_bytes, (unsigned long)bound);
    CHECK(img.width == w && img.height == h && img.rgba, "decoded %d x %d", img.width, img.height);
    if (img.rgba) {   /* pixel (5, 7): its high bytes, samples 2x..2x+6 of the row */
        const unsigned char *px = img.rgba + (7 * (size_t)w + 5) * 4;
        CHECK(px[0] == (unsigned char)(40 + 21) && px[3] == (unsigned char)(46 + 21), "pixel %u %u", px[0], px[3]);
    }
    cq_io_image_free(&img);
    CHECK(live_bytes == 0, "%lu bytes still allocated", (unsigned long)live_bytes);
    free(png);
}

TEST(too_large_file_refused_before_reading)
{
    const char *path = "build/io_sparse_64mib.bin";
    FILE *f = fopen(path, "wb");
    unsigned char *buf = NULL;
    size_t n = 0;
    char err[256];
    CHECK(f != NULL, "cannot write %s", path);
    if (!f) return;
    fseek(f, 64L << 20, SEEK_SET);   /* sparse: 64 MiB that take no disk */
    fputc(1, f);
    fclose(f);
    live_bytes = peak_bytes = 0;
    CHECK(cq_io_read_file(path, 1 << 20, &buf, &n, err, sizeof err) == CQ_ERROR_INVALID_ARGUMENT, "a 64 MiB file passed a 1 MiB limit");
    CHECK(strstr(err, "larger than the limit") != NULL, "message: %s", err);
    CHECK(peak_bytes == 0, "%lu bytes allocated before the refusal", (unsigned long)peak_bytes);
    remove(path);
}

/* A closed box voxelised so finely that its ray crossings pass CQ_IO_MAX_CROSSINGS: refused after
   counting them, before storing any (this used to allocate 16 bytes per crossing first). */
TEST(stl_crossings_counted_before_stored)
{
    static const double c[8][3] = {{0, 0, 0}, {1, 0, 0}, {1, 1, 0}, {0, 1, 0}, {0, 0, 1}, {1, 0, 1}, {1, 1, 1}, {0, 1, 1}};
    static const int f[12][3] = {{0, 2, 1}, {0, 3, 2}, {4, 5, 6}, {4, 6, 7}, {0, 1, 5}, {0, 5, 4},
                                 {2, 3, 7}, {2, 7, 6}, {1, 2, 6}, {1, 6, 5}, {0, 4, 7}, {0, 7, 3}};
    double v[12 * 9];
    cq_io_mesh mesh;
    cq_io_stl_robot_desc d;
    cq_io_robot rob;
    char err[256];
    cq_result r;
    for (int t = 0; t < 12; ++t)
        for (int k = 0; k < 3; ++k)
            for (int a = 0; a < 3; ++a) v[9 * t + 3 * k + a] = c[f[t][k]][a] * (a == 0 ? 0.03 : 1.0);   /* thin in x */
    memset(&mesh, 0, sizeof mesh);
    mesh.triangle_count = 12; mesh.v = v;
    memset(&d, 0, sizeof d);
    d.spacing = 1.0 / 2900;   /* 87 x 2900 x 2900 lattice points: 8.4M rows, 16.8M crossings */
    d.material.density = 1; d.material.youngs = 1e4; d.material.poisson = 0.3; d.material.actuator = -1;
    memset(&rob, 0, sizeof rob);
    live_bytes = peak_bytes = 0;
    r = cq_io_robot_from_mesh(&mesh, &d, &rob, err, sizeof err);
    CHECK(r == CQ_ERROR_INVALID_ARGUMENT && strstr(err, "CQ_IO_MAX_CROSSINGS") != NULL, "result %d: %s", (int)r, err);
    CHECK(peak_bytes < (1u << 20), "peak %lu bytes before the refusal", (unsigned long)peak_bytes);
    printf("    box at spacing 1/2900: %s; peak %lu bytes\n", r ? "refused" : "accepted", (unsigned long)peak_bytes);
    cq_io_robot_free(&rob);
}

RUN_TESTS(CASE(png_decode_peak_within_the_documented_bound), CASE(too_large_file_refused_before_reading),
          CASE(stl_crossings_counted_before_stored))
