/* Tests for examples/cq_image.h.
 * Usage: test_image OUTDIR   (OUTDIR must exist)
 * Writes into OUTDIR: test_image.png/.rgb, test_image_edge.png/.rgb,
 * test_image_1x1.png/.rgb, test_image.gif + test_image_gif.rgb/.idx,
 * test_image_small.gif + test_image_small_gif.rgb/.idx, test_image_lzw.gif +
 * test_image_lzw_gif.rgb/.idx.
 * The .rgb files hold the expected pixels (all frames concatenated), the .idx
 * files the expected palette indices; tests/check_image.py validates them.
 * Compiles as C99 and as C++. */
#define CQ_IMAGE_IMPLEMENTATION
#include "../examples/cq_image.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GIF_DELAY 7 /* must match check_image.py */

static int failures = 0;
static int checks = 0;

#define CHECK(cond)                                                           \
    do {                                                                      \
        checks++;                                                             \
        if (!(cond)) {                                                        \
            failures++;                                                       \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                     \
    } while (0)

static const char *outdir;

static const char *path_of(const char *name)
{
    static char buf[4096];
    snprintf(buf, sizeof buf, "%s/%s", outdir, name);
    return buf;
}

static int write_raw(const char *name, const unsigned char *p, size_t n, const char *mode)
{
    FILE *f = fopen(path_of(name), mode);
    int ok;
    if (!f) return 1;
    ok = fwrite(p, 1, n, f) == n;
    if (fclose(f) != 0) ok = 0;
    return !ok;
}

static int is_color(const cq_img *im, int x, int y, int r, int g, int b)
{
    const unsigned char *p = im->rgb + ((size_t)y * im->w + x) * 3;
    return p[0] == r && p[1] == g && p[2] == b;
}

static int count_color(const cq_img *im, int r, int g, int b)
{
    int x, y, n = 0;
    for (y = 0; y < im->h; y++)
        for (x = 0; x < im->w; x++) n += is_color(im, x, y, r, g, b);
    return n;
}

static void test_canvas_and_drawing(void)
{
    cq_img im, im2;
    int i, ok;
    volatile double zero = 0.0;
    double nan_value = zero / zero, inf_value = 1e300 * (1e300 + zero);
    CHECK(cq_img_init(&im, 0, 5) != 0 && im.rgb == NULL);
    CHECK(cq_img_init(&im, 5, -1) != 0 && im.rgb == NULL);
    CHECK(cq_img_init(&im, 70000, 1) != 0 && im.rgb == NULL);
    CHECK(cq_img_init(NULL, 4, 4) != 0);
    cq_img_free(&im); /* freeing a failed/empty canvas is fine */
    cq_img_disc(&im, 1, 1, 3, 0, 0, 0); /* drawing on it does nothing */
    cq_img_line(&im, 0, 0, 3, 3, 0, 0, 0);
    cq_img_rect(&im, 0, 0, 3, 3, 0, 0, 0);
    cq_img_clear(&im, 0, 0, 0);

    CHECK(cq_img_init(&im, 40, 30) == 0 && im.rgb != NULL && im.w == 40 && im.h == 30);
    if (!im.rgb) return;
    CHECK(count_color(&im, 255, 255, 255) == 40 * 30);

    cq_img_rect(&im, 19, 14, 10, 10, 255, 0, 0); /* corners in any order */
    CHECK(count_color(&im, 255, 0, 0) == 10 * 5);
    CHECK(is_color(&im, 10, 10, 255, 0, 0) && is_color(&im, 19, 14, 255, 0, 0));
    cq_img_rect(&im, -5, -5, 2, 1, 0, 255, 0); /* clipped */
    CHECK(count_color(&im, 0, 255, 0) == 3 * 2);
    cq_img_rect(&im, 40, 0, 100, 100, 0, 0, 255); /* fully outside */
    cq_img_rect(&im, INT_MIN, INT_MIN, -1, INT_MAX, 0, 0, 255);
    CHECK(count_color(&im, 0, 0, 255) == 0);
    cq_img_rect(&im, INT_MIN, INT_MIN, INT_MAX, INT_MAX, 1, 2, 3);
    CHECK(count_color(&im, 1, 2, 3) == 40 * 30);

    cq_img_clear(&im, 255, 255, 255);
    CHECK(count_color(&im, 255, 255, 255) == 40 * 30);
    cq_img_disc(&im, 5, 5, 0, 9, 9, 9);
    CHECK(count_color(&im, 9, 9, 9) == 1 && is_color(&im, 5, 5, 9, 9, 9));
    cq_img_disc(&im, 20, 15, 1, 8, 8, 8);
    CHECK(count_color(&im, 8, 8, 8) == 5);
    cq_img_disc(&im, 20, 15, 2, 7, 7, 7);
    CHECK(count_color(&im, 7, 7, 7) == 13);
    cq_img_disc(&im, 0, 0, 2, 6, 6, 6); /* quarter visible: 6 pixels */
    CHECK(count_color(&im, 6, 6, 6) == 6);
    cq_img_disc(&im, nan_value, 3, 2, 5, 5, 5);
    cq_img_disc(&im, 3, 3, -1, 5, 5, 5);
    cq_img_disc(&im, 1e300, -1e300, 1e300, 5, 5, 5); /* no overflow to inf */
    cq_img_disc(&im, inf_value, 3, inf_value, 5, 5, 5); /* inf - inf */
    cq_img_disc(&im, 1e9, 3, 2, 5, 5, 5);
    CHECK(count_color(&im, 5, 5, 5) == 0);
    cq_img_disc(&im, 20, 15, 1e300, 4, 4, 4); /* huge radius covers all */
    CHECK(count_color(&im, 4, 4, 4) == 40 * 30);

    cq_img_clear(&im, 255, 255, 255);
    cq_img_line(&im, 3, 4, 3, 4, 1, 1, 1);
    CHECK(count_color(&im, 1, 1, 1) == 1 && is_color(&im, 3, 4, 1, 1, 1));
    cq_img_line(&im, 0, 0, 9, 9, 2, 2, 2);
    CHECK(count_color(&im, 2, 2, 2) == 10);
    cq_img_line(&im, 30, 2, 33, 27, 3, 3, 3); /* steep: 26 pixels */
    CHECK(count_color(&im, 3, 3, 3) == 26 && is_color(&im, 30, 2, 3, 3, 3) &&
          is_color(&im, 33, 27, 3, 3, 3));
    cq_img_line(&im, -1000, 20, 1000, 20, 4, 4, 4); /* clipped to 40 pixels */
    CHECK(count_color(&im, 4, 4, 4) == 40);
    cq_img_line(&im, INT_MIN, 0, INT_MAX, 29, 5, 5, 5); /* rejected, no hang */
    CHECK(count_color(&im, 5, 5, 5) == 0);
    cq_img_line(&im, -(1 << 28), -(1 << 28), 1 << 28, 1 << 28, 6, 6, 6);
    CHECK(count_color(&im, 6, 6, 6) == 30); /* clipped diagonal */

    /* a line and its reverse draw the same pixels, every octant */
    ok = cq_img_init(&im2, 40, 30) == 0;
    CHECK(ok);
    for (i = 0; ok && i < 200; i++) {
        int x0 = (i * 37) % 50 - 5, y0 = (i * 53) % 40 - 5;
        int x1 = (i * 71 + 13) % 50 - 5, y1 = (i * 29 + 7) % 40 - 5;
        cq_img_clear(&im, 255, 255, 255);
        cq_img_clear(&im2, 255, 255, 255);
        cq_img_line(&im, x0, y0, x1, y1, 0, 0, 0);
        cq_img_line(&im2, x1, y1, x0, y0, 0, 0, 0);
        if (memcmp(im.rgb, im2.rgb, (size_t)40 * 30 * 3) != 0) {
            CHECK(!"line symmetric");
            break;
        }
    }
    cq_img_free(&im2);
    cq_img_free(&im);
    cq_img_free(&im); /* double free is safe */
    CHECK(im.rgb == NULL && im.w == 0);
}

static void test_palette(void)
{
    unsigned char c[3], d[3];
    int i, v, bad = 0;
    for (i = 0; i < 252; i++) { /* palette colours map to themselves */
        cq_img_palette_color(i, c);
        bad += cq_img_palette_index(c[0], c[1], c[2]) != i;
    }
    CHECK(bad == 0);
    for (v = 0; v < 256; v++) { /* per channel nearest: no level is closer */
        for (i = 0; i < 252; i++) {
            int k = cq_img_palette_index((unsigned char)v, (unsigned char)v, (unsigned char)v);
            cq_img_palette_color(k, c);
            cq_img_palette_color(i, d);
            bad += abs(d[0] - v) < abs(c[0] - v) || abs(d[1] - v) < abs(c[1] - v) ||
                   abs(d[2] - v) < abs(c[2] - v);
        }
    }
    CHECK(bad == 0);
    cq_img_palette_color(255, c);
    CHECK(c[0] == 0 && c[1] == 0 && c[2] == 0);
}

/* main PNG scene; the spot checks in check_image.py depend on it */
static void draw_scene(cq_img *im)
{
    int i;
    cq_img_clear(im, 230, 230, 230);
    cq_img_rect(im, 10, 10, 59, 39, 200, 30, 30);
    cq_img_rect(im, 150, 100, 260, 200, 30, 160, 60); /* clipped */
    cq_img_disc(im, 100, 75, 30, 30, 60, 200);
    cq_img_disc(im, -5, 140, 20, 250, 200, 0);        /* clipped */
    for (i = 0; i < 12; i++)
        cq_img_disc(im, 20 + 14 * i, 120 + (i % 3) * 4, 2.5 + 0.3 * i,
                    (unsigned char)(i * 20), 90, (unsigned char)(255 - i * 20));
    cq_img_line(im, 0, 149, 199, 0, 0, 0, 0);
    cq_img_line(im, 100, -50, 120, 300, 255, 0, 255);
    cq_img_line(im, 0, 0, 199, 149, 0, 0, 0);
}

static int png_case(const char *name, const cq_img *im)
{
    char raw[256];
    size_t len = strlen(name);
    int rc = cq_img_write_png(path_of(name), im);
    snprintf(raw, sizeof raw, "%.*s.rgb", (int)(len - 4), name);
    rc |= write_raw(raw, im->rgb, (size_t)im->w * im->h * 3, "wb");
    return rc;
}

static void test_png(void)
{
    cq_img im, empty = {0, 0, NULL};
    int x, y;
    CHECK(cq_img_init(&im, 200, 150) == 0); /* 90150 raw bytes: 2 stored blocks */
    if (!im.rgb) return;
    draw_scene(&im);
    CHECK(png_case("test_image.png", &im) == 0);
    cq_img_free(&im);

    CHECK(cq_img_init(&im, 428, 102) == 0); /* exactly 2 full 65535-byte blocks */
    if (!im.rgb) return;
    for (y = 0; y < im.h; y++)
        for (x = 0; x < im.w; x++) {
            unsigned char *p = im.rgb + ((size_t)y * im.w + x) * 3;
            p[0] = (unsigned char)x; p[1] = (unsigned char)(y * 2); p[2] = (unsigned char)(x ^ y);
        }
    CHECK(png_case("test_image_edge.png", &im) == 0);
    cq_img_free(&im);

    CHECK(cq_img_init(&im, 1, 1) == 0);
    if (!im.rgb) return;
    cq_img_clear(&im, 12, 34, 56);
    CHECK(png_case("test_image_1x1.png", &im) == 0);

    /* error paths */
    CHECK(cq_img_write_png(path_of("no_such_dir/x.png"), &im) != 0);
    CHECK(cq_img_write_png(NULL, &im) != 0);
    CHECK(cq_img_write_png(path_of("never.png"), NULL) != 0);
    CHECK(cq_img_write_png(path_of("never.png"), &empty) != 0);
    {
        FILE *f = fopen("/dev/full", "wb");
        if (f) { /* Linux: every write fails with ENOSPC */
            fclose(f);
            CHECK(cq_img_write_png("/dev/full", &im) != 0);
        }
    }
    cq_img_free(&im);
}

/* writes the frame to the GIF and its expected pixels/indices to raw files */
static int gif_frame_case(cq_gif *g, const cq_img *im, const char *base, int first)
{
    char name[256];
    size_t i, n = (size_t)im->w * im->h;
    unsigned char *idx = (unsigned char *)malloc(n);
    int rc = cq_gif_frame(g, im);
    if (!idx) return 1;
    for (i = 0; i < n; i++)
        idx[i] = (unsigned char)cq_img_palette_index(im->rgb[3 * i], im->rgb[3 * i + 1],
                                                     im->rgb[3 * i + 2]);
    snprintf(name, sizeof name, "%s_gif.rgb", base);
    rc |= write_raw(name, im->rgb, n * 3, first ? "wb" : "ab");
    snprintf(name, sizeof name, "%s_gif.idx", base);
    rc |= write_raw(name, idx, n, first ? "wb" : "ab");
    free(idx);
    return rc;
}

static void test_gif(void)
{
    cq_gif g;
    cq_img im, other;
    int f, x, y;
    unsigned long seed = 12345;
    const int W = 160, H = 120;

    CHECK(cq_img_init(&im, W, H) == 0);
    if (!im.rgb) return;
    CHECK(cq_gif_begin(&g, path_of("test_image.gif"), W, H, GIF_DELAY) == 0);
    for (f = 0; f < 4; f++) { /* animation: moving disc, lines, rect */
        cq_img_clear(&im, 255, 255, 255);
        cq_img_rect(&im, 5, 100, 155, 115, 120, 80, 40);
        cq_img_disc(&im, 20 + 35 * f, 50 + 10 * f, 12, 220, 40, 40);
        cq_img_line(&im, 0, 0, 159, 119 - 30 * f, 0, 0, 0);
        cq_img_line(&im, 80, 0, 80 + 20 * f, 119, 40, 90, 200);
        CHECK(gif_frame_case(&g, &im, "test_image", f == 0) == 0);
    }
    for (y = 0; y < H; y++) /* noise: fills the LZW table, forces clear codes */
        for (x = 0; x < W * 3; x++) {
            seed = (seed * 1103515245UL + 12345UL) & 0x7FFFFFFFUL;
            im.rgb[(size_t)y * W * 3 + x] = (unsigned char)(seed >> 16);
        }
    CHECK(gif_frame_case(&g, &im, "test_image", 0) == 0);
    for (y = 0; y < H; y++) /* gradient: exercises the quantiser */
        for (x = 0; x < W; x++) {
            unsigned char *p = im.rgb + ((size_t)y * W + x) * 3;
            p[0] = (unsigned char)(x * 255 / (W - 1));
            p[1] = (unsigned char)(y * 255 / (H - 1));
            p[2] = (unsigned char)((x + 2 * y) & 255);
        }
    CHECK(gif_frame_case(&g, &im, "test_image", 0) == 0);
    cq_img_clear(&im, 0, 0, 0); /* single colour: long runs */
    CHECK(gif_frame_case(&g, &im, "test_image", 0) == 0);
    CHECK(cq_img_init(&other, W + 1, H) == 0);
    CHECK(cq_gif_frame(&g, &other) != 0); /* wrong size is rejected */
    cq_img_free(&other);
    CHECK(cq_gif_end(&g) == 0);
    CHECK(g.f == NULL && g.idx == NULL);
    CHECK(cq_gif_end(&g) != 0); /* already ended: harmless */
    cq_img_free(&im);

    CHECK(cq_img_init(&im, 1, 1) == 0); /* tiny GIF: minimal LZW streams */
    if (!im.rgb) return;
    CHECK(cq_gif_begin(&g, path_of("test_image_small.gif"), 1, 1, GIF_DELAY) == 0);
    cq_img_clear(&im, 10, 200, 90);
    CHECK(gif_frame_case(&g, &im, "test_image_small", 1) == 0);
    cq_img_clear(&im, 255, 0, 0);
    CHECK(gif_frame_case(&g, &im, "test_image_small", 0) == 0);
    CHECK(cq_gif_end(&g) == 0);

    /* 4093x1 of palette colours with no repeated neighbour pair: every LZW
     * code is one pixel, so the table fills after exactly 3838 codes and
     * exactly 255 codes follow the clear; the EOI must then be 10 bits wide. */
    CHECK(cq_img_init(&other, 4093, 1) == 0);
    CHECK(cq_gif_begin(&g, path_of("test_image_lzw.gif"), 4093, 1, GIF_DELAY) == 0);
    for (x = 0; other.rgb && x < 4093; x++) /* block x/128 has step 2*(x/128)+1 */
        cq_img_palette_color((x % 128) * (2 * (x / 128) + 1) % 128, other.rgb + 3 * x);
    CHECK(other.rgb && gif_frame_case(&g, &other, "test_image_lzw", 1) == 0);
    CHECK(cq_gif_end(&g) == 0);
    cq_img_free(&other);

    /* error paths */
    CHECK(cq_gif_begin(&g, path_of("no_such_dir/x.gif"), 1, 1, 5) != 0);
    CHECK(g.f == NULL && g.idx == NULL);
    CHECK(cq_gif_frame(&g, &im) != 0);
    CHECK(cq_gif_end(&g) != 0);
    CHECK(cq_gif_begin(&g, path_of("never.gif"), 0, 1, 5) != 0);
    CHECK(cq_gif_begin(&g, NULL, 1, 1, 5) != 0);
    CHECK(cq_gif_begin(NULL, path_of("never.gif"), 1, 1, 5) != 0);
    CHECK(cq_gif_frame(NULL, &im) != 0 && cq_gif_end(NULL) != 0);
    {
        FILE *f2 = fopen("/dev/full", "wb");
        if (f2) { /* Linux: writes fail; the error surfaces at the latest in end */
            fclose(f2);
            if (cq_gif_begin(&g, "/dev/full", 1, 1, 5) == 0) {
                cq_gif_frame(&g, &im);
                CHECK(cq_gif_end(&g) != 0);
            }
        }
    }
    cq_img_free(&im);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s OUTDIR\n", argv[0]);
        return 2;
    }
    outdir = argv[1];
    test_canvas_and_drawing();
    test_palette();
    test_png();
    test_gif();
    printf("test_image: %d passed, %d failed\n", checks - failures, failures);
    return failures ? 1 : 0;
}
