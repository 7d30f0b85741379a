/* Tests for chainqueen_io.h (PNG/zlib decoder, STL loader, robots from images and meshes).
 * Usage: test_io FIXTURE_DIR [NAME_FILTER]
 *   FIXTURE_DIR is written by `python3 tests/make_io_fixtures.py FIXTURE_DIR`.
 * Compiles as C99 and as C++11; meant to run under -fsanitize=address,undefined and valgrind
 * too (the fuzz loops feed mutated PNG/zlib/STL bytes from memory and must never crash). */
#ifndef CQT_LINKED   /* tests/run.sh may link the implementation built once (tests/compile/impl.c) */
#define CHAINQUEEN_IMPLEMENTATION
#endif
#include "../chainqueen.h"
#define CHAINQUEEN_IO_IMPLEMENTATION
#include "../chainqueen_io.h"
#include "harness.h"

#include <stdlib.h>

static const char *fixdir = ".";
static char errbuf[512];

static const char *fix(const char *name, const char *ext)
{
    static char buf[4][1024];
    static int k;
    k = (k + 1) & 3;
    snprintf(buf[k], sizeof buf[k], "%s/%s%s", fixdir, name, ext);
    return buf[k];
}

static unsigned char *slurp(const char *path, size_t *size)
{
    unsigned char *data = NULL;
    if (cq_io_read_file(path, 0, &data, size, errbuf, sizeof errbuf) != CQ_SUCCESS) {
        CHECK(0, "cannot read %s: %s", path, errbuf);
        return NULL;
    }
    return data;
}

/* ---- deterministic RNG for the fuzz loops ---- */
static unsigned long long rng_state = 0x9e3779b97f4a7c15ULL;
static unsigned rnd(void)
{
    rng_state ^= (rng_state & 0x0007ffffffffffffULL) << 13;   /* masked: no bits shifted out */
    rng_state ^= rng_state >> 7;
    rng_state ^= (rng_state & 0x00007fffffffffffULL) << 17;
    return (unsigned)(rng_state >> 11);
}

static unsigned long crc32_of(const unsigned char *p, size_t n)
{
    unsigned long c = 0xffffffffUL;
    size_t i;
    int k;
    for (i = 0; i < n; ++i) {
        c ^= p[i];
        for (k = 0; k < 8; ++k) c = (c & 1) ? 0xedb88320UL ^ (c >> 1) : c >> 1;
    }
    return c ^ 0xffffffffUL;
}

static unsigned long be32(const unsigned char *p)
{
    return ((unsigned long)p[0] << 24) | ((unsigned long)p[1] << 16) | ((unsigned long)p[2] << 8) | p[3];
}

/* rewrite every complete chunk's CRC so that mutations reach the decoder proper */
static void fix_crcs(unsigned char *p, size_t n)
{
    size_t pos = 8;
    while (n >= 12 && pos <= n - 12) {
        unsigned long len = be32(p + pos), c;
        if (len > n - pos - 12) break;
        c = crc32_of(p + pos + 4, len + 4);
        p[pos + 8 + len] = (unsigned char)(c >> 24);
        p[pos + 9 + len] = (unsigned char)(c >> 16);
        p[pos + 10 + len] = (unsigned char)(c >> 8);
        p[pos + 11 + len] = (unsigned char)c;
        pos += 12 + len;
    }
}

/* ============================== PNG ============================== */

TEST(png_good_fixtures)
{
    FILE *f = fopen(fix("png_good", ".txt"), "r");
    char name[256];
    int w, h, n = 0;
    CHECK(f != NULL, "no manifest in %s (run tests/make_io_fixtures.py)", fixdir);
    if (!f) return;
    while (fscanf(f, "%255s %d %d", name, &w, &h) == 3) {
        cq_io_image img;
        size_t esize = 0, i;
        unsigned char *exp = slurp(fix(name, ".rgba"), &esize);
        cq_result r = cq_io_png_load(fix(name, ".png"), &img, errbuf, sizeof errbuf);
        ++n;
        CHECK(r == CQ_SUCCESS, "%s: %s", name, errbuf);
        CHECK(r != CQ_SUCCESS || errbuf[0] == 0, "%s: message on success: %s", name, errbuf);
        if (r == CQ_SUCCESS && exp) {
            CHECK(img.width == w && img.height == h, "%s: %dx%d, expected %dx%d", name, img.width, img.height, w, h);
            CHECK(esize == (size_t)w * (size_t)h * 4, "%s: fixture size", name);
            if (img.width == w && img.height == h && esize == (size_t)w * (size_t)h * 4) {
                for (i = 0; i < esize && img.rgba[i] == exp[i]; ++i) {}
                CHECK(i == esize, "%s: first differing byte %lu (pixel %lu, channel %lu): got %d, expected %d", name,
                      (unsigned long)i, (unsigned long)(i / 4), (unsigned long)(i % 4), i < esize ? img.rgba[i] : -1,
                      i < esize ? exp[i] : -1);
            }
        }
        cq_io_image_free(&img);
        cq_io_free(exp);
    }
    fclose(f);
    CHECK(n >= 100, "only %d good PNG fixtures", n);
}

TEST(png_memory_matches_file)
{
    size_t size;
    unsigned char *data = slurp(fix("big_rgba_dyn", ".png"), &size);
    cq_io_image a, b;
    if (!data) return;
    CHECK_OK(cq_io_png_decode(data, size, &a, errbuf, sizeof errbuf));
    CHECK_OK(cq_io_png_load(fix("big_rgba_dyn", ".png"), &b, NULL, 0));
    CHECK(a.width == b.width && a.height == b.height && a.rgba && b.rgba &&
          memcmp(a.rgba, b.rgba, (size_t)a.width * (size_t)a.height * 4) == 0, "memory and file decodes differ");
    cq_io_image_free(&a);
    cq_io_image_free(&b);
    cq_io_free(data);
}

static void expect_fail_png(const char *name, const char *sub)
{
    cq_io_image img;
    cq_result r;
    img.width = 123;
    img.rgba = (unsigned char *)&img;     /* must be overwritten */
    errbuf[0] = 0;
    r = cq_io_png_load(fix(name, ".png"), &img, errbuf, sizeof errbuf);
    CHECK(r == CQ_ERROR_INVALID_ARGUMENT, "%s: returned %d, expected an error", name, (int)r);
    CHECK(errbuf[0] != 0, "%s: empty message", name);
    CHECK(strstr(errbuf, sub) != NULL, "%s: message '%s' lacks '%s'", name, errbuf, sub);
    CHECK(strstr(errbuf, name) != NULL, "%s: message '%s' does not name the file", name, errbuf);
    CHECK(img.rgba == NULL && img.width == 0 && img.height == 0, "%s: output not cleared", name);
    cq_io_image_free(&img);
}

TEST(png_bad_fixtures)
{
    FILE *f = fopen(fix("png_bad", ".txt"), "r");
    char line[512];
    int n = 0;
    CHECK(f != NULL, "no manifest");
    if (!f) return;
    while (fgets(line, sizeof line, f)) {
        char *bar = strchr(line, '|'), *nl = strchr(line, '\n');
        if (!bar) continue;
        if (nl) *nl = 0;
        *bar = 0;
        expect_fail_png(line, bar + 1);
        ++n;
    }
    fclose(f);
    CHECK(n >= 40, "only %d bad PNG fixtures", n);
}

TEST(png_api_misuse)
{
    cq_io_image img;
    unsigned char *out = NULL;
    size_t n = 7;
    char tiny[8];
    CHECK(cq_io_png_decode(NULL, 0, &img, errbuf, sizeof errbuf) != CQ_SUCCESS && errbuf[0], "empty");
    CHECK(cq_io_png_decode(NULL, 10, &img, errbuf, sizeof errbuf) != CQ_SUCCESS && errbuf[0], "NULL data");
    CHECK(cq_io_png_decode("x", 1, NULL, errbuf, sizeof errbuf) != CQ_SUCCESS && errbuf[0], "NULL out");
    CHECK(cq_io_png_decode("x", 1, &img, NULL, 0) != CQ_SUCCESS, "no err buffer");
    CHECK(cq_io_png_decode("\x89PNG\r\n\x1a\n", 8, &img, tiny, sizeof tiny) != CQ_SUCCESS && strlen(tiny) == 7,
          "message truncated to the buffer: '%s'", tiny);
    CHECK(cq_io_png_load(fix("does_not_exist", ".png"), &img, errbuf, sizeof errbuf) != CQ_SUCCESS &&
          strstr(errbuf, "does_not_exist"), "missing file: %s", errbuf);
    CHECK(cq_io_png_load(NULL, &img, errbuf, sizeof errbuf) != CQ_SUCCESS, "NULL path");
    CHECK(cq_io_zlib_decompress("x", 1, 0, &out, &n, errbuf, sizeof errbuf) != CQ_SUCCESS && out == NULL && n == 0, "zlib");
    cq_io_image_free(NULL);
    cq_io_free(NULL);
}

TEST(zlib_roundtrip_blocks)
{
    /* a zlib stream with a stored block, a fixed block and a dynamic block is in the fixtures
       (as IDAT data); here: the stream of a big image, and max_out enforcement */
    size_t size, zlen, outn;
    unsigned char *data = slurp(fix("big_rgba_stored", ".png"), &size), *out = NULL;
    if (!data) return;
    zlen = be32(data + 33);
    CHECK(memcmp(data + 37, "IDAT", 4) == 0, "layout");
    CHECK_OK(cq_io_zlib_decompress(data + 41, zlen, 0, &out, &outn, errbuf, sizeof errbuf));
    CHECK(outn == (size_t)157 * (211 * 4 + 1), "size %lu", (unsigned long)outn);
    cq_io_free(out);
    CHECK(cq_io_zlib_decompress(data + 41, zlen, 1000, &out, &outn, errbuf, sizeof errbuf) == CQ_ERROR_INVALID_ARGUMENT &&
          strstr(errbuf, "exceeds"), "max_out: %s", errbuf);
    CHECK(out == NULL, "no output on failure");
    cq_io_free(data);
}

/* ============================== 2D robot ============================== */

static cq_io_material mat(unsigned char r, unsigned char g, unsigned char b, double E, double nu, double rho, int act)
{
    cq_io_material m;
    memset(&m, 0, sizeof m);
    m.r = r; m.g = g; m.b = b;
    m.youngs = E; m.poisson = nu; m.density = rho; m.actuator = act;
    return m;
}

static void robot_desc(cq_io_png_robot_desc *d, const cq_io_material *mats, int n)
{
    memset(d, 0, sizeof *d);
    d->materials = mats;
    d->material_count = n;
    d->origin[0] = 0.1;
    d->origin[1] = 0.2;
    d->pixel_size = 0.05;
    d->use_background = 1;
    d->background[0] = d->background[1] = d->background[2] = 255;
}

TEST(robot_from_png)
{
    cq_io_material mats[3];
    cq_io_png_robot_desc d;
    cq_io_robot r;
    int i, n_act[3] = { 0, 0, 0 };
    mats[0] = mat(255, 0, 0, 2e4, 0.3, 2.0, 0);
    mats[1] = mat(0, 0, 255, 3e4, 0.2, 1.0, 1);
    mats[2] = mat(0, 255, 0, 0, 0.25, 0, -1);      /* defaults: E = 1e4, density 1 */
    robot_desc(&d, mats, 3);
    CHECK_OK(cq_io_robot_from_png_file(fix("robot", ".png"), &d, &r, errbuf, sizeof errbuf));
    CHECK(r.dim == 2 && r.count == 16 * 4, "count %d", r.count);
    CHECK(r.actuator_groups == 2, "groups %d", r.actuator_groups);
    if (r.count == 64) {
        /* first particle: pixel (1, 0) (top row -> row 3 from the bottom), sub-cell (0, 0) */
        CHECK(fabs(r.x[0] - (0.1 + 1.25 * 0.05)) < 1e-12 && fabs(r.x[1] - (0.2 + 3.25 * 0.05)) < 1e-12, "x0 %g %g", r.x[0], r.x[1]);
        CHECK(fabs(r.x[2] - (0.1 + 1.75 * 0.05)) < 1e-12 && fabs(r.x[3] - r.x[1]) < 1e-12, "x1 %g %g", r.x[2], r.x[3]);
        CHECK(fabs(r.x[5] - (0.2 + 3.75 * 0.05)) < 1e-12, "x2.y %g", r.x[5]);
        CHECK(r.actuator[0] == 0 && r.youngs[0] == 2e4 && r.poisson[0] == 0.3, "red pixel material");
        CHECK(fabs(r.volume[0] - 0.025 * 0.025) < 1e-15 && fabs(r.mass[0] - 2.0 * 0.025 * 0.025) < 1e-15, "volume/mass");
        /* last particle: pixel (5, 3) = bottom right, green */
        CHECK(fabs(r.x[126] - (0.1 + 5.75 * 0.05)) < 1e-12 && fabs(r.x[127] - (0.2 + 0.75 * 0.05)) < 1e-12, "last %g %g",
              r.x[126], r.x[127]);
        CHECK(r.actuator[63] == -1 && r.youngs[63] == 1e4 && fabs(r.mass[63] - 0.025 * 0.025) < 1e-15, "green defaults");
        for (i = 0; i < r.count; ++i) n_act[r.actuator[i] + 1]++;
        CHECK(n_act[0] == 48 && n_act[1] == 8 && n_act[2] == 8, "actuator counts %d %d %d", n_act[0], n_act[1], n_act[2]);
        CHECK(fabs(r.lo[0] - (0.1 + 0.25 * 0.05)) < 1e-12 && fabs(r.hi[1] - (0.2 + 3.75 * 0.05)) < 1e-12, "bounds");
    }
    cq_io_robot_free(&r);

    /* 3 x 3 per pixel, lower alpha cutoff: the half-transparent red pixel (alpha 100) joins */
    d.particles_per_axis = 3;
    d.alpha_cutoff = 100;
    CHECK_OK(cq_io_robot_from_png_file(fix("robot", ".png"), &d, &r, errbuf, sizeof errbuf));
    CHECK(r.count == 17 * 9, "count %d", r.count);
    cq_io_robot_free(&r);
    /* without the background rule, white pixels have no material */
    d.use_background = 0;
    CHECK(cq_io_robot_from_png_file(fix("robot", ".png"), &d, &r, errbuf, sizeof errbuf) == CQ_ERROR_INVALID_ARGUMENT &&
          strstr(errbuf, "#ffffff") && strstr(errbuf, "(0, 1)"), "white: %s", errbuf);
    CHECK(r.count == 0 && r.x == NULL, "cleared on failure");
    d.use_background = 1;
    d.alpha_cutoff = 256;                /* everything transparent */
    CHECK(cq_io_robot_from_png_file(fix("robot", ".png"), &d, &r, errbuf, sizeof errbuf) == CQ_ERROR_INVALID_ARGUMENT &&
          strstr(errbuf, "no pixel"), "empty: %s", errbuf);
}

TEST(robot_unmatched_colour)
{
    cq_io_material mats[3];
    cq_io_png_robot_desc d;
    cq_io_robot r;
    size_t size;
    unsigned char *data = slurp(fix("robot_unmatched", ".png"), &size);
    mats[0] = mat(255, 0, 0, 2e4, 0.3, 2.0, 0);
    mats[1] = mat(0, 0, 255, 3e4, 0.2, 1.0, 1);
    mats[2] = mat(0, 255, 0, 0, 0.25, 0, -1);
    robot_desc(&d, mats, 3);
    if (!data) return;
    CHECK(cq_io_robot_from_png_memory(data, size, &d, &r, errbuf, sizeof errbuf) == CQ_ERROR_INVALID_ARGUMENT, "must fail");
    CHECK(strstr(errbuf, "(4, 2)") && strstr(errbuf, "#ffff00"), "message: %s", errbuf);
    d.ignore_unmatched = 1;
    CHECK_OK(cq_io_robot_from_png_memory(data, size, &d, &r, errbuf, sizeof errbuf));
    CHECK(r.count == 15 * 4, "count %d", r.count);
    cq_io_robot_free(&r);
    d.ignore_unmatched = 0;
    d.tolerance = 255;                  /* yellow is now within reach of red and green: red is first */
    CHECK_OK(cq_io_robot_from_png_memory(data, size, &d, &r, errbuf, sizeof errbuf));
    CHECK(r.count == 16 * 4, "count %d", r.count);
    cq_io_robot_free(&r);
    /* invalid descriptions */
    d.tolerance = 0;
    d.pixel_size = 0;
    CHECK(cq_io_robot_from_png_memory(data, size, &d, &r, errbuf, sizeof errbuf) == CQ_ERROR_INVALID_ARGUMENT &&
          strstr(errbuf, "pixel_size"), "%s", errbuf);
    d.pixel_size = 0.05;
    mats[1].poisson = 0.5;
    CHECK(cq_io_robot_from_png_memory(data, size, &d, &r, errbuf, sizeof errbuf) == CQ_ERROR_INVALID_ARGUMENT &&
          strstr(errbuf, "material 1"), "%s", errbuf);
    mats[1].poisson = 0.2;
    d.max_particles = 10;
    CHECK(cq_io_robot_from_png_memory(data, size, &d, &r, errbuf, sizeof errbuf) == CQ_ERROR_INVALID_ARGUMENT, "limit");
    cq_io_free(data);
}

TEST(robot_png_into_sim)
{
    cq_io_material mats[3];
    cq_io_png_robot_desc d;
    cq_io_robot r;
    cq_sim_desc sd;
    cq_sim *sim = NULL;
    cq_particles_desc pd;
    double stress[2 * 4];
    mats[0] = mat(255, 0, 0, 3e3, 0.3, 1.0, 0);
    mats[1] = mat(0, 0, 255, 3e3, 0.3, 1.0, 1);
    mats[2] = mat(0, 255, 0, 3e3, 0.3, 1.0, -1);
    robot_desc(&d, mats, 3);
    d.pixel_size = 1.0 / 64;              /* = dx: 2 x 2 particles per cell, as chainqueen expects */
    d.origin[0] = 0.3;
    d.origin[1] = 0.1;
    CHECK_OK(cq_io_robot_from_png_file(fix("robot", ".png"), &d, &r, errbuf, sizeof errbuf));
    memset(&sd, 0, sizeof sd);
    sd.dim = 2;
    sd.res[0] = sd.res[1] = 64;
    sd.dx = 1.0 / 64;
    sd.dt = 2e-4;
    sd.gravity[1] = -9.8;
    CHECK_OK(cq_sim_create(&sd, &sim));
    if (!sim) { cq_io_robot_free(&r); return; }
    cq_io_robot_particles(&r, &pd);
    CHECK_OK(cq_sim_add_particles(sim, &pd));
    CHECK(cq_sim_particle_count(sim) == r.count, "particle count");
    memset(stress, 0, sizeof stress);
    stress[0] = 10;
    CHECK_OK(cq_sim_set_actuation(sim, r.actuator_groups, stress));
    CHECK_OK(cq_sim_step(sim, 5));
    cq_sim_destroy(sim);
    cq_io_robot_free(&r);
}

/* ============================== STL ============================== */

static int same_triangles(const cq_io_mesh *a, const cq_io_mesh *b, double tol)
{
    int i;
    if (a->triangle_count != b->triangle_count) return 0;
    for (i = 0; i < 9 * a->triangle_count; ++i)
        if (fabs(a->v[i] - b->v[i]) > tol) return 0;
    return 1;
}

TEST(stl_loading)
{
    cq_io_mesh a, b, c;
    CHECK_OK(cq_io_stl_load(fix("cube_ascii", ".stl"), &a, errbuf, sizeof errbuf));
    CHECK_OK(cq_io_stl_load(fix("cube_binary", ".stl"), &b, errbuf, sizeof errbuf));
    CHECK_OK(cq_io_stl_load(fix("cube_binary_solidheader", ".stl"), &c, errbuf, sizeof errbuf));
    CHECK(a.triangle_count == 12 && !a.binary && b.binary && c.binary, "%d %d %d", a.triangle_count, b.binary, c.binary);
    CHECK(same_triangles(&a, &b, 0) && same_triangles(&b, &c, 0), "cube files differ");
    CHECK(fabs(cq_io_mesh_volume(&a) - 1.0) < 1e-12, "cube volume %g", cq_io_mesh_volume(&a));
    cq_io_mesh_free(&a);
    cq_io_mesh_free(&b);
    cq_io_mesh_free(&c);
    CHECK_OK(cq_io_stl_load(fix("tetra_ascii", ".stl"), &a, errbuf, sizeof errbuf));     /* upper case, CRLF, 1.0000E+00 */
    CHECK_OK(cq_io_stl_load(fix("tetra_binary", ".stl"), &b, errbuf, sizeof errbuf));
    CHECK(a.triangle_count == 4 && same_triangles(&a, &b, 0), "tetra files differ");
    CHECK(fabs(cq_io_mesh_volume(&b) - 1.0 / 6) < 1e-12, "tetra volume %g", cq_io_mesh_volume(&b));
    cq_io_mesh_free(&a);
    cq_io_mesh_free(&b);
    CHECK_OK(cq_io_stl_load(fix("two_solids", ".stl"), &a, errbuf, sizeof errbuf));
    CHECK(a.triangle_count == 12, "two solids: %d triangles", a.triangle_count);
    cq_io_mesh_free(&a);
    CHECK_OK(cq_io_stl_decode("solid empty\nendsolid empty\n", 27, &a, errbuf, sizeof errbuf));
    CHECK(a.triangle_count == 0, "empty solid");
    cq_io_mesh_free(&a);
}

TEST(stl_bad_fixtures)
{
    FILE *f = fopen(fix("stl_bad", ".txt"), "r");
    char line[512];
    int n = 0;
    CHECK(f != NULL, "no manifest");
    if (!f) return;
    while (fgets(line, sizeof line, f)) {
        char *bar = strchr(line, '|'), *nl = strchr(line, '\n');
        cq_io_mesh m;
        cq_result r;
        if (!bar) continue;
        if (nl) *nl = 0;
        *bar = 0;
        errbuf[0] = 0;
        r = cq_io_stl_load(fix(line, ".stl"), &m, errbuf, sizeof errbuf);
        CHECK(r == CQ_ERROR_INVALID_ARGUMENT, "%s: returned %d", line, (int)r);
        CHECK(errbuf[0] && strstr(errbuf, bar + 1), "%s: message '%s' lacks '%s'", line, errbuf, bar + 1);
        CHECK(m.v == NULL && m.triangle_count == 0, "%s: output not cleared", line);
        cq_io_mesh_free(&m);
        ++n;
    }
    fclose(f);
    CHECK(n >= 12, "only %d bad STL fixtures", n);
}

/* ============================== 3D robot ============================== */

static void stl_desc(cq_io_stl_robot_desc *d, double h)
{
    memset(d, 0, sizeof *d);
    d->spacing = h;
    d->material.youngs = 5e3;
    d->material.poisson = 0.3;
    d->material.density = 2;
    d->material.actuator = -1;
}

static int count_robot(const char *name, const cq_io_stl_robot_desc *d)
{
    cq_io_robot r;
    int n;
    if (cq_io_robot_from_stl_file(fix(name, ".stl"), d, &r, errbuf, sizeof errbuf) != CQ_SUCCESS) {
        CHECK(0, "%s: %s", name, errbuf);
        return -1;
    }
    n = r.count;
    cq_io_robot_free(&r);
    return n;
}

TEST(voxel_cube_counts)
{
    cq_io_stl_robot_desc d;
    cq_io_robot r;
    int n, i;
    stl_desc(&d, 0.1);
    CHECK((n = count_robot("cube_ascii", &d)) == 1000, "h 0.1: %d", n);
    CHECK((n = count_robot("cube_binary", &d)) == 1000, "binary h 0.1: %d", n);
    d.spacing = 0.25;                    /* rays at y == z run exactly along the x-face diagonals */
    CHECK((n = count_robot("cube_binary", &d)) == 64, "h 0.25: %d", n);
    d.spacing = 0.4;                     /* lattice points at 0.2, 0.6, 1.0: the last on faces, edges, corners */
    CHECK((n = count_robot("cube_binary", &d)) == 8, "h 0.4: %d", n);
    d.spacing = 1.0 / 7;
    CHECK((n = count_robot("cube_binary", &d)) == 343, "h 1/7: %d", n);
    /* transform: scale 2, translate (1, 2, 3) -> [1,3] x [2,4] x [3,5], h 0.25 -> 8^3 */
    d.spacing = 0.25;
    d.scale = 2;
    d.translate[0] = 1; d.translate[1] = 2; d.translate[2] = 3;
    CHECK_OK(cq_io_robot_from_stl_file(fix("cube_binary", ".stl"), &d, &r, errbuf, sizeof errbuf));
    CHECK(r.count == 512 && r.dim == 3, "count %d", r.count);
    CHECK(fabs(r.lo[0] - 1.125) < 1e-12 && fabs(r.lo[1] - 2.125) < 1e-12 && fabs(r.lo[2] - 3.125) < 1e-12 &&
          fabs(r.hi[0] - 2.875) < 1e-12 && fabs(r.hi[2] - 4.875) < 1e-12, "bounds %g %g %g .. %g %g %g",
          r.lo[0], r.lo[1], r.lo[2], r.hi[0], r.hi[1], r.hi[2]);
    for (i = 0; i < r.count; ++i)
        if (r.volume[i] != 0.25 * 0.25 * 0.25 || r.mass[i] != 2 * r.volume[i] || r.youngs[i] != 5e3 || r.actuator[i] != -1) break;
    CHECK(i == r.count, "particle %d has the wrong material", i);
    cq_io_robot_free(&r);
    /* a general transform: a 3x4 matrix that swaps x and z and stretches y */
    {
        static const double M[12] = { 0, 0, 1, 0.5,   0, 3, 0, 0,   1, 0, 0, -2 };
        d.transform = M;
        d.spacing = 0.1;
        CHECK_OK(cq_io_robot_from_stl_file(fix("cube_ascii", ".stl"), &d, &r, errbuf, sizeof errbuf));
        CHECK(r.count == 3000, "matrix: %d", r.count);
        CHECK(fabs(r.lo[1] - 0.05) < 1e-12 && fabs(r.hi[1] - 2.95) < 1e-12 && fabs(r.lo[2] + 1.95) < 1e-12, "matrix bounds");
        cq_io_robot_free(&r);
    }
}

/* unit cube + a small cube at [-1.25,-1]^3, h 0.5: the lattice is at -1, -0.5, 0, 0.5, 1, so
   rays run exactly through the unit cube's vertices, edges and faces.  With the ray rule
   (perturbation towards +y, +z; crossings at x <= point count) exactly the 8 points with
   coordinates in {0, 0.5} are inside and every ray crosses an even number of times. */
TEST(voxel_degenerate_rays)
{
    cq_io_mesh cube, two;
    cq_io_stl_robot_desc d;
    cq_io_robot r;
    int i;
    CHECK_OK(cq_io_stl_load(fix("cube_binary", ".stl"), &cube, errbuf, sizeof errbuf));
    if (cube.triangle_count != 12) { cq_io_mesh_free(&cube); return; }
    two.triangle_count = 24;
    two.binary = 1;
    two.v = (double *)malloc(24 * 9 * sizeof(double));
    for (i = 0; i < 12 * 9; ++i) {
        two.v[i] = cube.v[i];
        two.v[12 * 9 + i] = cube.v[i] * 0.25 - 1.25;
    }
    stl_desc(&d, 0.5);
    CHECK_OK(cq_io_robot_from_mesh(&two, &d, &r, errbuf, sizeof errbuf));
    CHECK(r.count == 8, "count %d", r.count);
    for (i = 0; i < r.count * 3; ++i)
        if (r.x[i] != 0 && r.x[i] != 0.5) break;
    CHECK(i == r.count * 3, "coordinate %g", i < r.count * 3 ? r.x[i] : 0.0);
    cq_io_robot_free(&r);
    /* the same with every triangle's winding flipped (normals inward) */
    for (i = 0; i < 24; ++i) {
        int k;
        for (k = 0; k < 3; ++k) {
            double t = two.v[9 * i + 3 + k];
            two.v[9 * i + 3 + k] = two.v[9 * i + 6 + k];
            two.v[9 * i + 6 + k] = t;
        }
    }
    CHECK_OK(cq_io_robot_from_mesh(&two, &d, &r, errbuf, sizeof errbuf));
    CHECK(r.count == 8, "flipped: count %d", r.count);
    cq_io_robot_free(&r);
    /* many shifted lattices on the cube: never "not closed", count within the lattice bounds */
    for (i = 0; i < 200; ++i) {
        double h = 0.05 + 0.3 * (rnd() % 1000) / 1000.0;
        int n, m;
        stl_desc(&d, h);
        d.translate[0] = (rnd() % 8) * 0.125;
        d.translate[1] = (rnd() % 8) * 0.125;
        d.translate[2] = (rnd() % 8) * 0.125;
        if (cq_io_robot_from_mesh(&cube, &d, &r, errbuf, sizeof errbuf) != CQ_SUCCESS) {
            CHECK(0, "h %g: %s", h, errbuf);
            break;
        }
        n = (int)floor(1.0 / h + 1e-9);
        m = (int)ceil(1.0 / h - 1e-9);
        CHECK(r.count >= n * n * n && r.count <= m * m * m, "h %g: %d not in [%d, %d]", h, r.count, n * n * n, m * m * m);
        cq_io_robot_free(&r);
    }
    free(two.v);
    cq_io_mesh_free(&cube);
}

TEST(voxel_tetra_and_sphere_volume)
{
    cq_io_stl_robot_desc d;
    cq_io_mesh m;
    int n;
    double vol, h;
    stl_desc(&d, 0.02);
    n = count_robot("tetra_binary", &d);
    vol = n * 0.02 * 0.02 * 0.02;
    CHECK(fabs(vol - 1.0 / 6) < 0.03 / 6, "tetra: %d particles, volume %g vs %g", n, vol, 1.0 / 6);
    CHECK(count_robot("tetra_ascii", &d) == n, "ascii and binary tetra differ");
    CHECK_OK(cq_io_stl_load(fix("sphere_binary", ".stl"), &m, errbuf, sizeof errbuf));
    CHECK(m.triangle_count == 1280, "sphere triangles %d", m.triangle_count);
    for (h = 0.04; h < 0.11; h += 0.02) {
        cq_io_robot r;
        stl_desc(&d, h);
        d.translate[0] = 0.013;
        if (cq_io_robot_from_mesh(&m, &d, &r, errbuf, sizeof errbuf) != CQ_SUCCESS) { CHECK(0, "sphere h %g: %s", h, errbuf); continue; }
        vol = r.count * h * h * h;
        CHECK(fabs(vol / cq_io_mesh_volume(&m) - 1) < (h < 0.05 ? 0.02 : 0.06), "sphere h %g: volume %g vs %g", h, vol,
              cq_io_mesh_volume(&m));
        cq_io_robot_free(&r);
    }
    cq_io_mesh_free(&m);
}

TEST(voxel_open_mesh)
{
    cq_io_stl_robot_desc d;
    cq_io_robot r;
    stl_desc(&d, 0.1);
    CHECK(cq_io_robot_from_stl_file(fix("open_cube", ".stl"), &d, &r, errbuf, sizeof errbuf) == CQ_ERROR_INVALID_ARGUMENT &&
          strstr(errbuf, "not closed") && strstr(errbuf, "open_cube"), "%s", errbuf);
    d.allow_open = 1;
    CHECK_OK(cq_io_robot_from_stl_file(fix("open_cube", ".stl"), &d, &r, errbuf, sizeof errbuf));
    CHECK(r.count > 0 && r.count <= 1000, "open: %d", r.count);
    cq_io_robot_free(&r);
    stl_desc(&d, 0);
    CHECK(cq_io_robot_from_stl_file(fix("cube_ascii", ".stl"), &d, &r, errbuf, sizeof errbuf) == CQ_ERROR_INVALID_ARGUMENT &&
          strstr(errbuf, "spacing"), "%s", errbuf);
    stl_desc(&d, 1e-4);
    CHECK(cq_io_robot_from_stl_file(fix("cube_ascii", ".stl"), &d, &r, errbuf, sizeof errbuf) == CQ_ERROR_INVALID_ARGUMENT &&
          strstr(errbuf, "too fine"), "%s", errbuf);
    stl_desc(&d, 0.01);
    CHECK(cq_io_robot_from_stl_file(fix("cube_ascii", ".stl"), &d, &r, errbuf, sizeof errbuf) == CQ_SUCCESS && r.count == 1000000,
          "1e6: %s", errbuf);
    cq_io_robot_free(&r);
    d.max_particles = 999999;
    CHECK(cq_io_robot_from_stl_file(fix("cube_ascii", ".stl"), &d, &r, errbuf, sizeof errbuf) == CQ_ERROR_INVALID_ARGUMENT &&
          strstr(errbuf, "limit"), "%s", errbuf);
}

static int drop_top(const double x[3], cq_io_material *m, void *user)
{
    int *calls = (int *)user;
    ++*calls;
    if (x[2] > 0.8) return 1;
    m->youngs = 1e4 + 1e4 * x[0];
    return 0;
}

TEST(voxel_materials)
{
    cq_io_stl_robot_desc d;
    cq_io_robot r;
    cq_io_box boxes[2];
    int calls = 0, i, cnt[3] = { 0, 0, 0 };
    stl_desc(&d, 0.1);
    memset(boxes, 0, sizeof boxes);
    boxes[0].hi[0] = 0.5; boxes[0].hi[1] = 1; boxes[0].hi[2] = 1; boxes[0].actuator = 0;
    boxes[1].lo[0] = 0.5; boxes[1].hi[0] = 1; boxes[1].hi[1] = 0.5; boxes[1].hi[2] = 1; boxes[1].actuator = 1;
    d.boxes = boxes;
    d.box_count = 2;
    d.material_fn = drop_top;
    d.user = &calls;
    CHECK_OK(cq_io_robot_from_stl_file(fix("cube_binary", ".stl"), &d, &r, errbuf, sizeof errbuf));
    CHECK(calls == 1000 && r.count == 800, "calls %d count %d", calls, r.count);
    for (i = 0; i < r.count; ++i) {
        cnt[r.actuator[i] + 1]++;
        if (fabs(r.youngs[i] - (1e4 + 1e4 * r.x[3 * i])) > 1e-9 || r.x[3 * i + 2] > 0.8) break;
    }
    CHECK(i == r.count, "particle %d", i);
    CHECK(cnt[1] == 400 && cnt[2] == 200 && cnt[0] == 200, "actuators %d %d %d", cnt[0], cnt[1], cnt[2]);
    CHECK(r.actuator_groups == 2, "groups %d", r.actuator_groups);
    cq_io_robot_free(&r);
}

TEST(voxel_into_sim)
{
    cq_io_stl_robot_desc d;
    cq_io_robot r;
    cq_sim_desc sd;
    cq_sim *sim = NULL;
    cq_particles_desc pd;
    stl_desc(&d, 1.0 / 64);               /* dx/2 with dx = 1/32 */
    d.scale = 0.25;
    d.translate[0] = d.translate[1] = d.translate[2] = 0.3;
    d.material.youngs = 3e3;
    d.material.density = 1;
    CHECK_OK(cq_io_robot_from_stl_file(fix("cube_ascii", ".stl"), &d, &r, errbuf, sizeof errbuf));
    CHECK(r.count == 16 * 16 * 16, "count %d", r.count);
    memset(&sd, 0, sizeof sd);
    sd.dim = 3;
    sd.res[0] = sd.res[1] = sd.res[2] = 32;
    sd.dx = 1.0 / 32;
    sd.dt = 2e-4;
    sd.gravity[1] = -9.8;
    CHECK_OK(cq_sim_create(&sd, &sim));
    if (sim) {
        cq_io_robot_particles(&r, &pd);
        CHECK_OK(cq_sim_add_particles(sim, &pd));
        CHECK_OK(cq_sim_step(sim, 2));
        cq_sim_destroy(sim);
    }
    cq_io_robot_free(&r);
}

/* ============================== fuzzing ============================== */

static void mutate(unsigned char *p, size_t *n, size_t from)
{
    int k, edits = 1 + (int)(rnd() % 4);
    if (*n <= from) return;
    for (k = 0; k < edits; ++k) {
        size_t at = from + rnd() % (*n - from);
        switch (rnd() % 6) {
        case 0: p[at] ^= (unsigned char)(1u << (rnd() % 8)); break;
        case 1: p[at] = (unsigned char)rnd(); break;
        case 2: p[at] = (unsigned char)(rnd() & 1 ? 0xff : 0); break;
        case 3: if (rnd() % 4 == 0) *n = at + 1; break;              /* truncate */
        case 4: p[at] = (unsigned char)(p[at] + 1); break;
        default: { size_t at2 = from + rnd() % (*n - from); unsigned char t = p[at]; p[at] = p[at2]; p[at2] = t; } break;
        }
    }
}

static void fuzz_png(const char *name, int iters, int fixcrc, int *ok, int *bad)
{
    size_t size, n;
    unsigned char *orig = slurp(fix(name, ".png"), &size), *buf;
    int i;
    if (!orig) return;
    buf = (unsigned char *)malloc(size);
    for (i = 0; i < iters; ++i) {
        cq_io_image img;
        cq_result r;
        memcpy(buf, orig, size);
        n = size;
        mutate(buf, &n, fixcrc ? 33 : 0);
        if (fixcrc) fix_crcs(buf, n);
        errbuf[0] = 0;
        r = cq_io_png_decode(buf, n, &img, errbuf, sizeof errbuf);
        if (r == CQ_SUCCESS) {
            ++*ok;
            CHECK(img.width > 0 && img.height > 0 && img.rgba, "%s: empty success", name);
            CHECK(errbuf[0] == 0, "message on success");
            if (img.rgba) { volatile unsigned s = 0; size_t k; for (k = 0; k < (size_t)img.width * img.height * 4; ++k) s += img.rgba[k]; (void)s; }
        } else {
            ++*bad;
            CHECK(errbuf[0] != 0, "%s: empty error message (iteration %d)", name, i);
            CHECK(img.rgba == NULL, "output on failure");
        }
        cq_io_image_free(&img);
    }
    free(buf);
    cq_io_free(orig);
}

TEST(fuzz_png_decoder)
{
    int ok = 0, bad = 0;
    fuzz_png("c2_dyn_fmix", 1500, 0, &ok, &bad);
    fuzz_png("c2_dyn_fmix", 1500, 1, &ok, &bad);
    fuzz_png("c3_fixed_f4", 1000, 1, &ok, &bad);
    fuzz_png("c6_stored_f3", 500, 1, &ok, &bad);
    fuzz_png("pal_d2_trns", 500, 1, &ok, &bad);
    fuzz_png("c6_d16", 500, 1, &ok, &bad);
    CHECK(bad > 1000 && ok + bad == 5500, "ok %d bad %d", ok, bad);
    printf("    fuzz png: %d decoded, %d rejected\n", ok, bad);
}

static int fuzz_zlib_file(const char *name, int iters)
{
    size_t size, zlen, n, outn;
    unsigned char *png = slurp(fix(name, ".png"), &size), *z, *out;
    int i, ok = 0;
    if (!png) return 0;
    CHECK(memcmp(png + 37, "IDAT", 4) == 0, "%s: IDAT is not the second chunk", name);
    zlen = be32(png + 33);
    z = (unsigned char *)malloc(zlen);
    for (i = 0; i < iters; ++i) {
        cq_result r;
        memcpy(z, png + 41, zlen);
        n = zlen;
        /* half of the time mutate near the start, where the Huffman tables are */
        if (i % 2) { size_t m = n < 64 ? n : 64; mutate(z, &m, 2); if (m < 64) n = m; }
        else mutate(z, &n, 0);
        out = NULL;
        r = cq_io_zlib_decompress(z, n, (size_t)1 << 20, &out, &outn, errbuf, sizeof errbuf);
        if (r == CQ_SUCCESS) { ++ok; CHECK(out != NULL, "no buffer"); }
        else CHECK(errbuf[0] != 0 && out == NULL, "bad failure");
        cq_io_free(out);
    }
    free(z);
    cq_io_free(png);
    return ok;
}

TEST(fuzz_zlib)
{
    int ok = fuzz_zlib_file("c2_dyn_fmix", 2000) + fuzz_zlib_file("c2_fixed_fmix", 1000) + fuzz_zlib_file("c6_stored_f3", 500);
    printf("    fuzz zlib: %d of 3500 decoded\n", ok);
}

static void fuzz_stl(const char *name, int iters, int *ok)
{
    size_t size, n;
    unsigned char *orig = slurp(fix(name, ".stl"), &size), *buf;
    int i;
    if (!orig) return;
    buf = (unsigned char *)malloc(size);
    for (i = 0; i < iters; ++i) {
        cq_io_mesh m;
        cq_result r;
        memcpy(buf, orig, size);
        n = size;
        mutate(buf, &n, 0);
        errbuf[0] = 0;
        r = cq_io_stl_decode(buf, n, &m, errbuf, sizeof errbuf);
        if (r == CQ_SUCCESS) {
            ++*ok;
            if (m.triangle_count > 0) {
                /* voxelise whatever came out, with a spacing that keeps the lattice small */
                cq_io_stl_robot_desc d;
                cq_io_robot rob;
                double lo[3], hi[3], ext = 0;
                int k, ax;
                for (k = 0; k < 3 * m.triangle_count; ++k)
                    for (ax = 0; ax < 3; ++ax) {
                        double x = m.v[3 * k + ax];
                        if (k == 0 || x < lo[ax]) lo[ax] = x;
                        if (k == 0 || x > hi[ax]) hi[ax] = x;
                    }
                for (ax = 0; ax < 3; ++ax) if (hi[ax] - lo[ax] > ext) ext = hi[ax] - lo[ax];
                stl_desc(&d, ext > 0 && ext < 1e300 ? ext / 9 : 1);
                d.allow_open = (int)(rnd() & 1);
                if (cq_io_robot_from_mesh(&m, &d, &rob, errbuf, sizeof errbuf) == CQ_SUCCESS) {
                    CHECK(rob.count > 0 && rob.count <= 1000, "count %d", rob.count);
                    cq_io_robot_free(&rob);
                } else {
                    CHECK(errbuf[0] != 0, "voxeliser: empty message");
                }
            }
        } else {
            CHECK(errbuf[0] != 0, "%s: empty error message", name);
        }
        cq_io_mesh_free(&m);
    }
    free(buf);
    cq_io_free(orig);
}

TEST(fuzz_stl_loader)
{
    int ok = 0;
    fuzz_stl("cube_ascii", 1500, &ok);
    fuzz_stl("tetra_ascii", 500, &ok);
    fuzz_stl("cube_binary", 1000, &ok);
    fuzz_stl("tetra_binary", 500, &ok);
    printf("    fuzz stl: %d of 3500 decoded\n", ok);
}

int main(int argc, char **argv)
{
    static const cqt_case cases[] = {
        CASE(png_good_fixtures), CASE(png_memory_matches_file), CASE(png_bad_fixtures), CASE(png_api_misuse),
        CASE(zlib_roundtrip_blocks), CASE(robot_from_png), CASE(robot_unmatched_colour), CASE(robot_png_into_sim),
        CASE(stl_loading), CASE(stl_bad_fixtures), CASE(voxel_cube_counts), CASE(voxel_degenerate_rays),
        CASE(voxel_tetra_and_sphere_volume), CASE(voxel_open_mesh), CASE(voxel_materials), CASE(voxel_into_sim),
        CASE(fuzz_png_decoder), CASE(fuzz_zlib), CASE(fuzz_stl_loader),
    };
    if (argc < 2) {
        fprintf(stderr, "usage: %s FIXTURE_DIR [NAME_FILTER]\n", argv[0]);
        return 2;
    }
    fixdir = argv[1];
    return cqt_run(cases, (int)(sizeof cases / sizeof cases[0]), argc - 1, argv + 1);
}
