/* chainqueen_io.h - robots from images and meshes for chainqueen.h (single header, stb-style).

   In exactly one translation unit:
       #define CHAINQUEEN_IO_IMPLEMENTATION
       #include "chainqueen_io.h"
   (chainqueen.h is included for cq_result and cq_particles_desc; its implementation is
   compiled only where CHAINQUEEN_IMPLEMENTATION is defined, as usual.)

   C99; also compiles as C++11.  Depends only on the C standard library (and -lm).

   Every function that can fail returns a cq_result (CQ_SUCCESS = 0, negative = error) and,
   when `err` is not NULL and errcap > 0, writes a NUL-terminated human-readable message into
   err[0..errcap) (empty string on success).  Nothing aborts or exits.  Malformed input of any
   kind (truncated, corrupted, hostile) gives CQ_ERROR_INVALID_ARGUMENT with a message;
   allocation failure gives CQ_ERROR_OUT_OF_MEMORY; values that would exceed the limits
   below are refused before anything large is allocated.

   What is here
   ------------
   PNG decoder      cq_io_png_decode / cq_io_png_load -> cq_io_image (RGBA8, top row first).
                    Colour types 0, 2, 3, 4, 6; bit depths 1/2/4/8/16 where the format allows
                    them (16-bit samples keep their high byte); tRNS; all five filters; chunk
                    CRCs and the zlib Adler-32 are checked; interlaced (Adam7) images are
                    refused with an "unsupported" message.
   zlib inflate     cq_io_zlib_decompress (stored, fixed and dynamic Huffman blocks).
   STL loader       cq_io_stl_decode / cq_io_stl_load -> cq_io_mesh (binary or ASCII,
                    detected from the content; ASCII errors name the line).
   2D robot         cq_io_robot_from_image / _from_png_memory / _from_png_file: every solid
                    pixel becomes n x n particles, material from a colour table.
   3D robot         cq_io_robot_from_mesh / _from_stl_memory / _from_stl_file: a closed mesh
                    is voxelised on a regular lattice (ray parity along +x with a simulated
                    perturbation rule, so rays through edges and vertices count correctly).
   cq_io_robot_particles fills a cq_particles_desc that points into a cq_io_robot.

   Limits (define before including the implementation to change them)
       CQ_IO_MAX_DIM          16384      largest PNG width/height
       CQ_IO_MAX_PIXELS       1 << 26    largest PNG width*height (256 MiB of RGBA)
   Peak memory of a PNG decode: the compressed image data (at most the file) plus the inflated
   scanlines (h * (1 + w * bytes per pixel), at most 8 bytes per pixel for 16-bit RGBA), then
   the scanlines and the RGBA output (converted in place when a pixel has 4 bytes or more): at
   most the file + 8 bytes per pixel, 512 MiB + the file at the default limits, all checked
   from the header before the scanlines are allocated.  cq_io_read_file refuses a file over
   its limit before reading it (when its size can be known; a pipe is read up to the limit).
       CQ_IO_MAX_FILE_BYTES   1 << 30    largest file read by the *_file/_load functions
       CQ_IO_MAX_PARTICLES    1 << 25    most particles in a robot (desc->max_particles overrides)
       CQ_IO_MAX_LATTICE      1 << 30    most lattice points the voxeliser will visit
       CQ_IO_MAX_CROSSINGS    1 << 24    most ray/triangle crossings it will hold (16 bytes each: 256 MiB);
                                         counted before they are stored, refused above
   Memory: CQ_IO_MALLOC(n), CQ_IO_REALLOC(p, n), CQ_IO_FREE(p) (default malloc/realloc/free).
   Everything returned is released with the matching *_free function (or cq_io_free). */
#ifndef CHAINQUEEN_IO_H
#define CHAINQUEEN_IO_H

#include "chainqueen.h"
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- images ---- */
typedef struct cq_io_image {
    int width, height;
    unsigned char *rgba;       /* width*height*4 bytes, row-major, top row first */
} cq_io_image;

cq_result cq_io_png_decode(const void *data, size_t size, cq_io_image *out, char *err, size_t errcap);
cq_result cq_io_png_load(const char *path, cq_io_image *out, char *err, size_t errcap);
void      cq_io_image_free(cq_io_image *img);          /* NULL and zeroed images are fine */

/* zlib (RFC 1950/1951) stream -> *out (free with cq_io_free), at most max_out bytes
   (0 = CQ_IO_MAX_FILE_BYTES); more output than that is an error. */
cq_result cq_io_zlib_decompress(const void *data, size_t size, size_t max_out,
                                unsigned char **out, size_t *out_size, char *err, size_t errcap);
/* whole file -> *out (free with cq_io_free); max_size 0 = CQ_IO_MAX_FILE_BYTES */
cq_result cq_io_read_file(const char *path, size_t max_size, unsigned char **out, size_t *out_size,
                          char *err, size_t errcap);
void      cq_io_free(void *p);

/* ---- meshes ---- */
typedef struct cq_io_mesh {
    int triangle_count;
    double *v;                 /* 9 doubles per triangle: x0 y0 z0 x1 y1 z1 x2 y2 z2 */
    int binary;                /* 1 if the file was binary STL, 0 if ASCII */
} cq_io_mesh;

cq_result cq_io_stl_decode(const void *data, size_t size, cq_io_mesh *out, char *err, size_t errcap);
cq_result cq_io_stl_load(const char *path, cq_io_mesh *out, char *err, size_t errcap);
void      cq_io_mesh_free(cq_io_mesh *m);
double    cq_io_mesh_volume(const cq_io_mesh *m);  /* signed; > 0 for outward-facing triangles */

/* ---- robots ---- */
typedef struct cq_io_material {
    unsigned char r, g, b;     /* the colour key (PNG robots only) */
    double youngs;             /* 0 = 1e4 (chainqueen's default); must be >= 0 */
    double poisson;            /* used as given; must be in [0, 0.5) */
    double density;            /* mass per unit volume (area in 2D); 0 = 1 */
    int actuator;              /* actuator group, -1 = passive */
} cq_io_material;

typedef struct cq_io_robot {
    int dim;                   /* 2 or 3 */
    int count;                 /* particles */
    double *x;                 /* count*dim */
    double *mass, *volume, *youngs, *poisson;   /* count each */
    int *actuator;             /* count; -1 = none */
    int actuator_groups;       /* 1 + the largest actuator group used (0 if none) */
    double lo[3], hi[3];       /* bounding box of the particle positions */
} cq_io_robot;

void cq_io_robot_free(cq_io_robot *r);
/* Points a cq_particles_desc at the robot's arrays (count, x, mass, volume, youngs, poisson,
   actuator; everything else zero).  The robot must outlive the desc's use. */
void cq_io_robot_particles(const cq_io_robot *r, cq_particles_desc *out);

/* 2D robot from an image.  Pixel (px, py) (py = 0 is the top row) covers
       [origin[0] + px*pixel_size, +pixel_size] x [origin[1] + (height-1-py)*pixel_size, +pixel_size]
   (y flipped so the image's top is up) and gets n x n particles at the centres of its
   sub-cells, n = particles_per_axis; each with volume (pixel_size/n)^2 and
   mass = density * volume.  Particles are ordered by pixel (top row first, left to right),
   then sub-row (bottom first), then sub-column.
   A pixel is skipped when its alpha < alpha_cutoff, or when use_background is set and its
   RGB equals background.  Other pixels take the material whose colour is nearest (largest
   per-channel difference) if that difference is <= tolerance; otherwise it is an error that
   names the pixel and colour, or (ignore_unmatched) the pixel is skipped.  An image with no
   solid pixel at all is an error. */
typedef struct cq_io_png_robot_desc {
    const cq_io_material *materials;
    int material_count;
    double origin[2];
    double pixel_size;         /* > 0 */
    int particles_per_axis;    /* 0 = 2; at most 64 */
    int alpha_cutoff;          /* 0 = 128; 1..255 as given, 256 = every pixel is transparent */
    int use_background;
    unsigned char background[3];
    int tolerance;             /* 0..255, per channel */
    int ignore_unmatched;
    int max_particles;         /* 0 = CQ_IO_MAX_PARTICLES */
} cq_io_png_robot_desc;

cq_result cq_io_robot_from_image(const cq_io_image *img, const cq_io_png_robot_desc *desc,
                                 cq_io_robot *out, char *err, size_t errcap);
cq_result cq_io_robot_from_png_memory(const void *data, size_t size, const cq_io_png_robot_desc *desc,
                                      cq_io_robot *out, char *err, size_t errcap);
cq_result cq_io_robot_from_png_file(const char *path, const cq_io_png_robot_desc *desc,
                                    cq_io_robot *out, char *err, size_t errcap);

/* 3D robot from a closed triangle mesh.  The vertices are first transformed:
       p' = M[0..2][0..2] p + M[.][3]   with M = transform (12 doubles, row-major 3x4), or,
       when transform is NULL, p' = scale * p + translate (scale 0 = 1).
   Lattice: with lo/hi the transformed bounding box and n_a = ceil((hi_a - lo_a)/spacing),
   the points lo + (i + 1/2) * spacing, 0 <= i_a < n_a, are tested; a point is inside when a
   ray from it along +x crosses the surface an odd number of times.  Each inside point
   becomes a particle with volume spacing^3 and mass density * volume, ordered by z, then
   y, then x.  Material: `material`, then for each box containing the point (inclusive
   bounds; later boxes win) actuator = box.actuator, then material_fn(x, &m, user) may edit
   m (r, g, b are ignored) or return nonzero to drop the particle.
   A ray that crosses the surface an odd number of times means the mesh is not closed:
   an error unless allow_open is set (then the parity rule is used as is). */
typedef struct cq_io_box {
    double lo[3], hi[3];
    int actuator;
} cq_io_box;
typedef int (*cq_io_material_fn)(const double x[3], cq_io_material *m, void *user);

typedef struct cq_io_stl_robot_desc {
    double spacing;            /* lattice spacing h, > 0 (in transformed units) */
    const double *transform;   /* 12 doubles or NULL */
    double scale;              /* used when transform is NULL; 0 = 1 */
    double translate[3];
    cq_io_material material;   /* for every particle (r, g, b ignored) */
    const cq_io_box *boxes;
    int box_count;
    cq_io_material_fn material_fn;   /* optional */
    void *user;
    int allow_open;
    int max_particles;         /* 0 = CQ_IO_MAX_PARTICLES */
} cq_io_stl_robot_desc;

cq_result cq_io_robot_from_mesh(const cq_io_mesh *mesh, const cq_io_stl_robot_desc *desc,
                                cq_io_robot *out, char *err, size_t errcap);
cq_result cq_io_robot_from_stl_memory(const void *data, size_t size, const cq_io_stl_robot_desc *desc,
                                      cq_io_robot *out, char *err, size_t errcap);
cq_result cq_io_robot_from_stl_file(const char *path, const cq_io_stl_robot_desc *desc,
                                    cq_io_robot *out, char *err, size_t errcap);

#ifdef __cplusplus
}
#endif
#endif /* CHAINQUEEN_IO_H */

/* ============================================================================================ */
#if defined(CHAINQUEEN_IO_IMPLEMENTATION) && !defined(CHAINQUEEN_IO_IMPLEMENTATION_DONE)
#define CHAINQUEEN_IO_IMPLEMENTATION_DONE

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdarg.h>
#include <math.h>
#include <limits.h>

#ifndef CQ_IO_MAX_DIM
#define CQ_IO_MAX_DIM 16384
#endif
#ifndef CQ_IO_MAX_PIXELS
#define CQ_IO_MAX_PIXELS (1L << 26)
#endif
#ifndef CQ_IO_MAX_FILE_BYTES
#define CQ_IO_MAX_FILE_BYTES ((size_t)1 << 30)
#endif
#ifndef CQ_IO_MAX_PARTICLES
#define CQ_IO_MAX_PARTICLES (1L << 25)
#endif
#ifndef CQ_IO_MAX_CROSSINGS
#define CQ_IO_MAX_CROSSINGS (1L << 24)
#endif
#ifndef CQ_IO_MAX_LATTICE
#define CQ_IO_MAX_LATTICE 1073741824.0
#endif
#ifndef CQ_IO_MALLOC
#define CQ_IO_MALLOC(n) malloc(n)
#define CQ_IO_REALLOC(p, n) realloc((p), (n))
#define CQ_IO_FREE(p) free(p)
#endif

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#define CQ_IO__PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define CQ_IO__PRINTF(a, b)
#endif

static cq_result cq_io__fail(char *err, size_t cap, cq_result r, const char *fmt, ...) CQ_IO__PRINTF(4, 5);
static cq_result cq_io__fail(char *err, size_t cap, cq_result r, const char *fmt, ...)
{
    if (err && cap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, cap, fmt, ap);
        va_end(ap);
        err[cap - 1] = 0;
    }
    return r;
}
static void cq_io__ok(char *err, size_t cap) { if (err && cap) err[0] = 0; }

/* "path: message" */
static void cq_io__prefix(char *err, size_t cap, const char *path)
{
    char *tmp;
    size_t n;
    if (!err || !cap || !path) return;
    n = strlen(err) + 1;
    tmp = (char *)CQ_IO_MALLOC(n);
    if (!tmp) return;
    memcpy(tmp, err, n);
    snprintf(err, cap, "%s: %s", path, tmp);
    err[cap - 1] = 0;
    CQ_IO_FREE(tmp);
}

/* printable copy of at most 24 bytes of untrusted text */
static void cq_io__show(char *dst, size_t cap, const unsigned char *s, size_t n)
{
    size_t i, k = 0;
    for (i = 0; i < n && k + 4 < cap; ++i) dst[k++] = (s[i] >= 32 && s[i] < 127) ? (char)s[i] : '?';
    if (i < n && k + 3 < cap) { dst[k++] = '.'; dst[k++] = '.'; dst[k++] = '.'; }
    dst[k] = 0;
}

void cq_io_free(void *p) { CQ_IO_FREE(p); }

cq_result cq_io_read_file(const char *path, size_t max_size, unsigned char **out, size_t *out_size,
                          char *err, size_t cap)
{
    FILE *f;
    unsigned char *buf = NULL;
    size_t len = 0, bufcap = 0;
    if (out) *out = NULL;
    if (out_size) *out_size = 0;
    if (!path || !out || !out_size) return cq_io__fail(err, cap, CQ_ERROR_INVALID_ARGUMENT, "cq_io_read_file: NULL argument");
    if (max_size == 0) max_size = CQ_IO_MAX_FILE_BYTES;
    f = fopen(path, "rb");
    if (!f) return cq_io__fail(err, cap, CQ_ERROR_INVALID_ARGUMENT, "cannot open '%s' for reading", path);
    {   /* a file whose size is known is refused before anything is read, and read in one piece */
        long end = -1;
        if (fseek(f, 0, SEEK_END) == 0) end = ftell(f);
        if (fseek(f, 0, SEEK_SET) != 0) end = -1;
        if (end >= 0 && (unsigned long)end > max_size) {
            fclose(f);
            return cq_io__fail(err, cap, CQ_ERROR_INVALID_ARGUMENT, "'%s' is larger than the limit of %lu bytes (%ld bytes)",
                               path, (unsigned long)max_size, end);
        }
        if (end >= 0) {
            bufcap = (size_t)end + 1;   /* one more byte: a file that grew meanwhile is still caught below */
            buf = (unsigned char *)CQ_IO_MALLOC(bufcap);
            if (!buf) { fclose(f); return cq_io__fail(err, cap, CQ_ERROR_OUT_OF_MEMORY, "out of memory reading '%s'", path); }
        }
    }
    for (;;) {   /* streams of unknown size: grow, refusing past max_size */
        size_t n;
        if (len == bufcap) {
            size_t nc;
            unsigned char *nb;
            if (bufcap > max_size) {
                fclose(f); CQ_IO_FREE(buf);
                return cq_io__fail(err, cap, CQ_ERROR_INVALID_ARGUMENT, "'%s' is larger than the limit of %lu bytes",
                                   path, (unsigned long)max_size);
            }
            nc = bufcap ? bufcap * 2 : 65536;
            if (nc > max_size + 1 || nc < bufcap) nc = max_size + 1;
            nb = (unsigned char *)CQ_IO_REALLOC(buf, nc);
            if (!nb) { fclose(f); CQ_IO_FREE(buf); return cq_io__fail(err, cap, CQ_ERROR_OUT_OF_MEMORY, "out of memory reading '%s'", path); }
            buf = nb; bufcap = nc;
        }
        n = fread(buf + len, 1, bufcap - len, f);
        len += n;
        if (n == 0) {
            if (ferror(f)) { fclose(f); CQ_IO_FREE(buf); return cq_io__fail(err, cap, CQ_ERROR_INVALID_ARGUMENT, "read error on '%s'", path); }
            break;
        }
    }
    fclose(f);
    if (len > max_size) {
        CQ_IO_FREE(buf);
        return cq_io__fail(err, cap, CQ_ERROR_INVALID_ARGUMENT, "'%s' is larger than the limit of %lu bytes", path, (unsigned long)max_size);
    }
    *out = buf; *out_size = len;
    cq_io__ok(err, cap);
    return CQ_SUCCESS;
}

/* ============================== inflate (RFC 1950 / 1951) ============================== */

typedef struct cq_io__huff {
    short count[16];           /* codes of each length */
    short symbol[320];         /* symbols in canonical order */
} cq_io__huff;

typedef struct cq_io__inflater {
    const unsigned char *in;
    size_t inlen, inpos;
    unsigned long bitbuf;
    int bitcnt;
    int eof;                   /* a read went past the end of the input */
    unsigned char *out;
    size_t outlen, outcap, outmax;
    char *err;
    size_t errcap;
} cq_io__inflater;

static unsigned cq_io__bits(cq_io__inflater *s, int n)
{
    unsigned long v;
    while (s->bitcnt < n) {
        if (s->inpos >= s->inlen) { s->eof = 1; return 0; }
        s->bitbuf |= (unsigned long)s->in[s->inpos++] << s->bitcnt;
        s->bitcnt += 8;
    }
    v = s->bitbuf & ((1UL << n) - 1UL);
    s->bitbuf >>= n;
    s->bitcnt -= n;
    return (unsigned)v;
}

/* returns < 0 over-subscribed, 0 complete, > 0 incomplete */
static int cq_io__build(cq_io__huff *h, const unsigned char *len, int n)
{
    short offs[16];
    int i, left = 1;
    for (i = 0; i < 16; ++i) h->count[i] = 0;
    for (i = 0; i < n; ++i) h->count[len[i] & 15]++;
    for (i = 1; i < 16; ++i) {
        left <<= 1;
        left -= h->count[i];
        if (left < 0) return -1;
    }
    offs[1] = 0;
    for (i = 1; i < 15; ++i) offs[i + 1] = (short)(offs[i] + h->count[i]);
    for (i = 0; i < n; ++i)
        if (len[i]) h->symbol[offs[len[i]]++] = (short)i;
    return left;
}

static int cq_io__decode(cq_io__inflater *s, const cq_io__huff *h)
{
    int code = 0, first = 0, index = 0, len;
    for (len = 1; len < 16; ++len) {
        int count;
        code |= (int)cq_io__bits(s, 1);
        if (s->eof) return -1;
        count = h->count[len];
        if (code - first < count) return h->symbol[index + (code - first)];
        index += count;
        first = (first + count) << 1;
        code <<= 1;
    }
    return -2;                 /* no such code */
}

static cq_result cq_io__reserve(cq_io__inflater *s, size_t n)
{
    size_t need;
    if (n > s->outmax - s->outlen)
        return cq_io__fail(s->err, s->errcap, CQ_ERROR_INVALID_ARGUMENT,
                           "zlib: decompressed data exceeds the expected %lu bytes", (unsigned long)s->outmax);
    need = s->outlen + n;
    if (need > s->outcap) {
        size_t nc = s->outcap ? s->outcap : 4096;
        unsigned char *nb;
        while (nc < need) nc = (nc > s->outmax / 2) ? s->outmax : nc * 2;
        if (nc > s->outmax) nc = s->outmax;
        nb = (unsigned char *)CQ_IO_REALLOC(s->out, nc);
        if (!nb) return cq_io__fail(s->err, s->errcap, CQ_ERROR_OUT_OF_MEMORY, "zlib: out of memory (%lu bytes)", (unsigned long)nc);
        s->out = nb;
        s->outcap = nc;
    }
    return CQ_SUCCESS;
}

static cq_result cq_io__truncated(cq_io__inflater *s)
{
    return cq_io__fail(s->err, s->errcap, CQ_ERROR_INVALID_ARGUMENT,
                       "zlib: compressed data truncated (after %lu bytes of output)", (unsigned long)s->outlen);
}

static cq_result cq_io__codes(cq_io__inflater *s, const cq_io__huff *lencode, const cq_io__huff *distcode)
{
    static const short lbase[29] = { 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31,
                                     35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258 };
    static const unsigned char lextra[29] = { 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2,
                                              3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0 };
    static const unsigned short dbase[30] = { 1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193,
                                              257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145,
                                              8193, 12289, 16385, 24577 };
    static const unsigned char dextra[30] = { 0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6,
                                              7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13 };
    for (;;) {
        int sym = cq_io__decode(s, lencode);
        cq_result r;
        if (sym < 0) {
            if (s->eof) return cq_io__truncated(s);
            return cq_io__fail(s->err, s->errcap, CQ_ERROR_INVALID_ARGUMENT, "zlib: invalid literal/length code");
        }
        if (sym < 256) {
            if ((r = cq_io__reserve(s, 1)) != CQ_SUCCESS) return r;
            s->out[s->outlen++] = (unsigned char)sym;
        } else if (sym == 256) {
            return CQ_SUCCESS;
        } else {
            size_t len, dist, i;
            int dsym;
            sym -= 257;
            if (sym >= 29) return cq_io__fail(s->err, s->errcap, CQ_ERROR_INVALID_ARGUMENT, "zlib: invalid length symbol %d", sym + 257);
            len = (size_t)lbase[sym] + cq_io__bits(s, lextra[sym]);
            dsym = cq_io__decode(s, distcode);
            if (dsym < 0) {
                if (s->eof) return cq_io__truncated(s);
                return cq_io__fail(s->err, s->errcap, CQ_ERROR_INVALID_ARGUMENT, "zlib: invalid distance code");
            }
            if (dsym >= 30) return cq_io__fail(s->err, s->errcap, CQ_ERROR_INVALID_ARGUMENT, "zlib: invalid distance symbol %d", dsym);
            dist = (size_t)dbase[dsym] + cq_io__bits(s, dextra[dsym]);
            if (s->eof) return cq_io__truncated(s);
            if (dist > s->outlen)
                return cq_io__fail(s->err, s->errcap, CQ_ERROR_INVALID_ARGUMENT,
                                   "zlib: distance %lu reaches before the start of the data (%lu bytes so far)",
                                   (unsigned long)dist, (unsigned long)s->outlen);
            if ((r = cq_io__reserve(s, len)) != CQ_SUCCESS) return r;
            for (i = 0; i < len; ++i) {
                s->out[s->outlen] = s->out[s->outlen - dist];
                s->outlen++;
            }
        }
    }
}

static cq_result cq_io__stored(cq_io__inflater *s)
{
    size_t len, nlen;
    cq_result r;
    s->bitbuf = 0;             /* drop the rest of the current byte */
    s->bitcnt = 0;
    if (s->inlen - s->inpos < 4) return cq_io__truncated(s);
    len = (size_t)s->in[s->inpos] | ((size_t)s->in[s->inpos + 1] << 8);
    nlen = (size_t)s->in[s->inpos + 2] | ((size_t)s->in[s->inpos + 3] << 8);
    s->inpos += 4;
    if (len != (~nlen & 0xffffu))
        return cq_io__fail(s->err, s->errcap, CQ_ERROR_INVALID_ARGUMENT, "zlib: stored block length %lu does not match its complement",
                           (unsigned long)len);
    if (s->inlen - s->inpos < len) return cq_io__truncated(s);
    if ((r = cq_io__reserve(s, len)) != CQ_SUCCESS) return r;
    if (len) memcpy(s->out + s->outlen, s->in + s->inpos, len);
    s->outlen += len;
    s->inpos += len;
    return CQ_SUCCESS;
}

static cq_result cq_io__fixed(cq_io__inflater *s)
{
    unsigned char len[288];
    cq_io__huff lencode, distcode;
    int i;
    for (i = 0; i < 144; ++i) len[i] = 8;
    for (; i < 256; ++i) len[i] = 9;
    for (; i < 280; ++i) len[i] = 7;
    for (; i < 288; ++i) len[i] = 8;
    cq_io__build(&lencode, len, 288);
    for (i = 0; i < 30; ++i) len[i] = 5;
    cq_io__build(&distcode, len, 30);
    return cq_io__codes(s, &lencode, &distcode);
}

static cq_result cq_io__dynamic(cq_io__inflater *s)
{
    static const unsigned char order[19] = { 16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15 };
    unsigned char len[320];
    cq_io__huff lencode, distcode;
    int nlen, ndist, ncode, index, i, rc;
    nlen = (int)cq_io__bits(s, 5) + 257;
    ndist = (int)cq_io__bits(s, 5) + 1;
    ncode = (int)cq_io__bits(s, 4) + 4;
    if (s->eof) return cq_io__truncated(s);
    if (nlen > 286 || ndist > 30)
        return cq_io__fail(s->err, s->errcap, CQ_ERROR_INVALID_ARGUMENT, "zlib: dynamic block declares %d length / %d distance codes", nlen, ndist);
    memset(len, 0, sizeof len);
    for (i = 0; i < ncode; ++i) len[order[i]] = (unsigned char)cq_io__bits(s, 3);
    if (s->eof) return cq_io__truncated(s);
    if (cq_io__build(&lencode, len, 19) != 0)
        return cq_io__fail(s->err, s->errcap, CQ_ERROR_INVALID_ARGUMENT, "zlib: invalid code-length code");
    index = 0;
    while (index < nlen + ndist) {
        int sym = cq_io__decode(s, &lencode), rep;
        unsigned char v = 0;
        if (sym < 0) {
            if (s->eof) return cq_io__truncated(s);
            return cq_io__fail(s->err, s->errcap, CQ_ERROR_INVALID_ARGUMENT, "zlib: invalid code-length symbol");
        }
        if (sym < 16) { len[index++] = (unsigned char)sym; continue; }
        if (sym == 16) {
            if (index == 0) return cq_io__fail(s->err, s->errcap, CQ_ERROR_INVALID_ARGUMENT, "zlib: length repeat with no previous length");
            v = len[index - 1];
            rep = 3 + (int)cq_io__bits(s, 2);
        } else if (sym == 17) {
            rep = 3 + (int)cq_io__bits(s, 3);
        } else {
            rep = 11 + (int)cq_io__bits(s, 7);
        }
        if (s->eof) return cq_io__truncated(s);
        if (index + rep > nlen + ndist)
            return cq_io__fail(s->err, s->errcap, CQ_ERROR_INVALID_ARGUMENT, "zlib: code lengths overflow the declared count");
        while (rep--) len[index++] = v;
    }
    if (len[256] == 0) return cq_io__fail(s->err, s->errcap, CQ_ERROR_INVALID_ARGUMENT, "zlib: dynamic block has no end-of-block code");
    rc = cq_io__build(&lencode, len, nlen);
    if (rc < 0 || (rc > 0 && nlen - lencode.count[0] != 1))
        return cq_io__fail(s->err, s->errcap, CQ_ERROR_INVALID_ARGUMENT, "zlib: invalid literal/length code lengths");
    rc = cq_io__build(&distcode, len + nlen, ndist);
    if (rc < 0 || (rc > 0 && ndist - distcode.count[0] > 1))
        return cq_io__fail(s->err, s->errcap, CQ_ERROR_INVALID_ARGUMENT, "zlib: invalid distance code lengths");
    return cq_io__codes(s, &lencode, &distcode);
}

static unsigned long cq_io__adler32(const unsigned char *p, size_t n)
{
    unsigned long a = 1, b = 0;
    while (n) {
        size_t k = n < 5552 ? n : 5552;
        n -= k;
        for (; k > 0; --k) { a += *p++; b += a; }
        a %= 65521UL;
        b %= 65521UL;
    }
    return (b << 16) | a;
}

/* decompress into *out (exactly *out_size bytes used, buffer owned by caller) */
/* exact: the output is to be exactly max_out bytes: it is allocated once, up front (no growth
   by doubling, whose realloc would briefly hold 1.5x). */
static cq_result cq_io__zlib(const unsigned char *in, size_t inlen, size_t max_out, int exact,
                             unsigned char **out, size_t *out_size, char *err, size_t cap)
{
    cq_io__inflater s;
    unsigned cmf, flg;
    unsigned long want, got;
    int last;
    cq_result r = CQ_SUCCESS;
    *out = NULL;
    *out_size = 0;
    if (inlen < 2) return cq_io__fail(err, cap, CQ_ERROR_INVALID_ARGUMENT, "zlib: stream too short (%lu bytes)", (unsigned long)inlen);
    cmf = in[0];
    flg = in[1];
    if ((cmf & 15) != 8 || (cmf >> 4) > 7)
        return cq_io__fail(err, cap, CQ_ERROR_INVALID_ARGUMENT, "zlib: bad header (compression method %u, window %u)", cmf & 15, cmf >> 4);
    if (((cmf << 8) | flg) % 31 != 0)
        return cq_io__fail(err, cap, CQ_ERROR_INVALID_ARGUMENT, "zlib: header check bits are wrong (0x%02x 0x%02x)", cmf, flg);
    if (flg & 0x20) return cq_io__fail(err, cap, CQ_ERROR_INVALID_ARGUMENT, "zlib: preset dictionary not supported");
    memset(&s, 0, sizeof s);
    s.in = in;
    s.inlen = inlen;
    s.inpos = 2;
    s.outmax = max_out;
    s.err = err;
    s.errcap = cap;
    if (exact && max_out) {
        s.out = (unsigned char *)CQ_IO_MALLOC(max_out);
        if (!s.out) return cq_io__fail(err, cap, CQ_ERROR_OUT_OF_MEMORY, "zlib: out of memory (%lu bytes)", (unsigned long)max_out);
        s.outcap = max_out;
    }
    do {
        unsigned type;
        last = (int)cq_io__bits(&s, 1);
        type = cq_io__bits(&s, 2);
        if (s.eof) { r = cq_io__truncated(&s); break; }
        if (type == 0) r = cq_io__stored(&s);
        else if (type == 1) r = cq_io__fixed(&s);
        else if (type == 2) r = cq_io__dynamic(&s);
        else r = cq_io__fail(err, cap, CQ_ERROR_INVALID_ARGUMENT, "zlib: invalid block type 3");
    } while (r == CQ_SUCCESS && !last);
    if (r == CQ_SUCCESS) {
        s.bitbuf = 0;
        s.bitcnt = 0;
        if (s.inlen - s.inpos < 4) {
            r = cq_io__fail(err, cap, CQ_ERROR_INVALID_ARGUMENT, "zlib: missing Adler-32 checksum (stream truncated)");
        } else {
            const unsigned char *q = in + s.inpos;
            want = ((unsigned long)q[0] << 24) | ((unsigned long)q[1] << 16) | ((unsigned long)q[2] << 8) | q[3];
            got = cq_io__adler32(s.out, s.outlen);
            if (want != got)
                r = cq_io__fail(err, cap, CQ_ERROR_INVALID_ARGUMENT, "zlib: Adler-32 mismatch (stored 0x%08lx, computed 0x%08lx)", want, got);
        }
    }
    if (r != CQ_SUCCESS) { CQ_IO_FREE(s.out); return r; }
    if (!s.out) {              /* empty output: still hand back a valid pointer */
        s.out = (unsigned char *)CQ_IO_MALLOC(1);
        if (!s.out) return cq_io__fail(err, cap, CQ_ERROR_OUT_OF_MEMORY, "zlib: out of memory");
    }
    *out = s.out;
    *out_size = s.outlen;
    return CQ_SUCCESS;
}

cq_result cq_io_zlib_decompress(const void *data, size_t size, size_t max_out,
                                unsigned char **out, size_t *out_size, char *err, size_t cap)
{
    cq_result r;
    if (out) *out = NULL;
    if (out_size) *out_size = 0;
    if (!out || !out_size || (!data && size)) return cq_io__fail(err, cap, CQ_ERROR_INVALID_ARGUMENT, "cq_io_zlib_decompress: NULL argument");
    if (max_out == 0) max_out = CQ_IO_MAX_FILE_BYTES;
    r = cq_io__zlib((const unsigned char *)data, size, max_out, 0, out, out_size, err, cap);
    if (r == CQ_SUCCESS) cq_io__ok(err, cap);
    return r;
}

/* ============================== PNG ============================== */

static unsigned long cq_io__be32(const unsigned char *p)
{
    return ((unsigned long)p[0] << 24) | ((unsigned long)p[1] << 16) | ((unsigned long)p[2] << 8) | (unsigned long)p[3];
}

static unsigned cq_io__sample(const unsigned char *row, size_t idx, int depth)
{
    size_t bit;
    if (depth == 8) return row[idx];
    if (depth == 16) return ((unsigned)row[2 * idx] << 8) | row[2 * idx + 1];
    bit = idx * (size_t)depth;
    return ((unsigned)row[bit >> 3] >> (8 - depth - (int)(bit & 7))) & ((1u << depth) - 1u);
}

static unsigned char cq_io__to8(unsigned v, int depth)
{
    if (depth == 8) return (unsigned char)v;
    if (depth == 16) return (unsigned char)(v >> 8);
    return (unsigned char)(v * 255u / ((1u << depth) - 1u));
}

static int cq_io__paeth(int a, int b, int c)
{
    int p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);
    if (pa <= pb && pa <= pc) return a;
    if (pb <= pc) return b;
    return c;
}

void cq_io_image_free(cq_io_image *img)
{
    if (!img) return;
    CQ_IO_FREE(img->rgba);
    img->rgba = NULL;
    img->width = img->height = 0;
}

#define CQ_IO__PNGFAIL(...) do { r = cq_io__fail(err, cap, CQ_ERROR_INVALID_ARGUMENT, __VA_ARGS__); goto done; } while (0)

cq_result cq_io_png_decode(const void *data, size_t size, cq_io_image *out, char *err, size_t cap)
{
    static const unsigned char sig[8] = { 137, 80, 78, 71, 13, 10, 26, 10 };
    const unsigned char *p = (const unsigned char *)data;
    unsigned long crctab[256];
    size_t pos = 8, idatlen = 0, idatcap = 0, rawlen = 0, stride = 0, y, idat_total = 0;
    unsigned char *idat = NULL, *raw = NULL, *rgba = NULL;
    unsigned long w = 0, h = 0;
    int have_ihdr = 0, have_iend = 0, idat_state = 0, depth = 0, ctype = 0, channels = 0, bits = 0, fb;
    int npal = 0, have_trns = 0;
    unsigned trns[3] = { 0, 0, 0 };
    unsigned char pal[256 * 4];
    cq_result r = CQ_SUCCESS;
    unsigned long n;
    int k;

    if (!out) return cq_io__fail(err, cap, CQ_ERROR_INVALID_ARGUMENT, "cq_io_png_decode: out is NULL");
    out->width = out->height = 0;
    out->rgba = NULL;
    if (!data && size) return cq_io__fail(err, cap, CQ_ERROR_INVALID_ARGUMENT, "cq_io_png_decode: data is NULL");
    if (size == 0) return cq_io__fail(err, cap, CQ_ERROR_INVALID_ARGUMENT, "PNG: empty input (0 bytes)");
    if (size < 8 || memcmp(p, sig, 8) != 0) return cq_io__fail(err, cap, CQ_ERROR_INVALID_ARGUMENT, "PNG: not a PNG file (bad signature)");
    for (n = 0; n < 256; ++n) {
        unsigned long c = n;
        for (k = 0; k < 8; ++k) c = (c & 1) ? 0xedb88320UL ^ (c >> 1) : (c >> 1);
        crctab[n] = c;
    }
    memset(pal, 0, sizeof pal);

    while (!have_iend) {
        unsigned long len, crc_stored, crc;
        const unsigned char *type, *d;
        char tname[16];
        size_t i;
        if (size - pos < 12) {
            if (size == pos) CQ_IO__PNGFAIL("PNG: truncated, no IEND chunk after %lu bytes", (unsigned long)size);
            CQ_IO__PNGFAIL("PNG: truncated chunk header at offset %lu", (unsigned long)pos);
        }
        len = cq_io__be32(p + pos);
        type = p + pos + 4;
        cq_io__show(tname, sizeof tname, type, 4);
        for (k = 0; k < 4; ++k)
            if (!((type[k] >= 'A' && type[k] <= 'Z') || (type[k] >= 'a' && type[k] <= 'z')))
                CQ_IO__PNGFAIL("PNG: invalid chunk type '%s' at offset %lu", tname, (unsigned long)pos);
        if (len > 0x7fffffffUL || len > size - pos - 12)
            CQ_IO__PNGFAIL("PNG: chunk '%s' at offset %lu declares %lu bytes but only %lu remain (truncated?)", tname,
                           (unsigned long)pos, len, (unsigned long)(size - pos - 12));
        crc = 0xffffffffUL;
        for (i = 0; i < (size_t)len + 4; ++i) crc = crctab[(crc ^ type[i]) & 0xff] ^ (crc >> 8);
        crc ^= 0xffffffffUL;
        crc_stored = cq_io__be32(p + pos + 8 + len);
        if (crc != crc_stored)
            CQ_IO__PNGFAIL("PNG: CRC mismatch in chunk '%s' at offset %lu (stored 0x%08lx, computed 0x%08lx)", tname,
                           (unsigned long)pos, crc_stored, crc);
        d = p + pos + 8;
        if (!have_ihdr && memcmp(type, "IHDR", 4) != 0) CQ_IO__PNGFAIL("PNG: first chunk is '%s', expected IHDR", tname);
        if (idat_state == 1 && memcmp(type, "IDAT", 4) != 0) idat_state = 2;

        if (memcmp(type, "IHDR", 4) == 0) {
            if (have_ihdr) CQ_IO__PNGFAIL("PNG: duplicate IHDR chunk");
            if (len != 13) CQ_IO__PNGFAIL("PNG: IHDR has %lu bytes, expected 13", len);
            have_ihdr = 1;
            w = cq_io__be32(d);
            h = cq_io__be32(d + 4);
            depth = d[8];
            ctype = d[9];
            if (w == 0 || h == 0) CQ_IO__PNGFAIL("PNG: image has zero size (%lu x %lu)", w, h);
            if (w > CQ_IO_MAX_DIM || h > CQ_IO_MAX_DIM)
                CQ_IO__PNGFAIL("PNG: image is %lu x %lu, larger than the limit of %d per side", w, h, (int)CQ_IO_MAX_DIM);
            if ((double)w * (double)h > (double)CQ_IO_MAX_PIXELS)
                CQ_IO__PNGFAIL("PNG: image is %lu x %lu = %.0f pixels, more than the limit of %ld", w, h,
                               (double)w * (double)h, (long)CQ_IO_MAX_PIXELS);
            switch (ctype) {
            case 0: channels = 1; if (depth != 1 && depth != 2 && depth != 4 && depth != 8 && depth != 16) ctype = -1; break;
            case 2: channels = 3; if (depth != 8 && depth != 16) ctype = -1; break;
            case 3: channels = 1; if (depth != 1 && depth != 2 && depth != 4 && depth != 8) ctype = -1; break;
            case 4: channels = 2; if (depth != 8 && depth != 16) ctype = -1; break;
            case 6: channels = 4; if (depth != 8 && depth != 16) ctype = -1; break;
            default: CQ_IO__PNGFAIL("PNG: invalid colour type %d", ctype);
            }
            if (ctype < 0) CQ_IO__PNGFAIL("PNG: invalid bit depth %d for colour type %d", depth, d[9]);
            if (d[10] != 0) CQ_IO__PNGFAIL("PNG: unknown compression method %d", d[10]);
            if (d[11] != 0) CQ_IO__PNGFAIL("PNG: unknown filter method %d", d[11]);
            if (d[12] == 1) CQ_IO__PNGFAIL("PNG: interlaced (Adam7) images are unsupported; save the image without interlacing");
            if (d[12] != 0) CQ_IO__PNGFAIL("PNG: invalid interlace method %d", d[12]);
            bits = channels * depth;
        } else if (memcmp(type, "PLTE", 4) == 0) {
            if (idat_state) CQ_IO__PNGFAIL("PNG: PLTE after IDAT");
            if (npal) CQ_IO__PNGFAIL("PNG: duplicate PLTE chunk");
            if (len == 0 || len % 3 != 0 || len > 768) CQ_IO__PNGFAIL("PNG: PLTE has invalid length %lu", len);
            if (ctype == 3 && (len / 3) > (1UL << depth))
                CQ_IO__PNGFAIL("PNG: PLTE has %lu entries, more than bit depth %d allows", len / 3, depth);
            npal = (int)(len / 3);
            for (k = 0; k < npal; ++k) {
                pal[4 * k] = d[3 * k];
                pal[4 * k + 1] = d[3 * k + 1];
                pal[4 * k + 2] = d[3 * k + 2];
                pal[4 * k + 3] = 255;
            }
        } else if (memcmp(type, "tRNS", 4) == 0) {
            if (idat_state) CQ_IO__PNGFAIL("PNG: tRNS after IDAT");
            if (ctype == 3) {
                if (!npal) CQ_IO__PNGFAIL("PNG: tRNS before PLTE");
                if (len > (unsigned long)npal) CQ_IO__PNGFAIL("PNG: tRNS has %lu entries but the palette only %d", len, npal);
                for (i = 0; i < (size_t)len; ++i) pal[4 * i + 3] = d[i];
            } else if (ctype == 0) {
                if (len != 2) CQ_IO__PNGFAIL("PNG: tRNS for a grey image must have 2 bytes, has %lu", len);
                trns[0] = ((unsigned)d[0] << 8) | d[1];
                have_trns = 1;
            } else if (ctype == 2) {
                if (len != 6) CQ_IO__PNGFAIL("PNG: tRNS for an RGB image must have 6 bytes, has %lu", len);
                for (k = 0; k < 3; ++k) trns[k] = ((unsigned)d[2 * k] << 8) | d[2 * k + 1];
                have_trns = 1;
            }                  /* colour types 4 and 6 already have alpha: ignored */
        } else if (memcmp(type, "IDAT", 4) == 0) {
            if (idat_state == 2) CQ_IO__PNGFAIL("PNG: IDAT chunks are not consecutive");
            if (ctype == 3 && !npal) CQ_IO__PNGFAIL("PNG: palette image without PLTE before IDAT");
            idat_state = 1;
            if (!idatcap && !idat_total) {   /* the IDAT bytes of the whole file, counted once: one exact allocation */
                size_t q = pos;
                while (q + 12 <= size) {
                    unsigned long ql = cq_io__be32(p + q);
                    if (ql > size - q - 12) break;
                    if (memcmp(p + q + 4, "IDAT", 4) == 0) idat_total += (size_t)ql;
                    q += 12 + (size_t)ql;
                }
            }
            if (len > idatcap - idatlen) {
                size_t nc = idatcap ? idatcap : (idat_total > len ? idat_total : (len > 65536 ? len : 65536));
                unsigned char *nb;
                while (nc - idatlen < len) nc *= 2;
                nb = (unsigned char *)CQ_IO_REALLOC(idat, nc);
                if (!nb) { r = cq_io__fail(err, cap, CQ_ERROR_OUT_OF_MEMORY, "PNG: out of memory collecting IDAT"); goto done; }
                idat = nb;
                idatcap = nc;
            }
            if (len) memcpy(idat + idatlen, d, len);
            idatlen += len;
        } else if (memcmp(type, "IEND", 4) == 0) {
            have_iend = 1;
        } else if (type[0] >= 'A' && type[0] <= 'Z') {
            CQ_IO__PNGFAIL("PNG: unknown critical chunk '%s'", tname);
        }                      /* unknown ancillary chunks are skipped */
        pos += 12 + (size_t)len;
    }
    if (idat_state == 0) CQ_IO__PNGFAIL("PNG: no IDAT chunk");

    stride = ((size_t)w * (size_t)bits + 7) / 8;
    rawlen = (size_t)h * (stride + 1);
    r = cq_io__zlib(idat, idatlen, rawlen, 1, &raw, &y, err, cap);
    if (r != CQ_SUCCESS) { cq_io__prefix(err, cap, "PNG image data"); goto done; }
    CQ_IO_FREE(idat);   /* not needed any more: the peak is the scanlines plus the RGBA below */
    idat = NULL;
    if (y != rawlen)
        CQ_IO__PNGFAIL("PNG: image data has %lu bytes, expected %lu for %lu x %lu pixels", (unsigned long)y,
                       (unsigned long)rawlen, w, h);

    /* undo the filters in place */
    fb = bits >= 8 ? bits / 8 : 1;
    for (y = 0; y < h; ++y) {
        unsigned char *row = raw + y * (stride + 1);
        const unsigned char *prev = y ? row - (stride + 1) + 1 : NULL;
        int ft = row[0];
        size_t i;
        ++row;
        switch (ft) {
        case 0: break;
        case 1: for (i = (size_t)fb; i < stride; ++i) row[i] = (unsigned char)(row[i] + row[i - (size_t)fb]); break;
        case 2: if (prev) for (i = 0; i < stride; ++i) row[i] = (unsigned char)(row[i] + prev[i]); break;
        case 3:
            for (i = 0; i < stride; ++i) {
                int a = i >= (size_t)fb ? row[i - (size_t)fb] : 0, b = prev ? prev[i] : 0;
                row[i] = (unsigned char)(row[i] + ((a + b) >> 1));
            }
            break;
        case 4:
            for (i = 0; i < stride; ++i) {
                int a = i >= (size_t)fb ? row[i - (size_t)fb] : 0, b = prev ? prev[i] : 0, c = (prev && i >= (size_t)fb) ? prev[i - (size_t)fb] : 0;
                row[i] = (unsigned char)(row[i] + cq_io__paeth(a, b, c));
            }
            break;
        default: CQ_IO__PNGFAIL("PNG: invalid filter type %d on row %lu", ft, (unsigned long)y);
        }
    }

    /* to RGBA8: in place when a pixel has at least 4 bytes (each output pixel then lies at or
       before its source, and a pixel's samples are read before its output is written), else
       into a new buffer beside the scanlines (then under 4 + 4 bytes per pixel together) */
    if (stride >= (size_t)w * 4) rgba = raw;
    else rgba = (unsigned char *)CQ_IO_MALLOC((size_t)w * (size_t)h * 4);
    if (!rgba) { r = cq_io__fail(err, cap, CQ_ERROR_OUT_OF_MEMORY, "PNG: out of memory (%lu x %lu RGBA)", w, h); goto done; }
    for (y = 0; y < h; ++y) {
        const unsigned char *row = raw + y * (stride + 1) + 1;
        unsigned char *o = rgba + y * (size_t)w * 4;
        size_t x;
        for (x = 0; x < w; ++x, o += 4) {
            unsigned v0, v1, v2, v3;
            switch (ctype) {
            case 0:
                v0 = cq_io__sample(row, x, depth);
                o[0] = o[1] = o[2] = cq_io__to8(v0, depth);
                o[3] = (have_trns && v0 == trns[0]) ? 0 : 255;
                break;
            case 2:
                v0 = cq_io__sample(row, 3 * x, depth);
                v1 = cq_io__sample(row, 3 * x + 1, depth);
                v2 = cq_io__sample(row, 3 * x + 2, depth);
                o[0] = cq_io__to8(v0, depth);
                o[1] = cq_io__to8(v1, depth);
                o[2] = cq_io__to8(v2, depth);
                o[3] = (have_trns && v0 == trns[0] && v1 == trns[1] && v2 == trns[2]) ? 0 : 255;
                break;
            case 3:
                v0 = cq_io__sample(row, x, depth);
                if (v0 >= (unsigned)npal)
                    CQ_IO__PNGFAIL("PNG: pixel (%lu, %lu) uses palette index %u but the palette has %d entries",
                                   (unsigned long)x, (unsigned long)y, v0, npal);
                memcpy(o, pal + 4 * v0, 4);
                break;
            case 4:
                v0 = cq_io__sample(row, 2 * x, depth);
                v1 = cq_io__sample(row, 2 * x + 1, depth);
                o[0] = o[1] = o[2] = cq_io__to8(v0, depth);
                o[3] = cq_io__to8(v1, depth);
                break;
            default:
                v0 = cq_io__sample(row, 4 * x, depth);
                v1 = cq_io__sample(row, 4 * x + 1, depth);
                v2 = cq_io__sample(row, 4 * x + 2, depth);
                v3 = cq_io__sample(row, 4 * x + 3, depth);
                o[0] = cq_io__to8(v0, depth);
                o[1] = cq_io__to8(v1, depth);
                o[2] = cq_io__to8(v2, depth);
                o[3] = cq_io__to8(v3, depth);
                break;
            }
        }
    }
    if (rgba == raw) {   /* converted in place: give back the tail */
        unsigned char *shrunk = (unsigned char *)CQ_IO_REALLOC(raw, (size_t)w * (size_t)h * 4);
        if (shrunk) rgba = shrunk;
        raw = NULL;
    }
    out->width = (int)w;
    out->height = (int)h;
    out->rgba = rgba;
    rgba = NULL;
    cq_io__ok(err, cap);
done:
    CQ_IO_FREE(idat);
    if (rgba == raw) rgba = NULL;
    CQ_IO_FREE(raw);
    CQ_IO_FREE(rgba);
    return r;
}
#undef CQ_IO__PNGFAIL

cq_result cq_io_png_load(const char *path, cq_io_image *out, char *err, size_t cap)
{
    unsigned char *buf;
    size_t size;
    cq_result r;
    if (out) { out->width = out->height = 0; out->rgba = NULL; }
    r = cq_io_read_file(path, 0, &buf, &size, err, cap);
    if (r != CQ_SUCCESS) return r;
    r = cq_io_png_decode(buf, size, out, err, cap);
    CQ_IO_FREE(buf);
    if (r != CQ_SUCCESS) cq_io__prefix(err, cap, path);
    return r;
}

/* ============================== STL ============================== */

void cq_io_mesh_free(cq_io_mesh *m)
{
    if (!m) return;
    CQ_IO_FREE(m->v);
    m->v = NULL;
    m->triangle_count = 0;
    m->binary = 0;
}

double cq_io_mesh_volume(const cq_io_mesh *m)
{
    double vol = 0;
    int t;
    if (!m || !m->v) return 0;
    for (t = 0; t < m->triangle_count; ++t) {
        const double *a = m->v + 9 * (size_t)t, *b = a + 3, *c = a + 6;
        vol += a[0] * (b[1] * c[2] - b[2] * c[1]) - a[1] * (b[0] * c[2] - b[2] * c[0]) + a[2] * (b[0] * c[1] - b[1] * c[0]);
    }
    return vol / 6.0;
}

static int cq_io__isspace(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

typedef struct cq_io__lexer {
    const unsigned char *p;
    size_t n, pos;
    long line;
    const unsigned char *tok;
    size_t toklen;
    long tokline;
} cq_io__lexer;

static int cq_io__next(cq_io__lexer *L)
{
    while (L->pos < L->n && cq_io__isspace(L->p[L->pos])) {
        if (L->p[L->pos] == '\n') L->line++;
        L->pos++;
    }
    if (L->pos >= L->n) { L->tok = NULL; L->toklen = 0; L->tokline = L->line; return 0; }
    L->tok = L->p + L->pos;
    L->tokline = L->line;
    while (L->pos < L->n && !cq_io__isspace(L->p[L->pos])) L->pos++;
    L->toklen = (size_t)(L->p + L->pos - L->tok);
    return 1;
}

static void cq_io__skip_line(cq_io__lexer *L)
{
    while (L->pos < L->n && L->p[L->pos] != '\n') L->pos++;
}

static int cq_io__tokis(const cq_io__lexer *L, const char *word)
{
    size_t i, n = strlen(word);
    if (!L->tok || L->toklen != n) return 0;
    for (i = 0; i < n; ++i) {
        unsigned char c = L->tok[i];
        if (c >= 'A' && c <= 'Z') c = (unsigned char)(c - 'A' + 'a');
        if (c != (unsigned char)word[i]) return 0;
    }
    return 1;
}

/* strict decimal number: [+-] digits [. digits] [(e|E) [+-] digits]; no locale involved */
static int cq_io__number(const unsigned char *s, size_t n, double *out)
{
    size_t i = 0;
    int neg = 0, digits = 0, sig = 0, eneg = 0;
    long exp10 = 0, e = 0;
    double m = 0, v;
    unsigned long long mant = 0;
    if (i < n && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
    for (; i < n && s[i] >= '0' && s[i] <= '9'; ++i, ++digits) {
        if (sig < 19) { mant = mant * 10 + (unsigned)(s[i] - '0'); if (mant) ++sig; }
        else ++exp10;
    }
    if (i < n && s[i] == '.') {
        for (++i; i < n && s[i] >= '0' && s[i] <= '9'; ++i, ++digits) {
            if (sig < 19) { mant = mant * 10 + (unsigned)(s[i] - '0'); if (mant) ++sig; --exp10; }
        }
    }
    if (!digits) return 0;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        int ed = 0;
        ++i;
        if (i < n && (s[i] == '+' || s[i] == '-')) eneg = s[i++] == '-';
        for (; i < n && s[i] >= '0' && s[i] <= '9'; ++i, ++ed)
            if (e < 100000) e = e * 10 + (s[i] - '0');
        if (!ed) return 0;
    }
    if (i != n) return 0;
    exp10 += eneg ? -e : e;
    m = (double)mant;
    if (mant == 0) v = 0;
    else if (exp10 < -300) v = (m / 1e300) / pow(10.0, (double)(-exp10 - 300));
    else if (exp10 < 0) v = m / pow(10.0, (double)-exp10);
    else v = m * pow(10.0, (double)exp10);
    if (!(v <= 1.7976931348623157e308)) return 0;    /* overflow */
    *out = neg ? -v : v;
    return 1;
}

static float cq_io__lef32(const unsigned char *p)
{
    unsigned long u = (unsigned long)p[0] | ((unsigned long)p[1] << 8) | ((unsigned long)p[2] << 16) | ((unsigned long)p[3] << 24);
    unsigned int u32 = (unsigned int)u;
    float f;
    memcpy(&f, &u32, sizeof f);
    return f;
}

static int cq_io__looks_ascii(const unsigned char *p, size_t n)
{
    size_t i = 0, k;
    while (i < n && cq_io__isspace(p[i])) ++i;
    if (n - i < 5) return 0;
    for (k = 0; k < 5; ++k) {
        unsigned char c = p[i + k];
        if (c >= 'A' && c <= 'Z') c = (unsigned char)(c - 'A' + 'a');
        if (c != (unsigned char)"solid"[k]) return 0;
    }
    return 1;
}

static cq_result cq_io__stl_ascii(const unsigned char *p, size_t size, cq_io_mesh *out, char *err, size_t cap)
{
    cq_io__lexer L;
    double *v = NULL;
    size_t nt = 0, capt = 0;
    cq_result r = CQ_SUCCESS;
    char shown[40];
    int k, c;
    L.p = p; L.n = size; L.pos = 0; L.line = 1; L.tok = NULL; L.toklen = 0; L.tokline = 1;

#define CQ_IO__STLFAIL(...) do { r = cq_io__fail(err, cap, CQ_ERROR_INVALID_ARGUMENT, __VA_ARGS__); goto done; } while (0)
#define CQ_IO__SHOWTOK() (L.tok ? (cq_io__show(shown, sizeof shown, L.tok, L.toklen), shown) : "end of file")
#define CQ_IO__EXPECT(word) do { cq_io__next(&L); if (!cq_io__tokis(&L, word)) \
        CQ_IO__STLFAIL("STL line %ld: expected '%s', got '%s'", L.tokline, word, CQ_IO__SHOWTOK()); } while (0)

    CQ_IO__EXPECT("solid");
    cq_io__skip_line(&L);
    for (;;) {
        double tri[9], dummy;
        if (!cq_io__next(&L)) CQ_IO__STLFAIL("STL line %ld: unexpected end of file, expected 'facet' or 'endsolid'", L.tokline);
        if (cq_io__tokis(&L, "endsolid")) {
            cq_io__skip_line(&L);
            if (!cq_io__next(&L)) break;
            if (!cq_io__tokis(&L, "solid"))
                CQ_IO__STLFAIL("STL line %ld: expected end of file or 'solid' after 'endsolid', got '%s'", L.tokline, CQ_IO__SHOWTOK());
            cq_io__skip_line(&L);
            continue;
        }
        if (!cq_io__tokis(&L, "facet"))
            CQ_IO__STLFAIL("STL line %ld: expected 'facet' or 'endsolid', got '%s'", L.tokline, CQ_IO__SHOWTOK());
        CQ_IO__EXPECT("normal");
        for (k = 0; k < 3; ++k) {
            cq_io__next(&L);
            if (!L.tok || !cq_io__number(L.tok, L.toklen, &dummy))
                CQ_IO__STLFAIL("STL line %ld: expected a number (facet normal), got '%s'", L.tokline, CQ_IO__SHOWTOK());
        }
        CQ_IO__EXPECT("outer");
        CQ_IO__EXPECT("loop");
        for (c = 0; c < 3; ++c) {
            CQ_IO__EXPECT("vertex");
            for (k = 0; k < 3; ++k) {
                cq_io__next(&L);
                if (!L.tok || !cq_io__number(L.tok, L.toklen, &tri[3 * c + k]))
                    CQ_IO__STLFAIL("STL line %ld: expected a number (vertex coordinate), got '%s'", L.tokline, CQ_IO__SHOWTOK());
            }
        }
        CQ_IO__EXPECT("endloop");
        CQ_IO__EXPECT("endfacet");
        if (nt == capt) {
            size_t nc = capt ? capt * 2 : 64;
            double *nv;
            if (nc > (size_t)INT_MAX || nc > ((size_t)-1) / (9 * sizeof(double)))
                CQ_IO__STLFAIL("STL: too many triangles");
            nv = (double *)CQ_IO_REALLOC(v, nc * 9 * sizeof(double));
            if (!nv) { r = cq_io__fail(err, cap, CQ_ERROR_OUT_OF_MEMORY, "STL: out of memory"); goto done; }
            v = nv;
            capt = nc;
        }
        memcpy(v + 9 * nt, tri, sizeof tri);
        ++nt;
    }
    out->v = v;
    v = NULL;
    out->triangle_count = (int)nt;
    out->binary = 0;
done:
    CQ_IO_FREE(v);
    return r;
#undef CQ_IO__EXPECT
#undef CQ_IO__SHOWTOK
#undef CQ_IO__STLFAIL
}

cq_result cq_io_stl_decode(const void *data, size_t size, cq_io_mesh *out, char *err, size_t cap)
{
    const unsigned char *p = (const unsigned char *)data;
    unsigned long n = 0;
    int binary = 0;
    cq_result r;
    if (!out) return cq_io__fail(err, cap, CQ_ERROR_INVALID_ARGUMENT, "cq_io_stl_decode: out is NULL");
    out->triangle_count = 0;
    out->v = NULL;
    out->binary = 0;
    if (!data && size) return cq_io__fail(err, cap, CQ_ERROR_INVALID_ARGUMENT, "cq_io_stl_decode: data is NULL");
    if (size == 0) return cq_io__fail(err, cap, CQ_ERROR_INVALID_ARGUMENT, "STL: empty input (0 bytes)");
    if (size >= 84) {
        n = (unsigned long)p[80] | ((unsigned long)p[81] << 8) | ((unsigned long)p[82] << 16) | ((unsigned long)p[83] << 24);
        if (84.0 + 50.0 * (double)n == (double)size) {
            /* the size fits a binary file; a text file that happens to fit is still text */
            size_t i, lim = size < 512 ? size : 512;
            binary = 1;
            if (cq_io__looks_ascii(p, size)) {
                binary = 0;
                for (i = 0; i < lim; ++i)
                    if (!(cq_io__isspace(p[i]) || (p[i] >= 32 && p[i] < 127))) { binary = 1; break; }
            }
        }
    }
    if (!binary) {
        if (cq_io__looks_ascii(p, size)) {
            r = cq_io__stl_ascii(p, size, out, err, cap);
            if (r == CQ_SUCCESS) cq_io__ok(err, cap);
            return r;
        }
        if (size < 84)
            return cq_io__fail(err, cap, CQ_ERROR_INVALID_ARGUMENT,
                               "STL: %lu bytes is too short for binary STL (84-byte header) and the text does not start with 'solid'",
                               (unsigned long)size);
        return cq_io__fail(err, cap, CQ_ERROR_INVALID_ARGUMENT,
                           "STL: binary header declares %lu triangles (%.0f bytes) but the file has %lu bytes", n,
                           84.0 + 50.0 * (double)n, (unsigned long)size);
    }
    if (n > (unsigned long)INT_MAX / 9)
        return cq_io__fail(err, cap, CQ_ERROR_INVALID_ARGUMENT, "STL: %lu triangles is too many", n);
    {
        size_t t;
        double *v = (double *)CQ_IO_MALLOC((n ? (size_t)n : 1) * 9 * sizeof(double));
        if (!v) return cq_io__fail(err, cap, CQ_ERROR_OUT_OF_MEMORY, "STL: out of memory for %lu triangles", n);
        for (t = 0; t < (size_t)n; ++t) {
            const unsigned char *q = p + 84 + 50 * t + 12;
            int k;
            for (k = 0; k < 9; ++k) {
                float f = cq_io__lef32(q + 4 * k);
                if (!(f == f) || f > 3.4e38f || f < -3.4e38f) {
                    CQ_IO_FREE(v);
                    return cq_io__fail(err, cap, CQ_ERROR_INVALID_ARGUMENT, "STL: triangle %lu has a non-finite vertex coordinate",
                                       (unsigned long)t);
                }
                v[9 * t + (size_t)k] = (double)f;
            }
        }
        out->v = v;
        out->triangle_count = (int)n;
        out->binary = 1;
    }
    cq_io__ok(err, cap);
    return CQ_SUCCESS;
}

cq_result cq_io_stl_load(const char *path, cq_io_mesh *out, char *err, size_t cap)
{
    unsigned char *buf;
    size_t size;
    cq_result r;
    if (out) { out->triangle_count = 0; out->v = NULL; out->binary = 0; }
    r = cq_io_read_file(path, 0, &buf, &size, err, cap);
    if (r != CQ_SUCCESS) return r;
    r = cq_io_stl_decode(buf, size, out, err, cap);
    CQ_IO_FREE(buf);
    if (r != CQ_SUCCESS) cq_io__prefix(err, cap, path);
    return r;
}

/* ============================== robots ============================== */

void cq_io_robot_free(cq_io_robot *r)
{
    if (!r) return;
    CQ_IO_FREE(r->x);
    CQ_IO_FREE(r->mass);
    CQ_IO_FREE(r->volume);
    CQ_IO_FREE(r->youngs);
    CQ_IO_FREE(r->poisson);
    CQ_IO_FREE(r->actuator);
    memset(r, 0, sizeof *r);
}

void cq_io_robot_particles(const cq_io_robot *r, cq_particles_desc *p)
{
    if (!p) return;
    memset(p, 0, sizeof *p);
    if (!r) return;
    p->count = r->count;
    p->x = r->x;
    p->mass = r->mass;
    p->volume = r->volume;
    p->youngs = r->youngs;
    p->poisson = r->poisson;
    p->actuator = r->actuator;
}

static cq_result cq_io__robot_alloc(cq_io_robot *r, int dim, size_t count, char *err, size_t cap)
{
    size_t n = count ? count : 1;
    memset(r, 0, sizeof *r);
    r->dim = dim;
    r->x = (double *)CQ_IO_MALLOC(n * (size_t)dim * sizeof(double));
    r->mass = (double *)CQ_IO_MALLOC(n * sizeof(double));
    r->volume = (double *)CQ_IO_MALLOC(n * sizeof(double));
    r->youngs = (double *)CQ_IO_MALLOC(n * sizeof(double));
    r->poisson = (double *)CQ_IO_MALLOC(n * sizeof(double));
    r->actuator = (int *)CQ_IO_MALLOC(n * sizeof(int));
    if (!r->x || !r->mass || !r->volume || !r->youngs || !r->poisson || !r->actuator) {
        cq_io_robot_free(r);
        return cq_io__fail(err, cap, CQ_ERROR_OUT_OF_MEMORY, "out of memory for %lu particles", (unsigned long)count);
    }
    return CQ_SUCCESS;
}

/* resolves the zero defaults; returns 0 when the material is invalid */
static int cq_io__material(const cq_io_material *in, cq_io_material *out)
{
    *out = *in;
    if (out->youngs == 0) out->youngs = 1e4;
    if (out->density == 0) out->density = 1;
    return out->youngs > 0 && out->youngs < 1e300 && out->density > 0 && out->density < 1e300 &&
           out->poisson >= 0 && out->poisson < 0.5 && out->actuator >= -1;
}

static void cq_io__finish(cq_io_robot *r)
{
    int i, d, maxa = -1;
    for (d = 0; d < 3; ++d) { r->lo[d] = 0; r->hi[d] = 0; }
    for (i = 0; i < r->count; ++i) {
        if (r->actuator[i] > maxa) maxa = r->actuator[i];
        for (d = 0; d < r->dim; ++d) {
            double x = r->x[(size_t)i * (size_t)r->dim + (size_t)d];
            if (i == 0 || x < r->lo[d]) r->lo[d] = x;
            if (i == 0 || x > r->hi[d]) r->hi[d] = x;
        }
    }
    r->actuator_groups = maxa + 1;
}

/* index of the best material for an RGB colour, or -1 */
static int cq_io__match(const cq_io_png_robot_desc *d, const unsigned char *px)
{
    int best = -1, bestdiff = 256, m, c;
    for (m = 0; m < d->material_count; ++m) {
        const cq_io_material *mat = &d->materials[m];
        int key[3], diff = 0;
        key[0] = mat->r; key[1] = mat->g; key[2] = mat->b;
        for (c = 0; c < 3; ++c) {
            int dd = abs((int)px[c] - key[c]);
            if (dd > diff) diff = dd;
        }
        if (diff <= d->tolerance && diff < bestdiff) { best = m; bestdiff = diff; }
    }
    return best;
}

cq_result cq_io_robot_from_image(const cq_io_image *img, const cq_io_png_robot_desc *d, cq_io_robot *out, char *err, size_t cap)
{
    int n, cutoff, pass, m, px, py;
    long maxp;
    size_t solid = 0, total, k = 0;
    double s, sub;
    cq_io_material *mats = NULL;
    cq_result r = CQ_SUCCESS;
    if (out) memset(out, 0, sizeof *out);
    if (!img || !d || !out) return cq_io__fail(err, cap, CQ_ERROR_INVALID_ARGUMENT, "cq_io_robot_from_image: NULL argument");
    if (img->width <= 0 || img->height <= 0 || !img->rgba)
        return cq_io__fail(err, cap, CQ_ERROR_INVALID_ARGUMENT, "robot image: empty image");
    n = d->particles_per_axis ? d->particles_per_axis : 2;
    if (n < 1 || n > 64) return cq_io__fail(err, cap, CQ_ERROR_INVALID_ARGUMENT, "robot image: particles_per_axis %d not in 1..64", n);
    s = d->pixel_size;
    if (!(s > 0) || !(s < 1e300)) return cq_io__fail(err, cap, CQ_ERROR_INVALID_ARGUMENT, "robot image: pixel_size must be positive and finite");
    if (!(fabs(d->origin[0]) < 1e300) || !(fabs(d->origin[1]) < 1e300))
        return cq_io__fail(err, cap, CQ_ERROR_INVALID_ARGUMENT, "robot image: origin is not finite");
    cutoff = d->alpha_cutoff ? d->alpha_cutoff : 128;
    if (cutoff < 0 || cutoff > 256) return cq_io__fail(err, cap, CQ_ERROR_INVALID_ARGUMENT, "robot image: alpha_cutoff %d not in 0..256", cutoff);
    if (d->tolerance < 0 || d->tolerance > 255) return cq_io__fail(err, cap, CQ_ERROR_INVALID_ARGUMENT, "robot image: tolerance %d not in 0..255", d->tolerance);
    if (d->material_count < 0 || (d->material_count > 0 && !d->materials))
        return cq_io__fail(err, cap, CQ_ERROR_INVALID_ARGUMENT, "robot image: bad material table (count %d)", d->material_count);
    maxp = d->max_particles > 0 ? (long)d->max_particles : (long)CQ_IO_MAX_PARTICLES;
    if (d->material_count) {
        mats = (cq_io_material *)CQ_IO_MALLOC((size_t)d->material_count * sizeof *mats);
        if (!mats) return cq_io__fail(err, cap, CQ_ERROR_OUT_OF_MEMORY, "robot image: out of memory");
    }
    for (m = 0; m < d->material_count; ++m)
        if (!cq_io__material(&d->materials[m], &mats[m])) {
            r = cq_io__fail(err, cap, CQ_ERROR_INVALID_ARGUMENT,
                            "robot image: material %d (#%02x%02x%02x) is invalid (need youngs >= 0, density >= 0, 0 <= poisson < 0.5, actuator >= -1)",
                            m, d->materials[m].r, d->materials[m].g, d->materials[m].b);
            goto done;
        }
    sub = s / n;
    for (pass = 0; pass < 2; ++pass) {
        for (py = 0; py < img->height; ++py) {
            for (px = 0; px < img->width; ++px) {
                const unsigned char *c = img->rgba + ((size_t)py * (size_t)img->width + (size_t)px) * 4;
                int mi, i, j;
                const cq_io_material *mat;
                if ((int)c[3] < cutoff) continue;
                if (d->use_background && c[0] == d->background[0] && c[1] == d->background[1] && c[2] == d->background[2]) continue;
                mi = cq_io__match(d, c);
                if (mi < 0) {
                    if (d->ignore_unmatched) continue;
                    r = cq_io__fail(err, cap, CQ_ERROR_INVALID_ARGUMENT,
                                    "robot image: pixel (%d, %d) (x, y from the top left) has colour #%02x%02x%02x (alpha %d), which matches no material",
                                    px, py, c[0], c[1], c[2], c[3]);
                    goto done;
                }
                if (pass == 0) { ++solid; continue; }
                mat = &mats[mi];
                for (j = 0; j < n; ++j)
                    for (i = 0; i < n; ++i, ++k) {
                        out->x[2 * k] = d->origin[0] + ((double)px + (i + 0.5) / n) * s;
                        out->x[2 * k + 1] = d->origin[1] + ((double)(img->height - 1 - py) + (j + 0.5) / n) * s;
                        out->volume[k] = sub * sub;
                        out->mass[k] = mat->density * sub * sub;
                        out->youngs[k] = mat->youngs;
                        out->poisson[k] = mat->poisson;
                        out->actuator[k] = mat->actuator;
                    }
            }
        }
        if (pass == 0) {
            if (solid == 0) {
                r = cq_io__fail(err, cap, CQ_ERROR_INVALID_ARGUMENT,
                                "robot image: no pixel is solid (all are transparent, background or unmatched)");
                goto done;
            }
            if ((double)solid * n * n > (double)maxp) {
                r = cq_io__fail(err, cap, CQ_ERROR_INVALID_ARGUMENT, "robot image: %.0f particles exceed the limit of %ld",
                                (double)solid * n * n, maxp);
                goto done;
            }
            total = solid * (size_t)n * (size_t)n;
            if ((r = cq_io__robot_alloc(out, 2, total, err, cap)) != CQ_SUCCESS) goto done;
            out->count = (int)total;
        }
    }
    cq_io__finish(out);
    cq_io__ok(err, cap);
done:
    CQ_IO_FREE(mats);
    if (r != CQ_SUCCESS) cq_io_robot_free(out);
    return r;
}

cq_result cq_io_robot_from_png_memory(const void *data, size_t size, const cq_io_png_robot_desc *desc,
                                      cq_io_robot *out, char *err, size_t cap)
{
    cq_io_image img;
    cq_result r;
    if (out) memset(out, 0, sizeof *out);
    r = cq_io_png_decode(data, size, &img, err, cap);
    if (r != CQ_SUCCESS) return r;
    r = cq_io_robot_from_image(&img, desc, out, err, cap);
    cq_io_image_free(&img);
    return r;
}

cq_result cq_io_robot_from_png_file(const char *path, const cq_io_png_robot_desc *desc, cq_io_robot *out, char *err, size_t cap)
{
    cq_io_image img;
    cq_result r;
    if (out) memset(out, 0, sizeof *out);
    r = cq_io_png_load(path, &img, err, cap);
    if (r != CQ_SUCCESS) return r;
    r = cq_io_robot_from_image(&img, desc, out, err, cap);
    cq_io_image_free(&img);
    if (r != CQ_SUCCESS) cq_io__prefix(err, cap, path);
    return r;
}

/* ---- voxeliser ---- */

typedef struct cq_io__hit { size_t row; double x; } cq_io__hit;

static int cq_io__hitcmp(const void *a, const void *b)
{
    const cq_io__hit *p = (const cq_io__hit *)a, *q = (const cq_io__hit *)b;
    if (p->row != q->row) return p->row < q->row ? -1 : 1;
    if (p->x != q->x) return p->x < q->x ? -1 : 1;
    return 0;
}

/* Side of the point (pu, pv) relative to the directed edge a -> b, never 0 for a proper edge.
   The value is computed on the edge in a canonical direction (lexicographically smaller end
   first), so two triangles sharing an edge see bit-identical results; an exact zero is
   resolved as if the point were moved by (eps, eps^2) (a simulated perturbation that is the
   same for every edge), so a ray through an edge or vertex is counted exactly once. */
static int cq_io__side(double au, double av, double bu, double bv, double pu, double pv)
{
    int flip = 0, s;
    double e, du, dv;
    if (bu < au || (bu == au && bv < av)) {
        double t = au; au = bu; bu = t;
        t = av; av = bv; bv = t;
        flip = 1;
    }
    du = bu - au;
    dv = bv - av;
    e = du * (pv - av) - dv * (pu - au);
    if (e > 0) s = 1;
    else if (e < 0) s = -1;
    else if (dv != 0) s = dv > 0 ? -1 : 1;   /* d e / d eps = -dv */
    else s = du > 0 ? 1 : (du < 0 ? -1 : 0); /* then d e / d eps^2 = du */
    return flip ? -s : s;
}

cq_result cq_io_robot_from_mesh(const cq_io_mesh *mesh, const cq_io_stl_robot_desc *d, cq_io_robot *out, char *err, size_t cap)
{
    double M[12], lo[3], hi[3], h, lattice;
    double *v = NULL;
    cq_io__hit *hits = NULL;
    size_t nhits = 0, hitcap = 0, nt, t, i, a, row, rows, inside = 0, k = 0;
    long nax[3], maxp;
    int ax, pass, b;
    cq_io_material base;
    cq_result r = CQ_SUCCESS;
    if (out) memset(out, 0, sizeof *out);
    if (!mesh || !d || !out) return cq_io__fail(err, cap, CQ_ERROR_INVALID_ARGUMENT, "cq_io_robot_from_mesh: NULL argument");
    if (mesh->triangle_count <= 0 || !mesh->v) return cq_io__fail(err, cap, CQ_ERROR_INVALID_ARGUMENT, "mesh robot: the mesh has no triangles");
    h = d->spacing;
    if (!(h > 0) || !(h < 1e300)) return cq_io__fail(err, cap, CQ_ERROR_INVALID_ARGUMENT, "mesh robot: spacing must be positive and finite");
    if (!cq_io__material(&d->material, &base))
        return cq_io__fail(err, cap, CQ_ERROR_INVALID_ARGUMENT,
                           "mesh robot: invalid material (need youngs >= 0, density >= 0, 0 <= poisson < 0.5, actuator >= -1)");
    if (d->box_count < 0 || (d->box_count > 0 && !d->boxes))
        return cq_io__fail(err, cap, CQ_ERROR_INVALID_ARGUMENT, "mesh robot: bad box list (count %d)", d->box_count);
    for (b = 0; b < d->box_count; ++b)
        if (d->boxes[b].actuator < -1) return cq_io__fail(err, cap, CQ_ERROR_INVALID_ARGUMENT, "mesh robot: box %d has actuator %d < -1", b, d->boxes[b].actuator);
    maxp = d->max_particles > 0 ? (long)d->max_particles : (long)CQ_IO_MAX_PARTICLES;
    if (d->transform) {
        memcpy(M, d->transform, sizeof M);
    } else {
        double sc = d->scale != 0 ? d->scale : 1.0;
        memset(M, 0, sizeof M);
        M[0] = M[5] = M[10] = sc;
        M[3] = d->translate[0];
        M[7] = d->translate[1];
        M[11] = d->translate[2];
    }
    for (i = 0; i < 12; ++i)
        if (!(fabs(M[i]) < 1e300)) return cq_io__fail(err, cap, CQ_ERROR_INVALID_ARGUMENT, "mesh robot: transform is not finite");

    nt = (size_t)mesh->triangle_count;
    v = (double *)CQ_IO_MALLOC(nt * 9 * sizeof(double));
    if (!v) return cq_io__fail(err, cap, CQ_ERROR_OUT_OF_MEMORY, "mesh robot: out of memory");
    for (i = 0; i < nt * 3; ++i) {
        const double *p = mesh->v + 3 * i;
        for (ax = 0; ax < 3; ++ax) {
            double q = M[4 * ax] * p[0] + M[4 * ax + 1] * p[1] + M[4 * ax + 2] * p[2] + M[4 * ax + 3];
            if (!(fabs(q) < 1e300)) {
                r = cq_io__fail(err, cap, CQ_ERROR_INVALID_ARGUMENT, "mesh robot: vertex %lu of triangle %lu is not finite (after the transform)",
                                (unsigned long)(i % 3), (unsigned long)(i / 3));
                goto done;
            }
            v[3 * i + (size_t)ax] = q;
            if (i == 0 || q < lo[ax]) lo[ax] = q;
            if (i == 0 || q > hi[ax]) hi[ax] = q;
        }
    }
    lattice = 1;
    for (ax = 0; ax < 3; ++ax) {
        double ext = hi[ax] - lo[ax], cnt = ceil(ext / h * (1 - 1e-12));
        if (!(ext > 0)) {
            r = cq_io__fail(err, cap, CQ_ERROR_INVALID_ARGUMENT, "mesh robot: the mesh is flat along axis %c", "xyz"[ax]);
            goto done;
        }
        if (cnt < 1) cnt = 1;
        lattice *= cnt;
        if (cnt > 1e9 || lattice > CQ_IO_MAX_LATTICE) {
            r = cq_io__fail(err, cap, CQ_ERROR_INVALID_ARGUMENT,
                            "mesh robot: spacing %g is too fine for a mesh of size %g x %g x %g (more than %.0f lattice points)", h,
                            hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2], (double)CQ_IO_MAX_LATTICE);
            goto done;
        }
        nax[ax] = (long)cnt;
    }
    rows = (size_t)nax[1] * (size_t)nax[2];

    /* crossings of every lattice row (a ray along x at fixed y, z) with every triangle: counted
       first (no memory), refused over CQ_IO_MAX_CROSSINGS, then stored in one exact allocation */
    for (int store = 0; store < 2; ++store) {
    if (store) {
        if ((double)nhits > (double)CQ_IO_MAX_CROSSINGS) {
            r = cq_io__fail(err, cap, CQ_ERROR_INVALID_ARGUMENT, "mesh robot: %lu ray crossings at spacing %g exceed the limit of "
                            "%.0f (CQ_IO_MAX_CROSSINGS; %lu bytes each): use a coarser spacing", (unsigned long)nhits, h,
                            (double)CQ_IO_MAX_CROSSINGS, (unsigned long)sizeof *hits);
            goto done;
        }
        hitcap = nhits ? nhits : 1;
        hits = (cq_io__hit *)CQ_IO_MALLOC(hitcap * sizeof *hits);
        if (!hits) { r = cq_io__fail(err, cap, CQ_ERROR_OUT_OF_MEMORY, "mesh robot: out of memory (%lu crossings)", (unsigned long)nhits); goto done; }
        nhits = 0;
    }
    for (t = 0; t < nt; ++t) {
        const double *P = v + 9 * t;
        double umin = P[1], umax = P[1], wmin = P[2], wmax = P[2], xmin = P[0], xmax = P[0], D;
        long j0, j1, k0, k1, jj, kk;
        for (i = 1; i < 3; ++i) {
            if (P[3 * i + 1] < umin) umin = P[3 * i + 1];
            if (P[3 * i + 1] > umax) umax = P[3 * i + 1];
            if (P[3 * i + 2] < wmin) wmin = P[3 * i + 2];
            if (P[3 * i + 2] > wmax) wmax = P[3 * i + 2];
            if (P[3 * i] < xmin) xmin = P[3 * i];
            if (P[3 * i] > xmax) xmax = P[3 * i];
        }
        D = (P[4] - P[1]) * (P[8] - P[2]) - (P[5] - P[2]) * (P[7] - P[1]);
        if (D == 0) continue;  /* edge-on to the rays: crosses none of them */
        j0 = (long)floor((umin - lo[1]) / h - 0.5) - 1;
        j1 = (long)ceil((umax - lo[1]) / h - 0.5) + 1;
        k0 = (long)floor((wmin - lo[2]) / h - 0.5) - 1;
        k1 = (long)ceil((wmax - lo[2]) / h - 0.5) + 1;
        if (j0 < 0) j0 = 0;
        if (k0 < 0) k0 = 0;
        if (j1 > nax[1] - 1) j1 = nax[1] - 1;
        if (k1 > nax[2] - 1) k1 = nax[2] - 1;
        for (kk = k0; kk <= k1; ++kk) {
            double pw = lo[2] + ((double)kk + 0.5) * h;
            for (jj = j0; jj <= j1; ++jj) {
                double pu = lo[1] + ((double)jj + 0.5) * h, w0, w1, w2, sum, x;
                int s0 = cq_io__side(P[1], P[2], P[4], P[5], pu, pw);
                int s1 = cq_io__side(P[4], P[5], P[7], P[8], pu, pw);
                int s2 = cq_io__side(P[7], P[8], P[1], P[2], pu, pw);
                if (s0 == 0 || s0 != s1 || s1 != s2) continue;
                w0 = (P[7] - P[4]) * (pw - P[5]) - (P[8] - P[5]) * (pu - P[4]);   /* weight of vertex 0 */
                w1 = (P[1] - P[7]) * (pw - P[8]) - (P[2] - P[8]) * (pu - P[7]);   /* vertex 1 */
                w2 = (P[4] - P[1]) * (pw - P[2]) - (P[5] - P[2]) * (pu - P[1]);   /* vertex 2 */
                sum = w0 + w1 + w2;
                x = sum != 0 ? (w0 * P[0] + w1 * P[3] + w2 * P[6]) / sum : P[0];
                if (!(x >= xmin)) x = xmin;
                if (x > xmax) x = xmax;
                if (!store || nhits >= hitcap) { ++nhits; continue; }   /* counting (the second count is the same) */
                hits[nhits].row = (size_t)kk * (size_t)nax[1] + (size_t)jj;
                hits[nhits].x = x;
                ++nhits;
            }
        }
    }
    }   /* count, then store */
    if (nhits > hitcap) nhits = hitcap;
    if (nhits) qsort(hits, nhits, sizeof *hits, cq_io__hitcmp);

    for (pass = 0; pass < 2; ++pass) {
        a = 0;
        for (row = 0; row < rows; ++row) {
            size_t e = a, c = 0, jj = row % (size_t)nax[1], kk = row / (size_t)nax[1];
            double py = lo[1] + ((double)jj + 0.5) * h, pz = lo[2] + ((double)kk + 0.5) * h;
            while (e < nhits && hits[e].row == row) ++e;
            if (pass == 0 && ((e - a) & 1) && !d->allow_open) {
                r = cq_io__fail(err, cap, CQ_ERROR_INVALID_ARGUMENT,
                                "mesh robot: the mesh is not closed (the ray along +x at y = %g, z = %g crosses the surface %lu times); "
                                "set allow_open to voxelise anyway", py, pz, (unsigned long)(e - a));
                goto done;
            }
            for (i = 0; i < (size_t)nax[0]; ++i) {
                double px = lo[0] + ((double)i + 0.5) * h;
                while (a + c < e && hits[a + c].x <= px) ++c;
                if (!(c & 1)) continue;
                if (pass == 0) { ++inside; continue; }
                {
                    double pos[3];
                    cq_io_material m = base;
                    pos[0] = px; pos[1] = py; pos[2] = pz;
                    for (b = 0; b < d->box_count; ++b) {
                        const cq_io_box *bx = &d->boxes[b];
                        if (px >= bx->lo[0] && px <= bx->hi[0] && py >= bx->lo[1] && py <= bx->hi[1] && pz >= bx->lo[2] && pz <= bx->hi[2])
                            m.actuator = bx->actuator;
                    }
                    if (d->material_fn) {
                        cq_io_material given = m;
                        if (d->material_fn(pos, &given, d->user)) continue;
                        if (!cq_io__material(&given, &m)) {
                            r = cq_io__fail(err, cap, CQ_ERROR_INVALID_ARGUMENT,
                                            "mesh robot: material_fn gave an invalid material at (%g, %g, %g)", px, py, pz);
                            goto done;
                        }
                    }
                    out->x[3 * k] = px;
                    out->x[3 * k + 1] = py;
                    out->x[3 * k + 2] = pz;
                    out->volume[k] = h * h * h;
                    out->mass[k] = m.density * h * h * h;
                    out->youngs[k] = m.youngs;
                    out->poisson[k] = m.poisson;
                    out->actuator[k] = m.actuator;
                    ++k;
                }
            }
            a = e;
        }
        if (pass == 0) {
            if (inside == 0) {
                r = cq_io__fail(err, cap, CQ_ERROR_INVALID_ARGUMENT, "mesh robot: no lattice point (spacing %g) lies inside the mesh", h);
                goto done;
            }
            if ((double)inside > (double)maxp) {
                r = cq_io__fail(err, cap, CQ_ERROR_INVALID_ARGUMENT, "mesh robot: %lu particles exceed the limit of %ld",
                                (unsigned long)inside, maxp);
                goto done;
            }
            if ((r = cq_io__robot_alloc(out, 3, inside, err, cap)) != CQ_SUCCESS) goto done;
        }
    }
    out->count = (int)k;
    cq_io__finish(out);
    cq_io__ok(err, cap);
done:
    CQ_IO_FREE(v);
    CQ_IO_FREE(hits);
    if (r != CQ_SUCCESS) cq_io_robot_free(out);
    return r;
}

cq_result cq_io_robot_from_stl_memory(const void *data, size_t size, const cq_io_stl_robot_desc *desc,
                                      cq_io_robot *out, char *err, size_t cap)
{
    cq_io_mesh mesh;
    cq_result r;
    if (out) memset(out, 0, sizeof *out);
    r = cq_io_stl_decode(data, size, &mesh, err, cap);
    if (r != CQ_SUCCESS) return r;
    r = cq_io_robot_from_mesh(&mesh, desc, out, err, cap);
    cq_io_mesh_free(&mesh);
    return r;
}

cq_result cq_io_robot_from_stl_file(const char *path, const cq_io_stl_robot_desc *desc, cq_io_robot *out, char *err, size_t cap)
{
    cq_io_mesh mesh;
    cq_result r;
    if (out) memset(out, 0, sizeof *out);
    r = cq_io_stl_load(path, &mesh, err, cap);
    if (r != CQ_SUCCESS) return r;
    r = cq_io_robot_from_mesh(&mesh, desc, out, err, cap);
    cq_io_mesh_free(&mesh);
    if (r != CQ_SUCCESS) cq_io__prefix(err, cap, path);
    return r;
}

#ifdef __cplusplus
}
#endif
#endif /* CHAINQUEEN_IO_IMPLEMENTATION */
