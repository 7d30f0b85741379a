/* Fuzz target for chainqueen_io.h's loaders: the first input byte picks the loader (0: PNG,
   1: binary/ASCII STL and a voxelisation of it, 2: zlib), the rest is its input.  Never crashes,
   never leaks, always returns a cq_result: the sanitizers and libFuzzer check.

   With libFuzzer (clang):  clang -g -O1 -fsanitize=fuzzer,address,undefined tests/fuzz/fuzz_io.c -o build/fuzz_io -lm
                            ./build/fuzz_io -max_total_time=600 build/fuzz_corpus tests/fuzz/corpus
   Without it (any C99 compiler; a fixed-seed mutation loop over the seed files):
                            cc -g -O1 -fsanitize=address,undefined -DCQ_FUZZ_STANDALONE tests/fuzz/fuzz_io.c -o build/fuzz_io -lm
                            ./build/fuzz_io RUNS SEED FILE...
   tests/fuzz/run_io.sh picks one of the two. */
#include "../../chainqueen.h"
/* smaller limits than the defaults: the fuzzer explores formats, not gigabyte allocations */
#define CQ_IO_MAX_PIXELS (1L << 20)
#define CQ_IO_MAX_LATTICE 1048576.0
#define CQ_IO_MAX_CROSSINGS (1L << 18)
#define CHAINQUEEN_IO_IMPLEMENTATION
#include "../../chainqueen_io.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef __cplusplus
extern "C"
#endif
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    char err[256];
    if (size < 1) return 0;
    switch (data[0] % 3) {
    case 0: {
        cq_io_image img;
        if (cq_io_png_decode(data + 1, size - 1, &img, err, sizeof err) == CQ_SUCCESS) cq_io_image_free(&img);
        break;
    }
    case 1: {
        cq_io_mesh mesh;
        if (cq_io_stl_decode(data + 1, size - 1, &mesh, err, sizeof err) == CQ_SUCCESS) {
            cq_io_stl_robot_desc d;
            cq_io_robot rob;
            memset(&d, 0, sizeof d);
            d.spacing = 0.05; d.allow_open = 1; d.max_particles = 1 << 16;
            memset(&rob, 0, sizeof rob);
            if (cq_io_robot_from_mesh(&mesh, &d, &rob, err, sizeof err) == CQ_SUCCESS) cq_io_robot_free(&rob);
            cq_io_mesh_free(&mesh);
        }
        break;
    }
    default: {
        unsigned char *out = NULL;
        size_t n = 0;
        if (cq_io_zlib_decompress(data + 1, size - 1, 1 << 24, &out, &n, err, sizeof err) == CQ_SUCCESS) cq_io_free(out);
        break;
    }
    }
    return 0;
}

#ifdef CQ_FUZZ_STANDALONE
/* RUNS mutations (bit flips, byte sets, truncations, chunk copies) of the seed files, from SEED */
static unsigned long long rng;
static unsigned rnd(void) { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return (unsigned)(rng >> 11); }

int main(int argc, char **argv)
{
    long runs = argc > 1 ? atol(argv[1]) : 10000, done = 0;
    int nseeds = argc > 3 ? argc - 3 : 0;
    unsigned char **seed = (unsigned char **)calloc((size_t)nseeds + 1, sizeof *seed);
    size_t *len = (size_t *)calloc((size_t)nseeds + 1, sizeof *len);
    unsigned char *buf = NULL;
    rng = (argc > 2 ? strtoull(argv[2], NULL, 10) : 1) * 0x9E3779B97F4A7C15ull + 1;
    for (int i = 0; i < nseeds; ++i) {
        FILE *f = fopen(argv[3 + i], "rb");
        long n;
        if (!f) { fprintf(stderr, "cannot read %s\n", argv[3 + i]); return 2; }
        fseek(f, 0, SEEK_END); n = ftell(f); fseek(f, 0, SEEK_SET);
        seed[i] = (unsigned char *)malloc((size_t)n + 1);
        len[i] = fread(seed[i], 1, (size_t)n, f);
        fclose(f);
    }
    if (!nseeds) { fprintf(stderr, "usage: %s RUNS SEED FILE...\n", argv[0]); return 2; }
    for (; done < runs; ++done) {
        int s = (int)(rnd() % (unsigned)nseeds), muts = 1 + (int)(rnd() % 8);
        size_t n = len[s];
        free(buf);
        buf = (unsigned char *)malloc(n + 64);
        memcpy(buf, seed[s], n);
        for (int m = 0; m < muts && n > 1; ++m) {
            size_t at = 1 + rnd() % (n - 1);
            switch (rnd() % 5) {
            case 0: buf[at] ^= (unsigned char)(1u << (rnd() % 8)); break;
            case 1: buf[at] = (unsigned char)rnd(); break;
            case 2: n = at; break;                                   /* truncate */
            case 3: { size_t from = 1 + rnd() % (n - 1), k = rnd() % 16; if (from + k <= n && at + k <= n) memmove(buf + at, buf + from, k); } break;
            default: buf[at] = (unsigned char)(buf[at] + 1 - 2 * (int)(rnd() % 2)); break;
            }
        }
        LLVMFuzzerTestOneInput(buf, n);
    }
    free(buf);
    for (int i = 0; i < nseeds; ++i) free(seed[i]);
    free(seed); free(len);
    printf("fuzz_io: %ld executions from %d seed files\n", done, nseeds);
    return 0;
}
#endif
