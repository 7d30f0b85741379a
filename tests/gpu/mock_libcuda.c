/* mock_libcuda.c: a strict, CPU-only stand-in for the CUDA driver (libcuda.so.1), for testing
   chainqueen.h's CUDA backend host code on machines without a GPU.

   Built by tests/gpu/build_mock.sh together with cuda/chainqueen_kernels_{2d,3d}_{f32,f64}.cu
   (compiled as C: each defines a table cq__emu_kernels_<tag>[] of {name, trampoline}); a
   cuLaunchKernel runs every block and thread of the grid serially on the calling thread.

   Exports the 27 driver entry points chainqueen.h dlsyms (see CQ__CUDA_FUNCS in
   templates/cuda_loader.j2) plus a few test hooks (bottom of this file):
     int  cq_mock_live_allocations(void)   device allocations not yet freed
     long cq_mock_launches(void)           kernel launches that ran
     long cq_mock_readbacks(void)          cuMemcpyDtoH calls (each a host round trip on a GPU)
     size_t cq_mock_copied_bytes(void)     bytes cuMemcpyHtoD and cuMemcpyDtoH moved (the bus's traffic)
     int  cq_mock_violations(void)         host bugs seen (see "Violations" below)
     int  cq_mock_live_modules(void)       modules loaded and not unloaded
     int  cq_mock_ctx_refs(void)           primary context reference count (device 0)
     int  cq_mock_ctx_depth(void)          context stack depth of the calling thread
     size_t cq_mock_live_bytes(void)       bytes in live allocations
     int  cq_mock_allocs(void)             cuMemAlloc calls that succeeded (each a driver call on a GPU)
     void cq_mock_reset_faults(void)       restart the CQ_MOCK_FAIL counters (oom_after, launch_after)

   Strict device memory.  Each allocation is its own mmap (page-rounded, plus a guard region as
   long again, never accessible); the returned device pointer is 256-byte aligned and placed so
   that the block ends where the guard region begins (to the 256-byte rounding), so a kernel that
   reads or writes past its end, even striding far past it (an array sized for another layout),
   faults; the kernels, which run in-process, use the pointer directly.  Allocations are PROT_NONE
   while control is in the host program: they are made readable/writable only for the duration of a
   launch (all of them; per thread, by a protection key, where the CPU has them; else each as the
   launch first touches it: set_open_all) or of a memcpy/memset (just the allocation(s) it touches).  A host
   dereference of a device pointer therefore dies with SIGSEGV (a handler prints which allocation
   first, then re-raises).  New allocations are filled with 0xFF bytes (NaN floats, -1 ints): real
   device memory is not zeroed.

   Violations (each prints "mock_libcuda: ..." to stderr, bumps cq_mock_violations(), and the call
   returns an error rather than crashing):
     - a memcpy/memset device range not entirely inside one live allocation -> 1
     - a host pointer of HtoD/DtoH that lies in device memory, or is NULL -> 1
     - overlapping cuMemcpyDtoD ranges, cuMemsetD32 on an unaligned address -> 1
     - cuMemFree of a pointer that is not the base of a live allocation -> 1
     - an unknown module/function handle -> 400
     - cuLaunchKernel kernelParams: NULL, or an entry that is NULL or points INTO device memory
       (a device pointer passed where the address of a host variable was wanted) -> 1
     - a kernel argument that must be a device pointer (a .u64 parameter of the PTX entry, or an
       8-byte-aligned word of an .align 8 struct parameter that holds a host address) pointing to
       host memory or to freed device memory -> 700 (CUDA_ERROR_ILLEGAL_ADDRESS), context sticky
     - cuCtxPopCurrent on an empty stack, releasing the primary context more than retained -> 201

   Contexts: one primary context per device, retained/released with a reference count (it is
   destroyed when the count reaches 0; a later retain creates a fresh one); a per-thread stack for
   push/pop.  Memory, module and launch calls with no (live) current context return 201.

   Fault injection: the environment variable CQ_MOCK_FAIL, read at every call, a comma-separated
   list of
     init            cuInit returns 100 (CUDA_ERROR_NO_DEVICE)
     nodevice        cuInit succeeds, cuDeviceGetCount gives 0 devices
     oldriver        cuDriverGetVersion reports 11080 (CUDA 11.8)
     ptx             cuModuleLoadDataEx returns 218 with log "ptxas fatal: mock rejects this PTX"
     oom             every cuMemAlloc returns 2
     oom_after=N     the first N cuMemAlloc succeed, later ones return 2
     coop            every cuLaunchCooperativeKernel returns 720 (COOPERATIVE_LAUNCH_TOO_LARGE) and
                     runs nothing, as a device sharing its SMs (an MPS client's share) may
     launch_after=N  the first N cuLaunchKernel run, the next returns 719 and the context becomes
                     sticky-failed: every later memory/module/launch/sync call in it returns 719
                     until the primary context is released to 0 and retained again (its memory
                     and modules are then reclaimed, as a real driver does)
   The counters for oom_after/launch_after restart whenever the value of CQ_MOCK_FAIL changes (or
   on cq_mock_reset_faults()).  CQ_MOCK_QUIET=1 silences the per-violation stderr lines (the
   counter still counts).

   Barriers: a kernel whose table entry has `barriers` set (the counting sort's one-block kernel,
   the block scan) calls __syncthreads / __shfl_up_sync.  By default the mock runs such a block
   in its thread 0 alone (the kernel's CQ__BLOCK_SERIAL path: the same loops with stride 1).
   With CQ_MOCK_FIBERS=1 it runs every thread of the block as a fiber (ucontext) that yields at
   each barrier, so the kernel's real parallel path runs with CUDA's barrier semantics: a thread
   that reads another's result without a barrier in between sees the old value.  CQ_MOCK_FIBERS=N
   (N > 1) does so for a launch of one block and one block in N of the others (fibers_on).  A barrier
   reached by some threads of a block while others have already returned is a violation. */
#define _GNU_SOURCE
#undef _FORTIFY_SOURCE   /* its longjmp check refuses a jump to another stack (the fibers' switches) */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

/* ------------------------------------------------------------------ driver types and codes */
typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct mock_ctx *CUcontext;
typedef struct mock_module *CUmodule;
typedef struct mock_func *CUfunction;
typedef void *CUstream;

#define OK 0
#define E_INVALID_VALUE 1
#define E_OUT_OF_MEMORY 2
#define E_NOT_INITIALIZED 3
#define E_NO_DEVICE 100
#define E_INVALID_DEVICE 101
#define E_INVALID_IMAGE 200
#define E_INVALID_CONTEXT 201
#define E_INVALID_PTX 218
#define E_UNSUPPORTED_PTX_VERSION 222
#define E_INVALID_HANDLE 400
#define E_NOT_FOUND 500
#define E_ILLEGAL_ADDRESS 700
#define E_LAUNCH_FAILED 719
#define E_COOPERATIVE_TOO_LARGE 720

#define MOCK_DRIVER_VERSION 13000
#define MOCK_OLD_DRIVER_VERSION 11080
#define MOCK_TOTAL_MEM ((size_t)8 << 30)
#define MOCK_DEVICE_NAME "Mock GPU (CPU emulation)"
#define MOCK_SMS 132
#define MOCK_CC_MAJOR 9
#define MOCK_CC_MINOR 0
#define MOCK_PTX_ISA_MAX 90          /* PTX ISA 9.0, what a CUDA 13.0 driver JITs */

#define EXPORT __attribute__((visibility("default")))

/* ------------------------------------------------------------------ the emulated kernels */
typedef struct cq__emu_dim3 { unsigned x, y, z; } cq__emu_dim3;
typedef struct cq__emu_kernel { const char *name; void (*call)(void **args); int barriers; } cq__emu_kernel;
EXPORT cq__emu_dim3 cq__emu_blockIdx, cq__emu_blockDim, cq__emu_threadIdx, cq__emu_gridDim;
EXPORT int cq__emu_fibers;   /* 1 while a block runs as fibers: the kernels take their parallel path */
extern const cq__emu_kernel cq__emu_kernels_2d_f32[], cq__emu_kernels_2d_f64[],
    cq__emu_kernels_3d_f32[], cq__emu_kernels_3d_f64[];
static const cq__emu_kernel *const emu_tables[] = {
    cq__emu_kernels_2d_f32, cq__emu_kernels_2d_f64, cq__emu_kernels_3d_f32, cq__emu_kernels_3d_f64
};

static const cq__emu_kernel *emu_find(const char *name)
{
    for (size_t t = 0; t < sizeof emu_tables / sizeof emu_tables[0]; ++t)
        for (const cq__emu_kernel *k = emu_tables[t]; k->name; ++k)
            if (strcmp(k->name, name) == 0) return k;
    return NULL;
}

/* ------------------------------------------------------------------ state */
typedef struct alloc_rec {
    char *base;        /* device pointer: map + prot_len - size rounded up to 256 (the end of the
                          block meets the guard region, so a kernel reading or writing past it by
                          more than the 256-byte rounding faults: a real allocation's alignment) */
    char *map;         /* start of the mapping */
    size_t size;       /* bytes asked for */
    size_t prot_len;   /* page-rounded size (made accessible when needed) */
    size_t map_len;    /* prot_len + the guard region (prot_len again) */
    int open;          /* currently PROT_READ|PROT_WRITE */
} alloc_rec;

#define MAX_PARAMS 32
enum { P_SCALAR, P_PTR64, P_STRUCT8, P_STRUCT };   /* PTX parameter kinds */
typedef struct mock_func {
    unsigned magic;
    struct mock_module *mod;
    const cq__emu_kernel *k;
    char name[128];
    int nparams;                       /* -1: the PTX declaration was not parsed */
    unsigned char kind[MAX_PARAMS];
    unsigned size[MAX_PARAMS];
    unsigned long maxntid;             /* .maxntid's product (__launch_bounds__' threads); 0: none */
    struct mock_func *next;
} mock_func;

typedef struct mock_module {
    unsigned magic;
    char *ptx;
    struct mock_ctx *ctx;
    mock_func *funcs;
    struct mock_module *next;
} mock_module;

typedef struct mock_ctx {
    unsigned magic;
    int alive;
    int refs;
    int sticky;        /* 0, or the sticky error (719/700) every later call returns */
    struct mock_ctx *older;   /* the contexts made after the static pool's (kept: see PrimaryCtxRetain) */
} mock_ctx;

#define MAGIC_MOD 0x4d4f4455u
#define MAGIC_FUNC 0x46554e43u
#define MAGIC_CTX 0x43545854u
#define DEAD 0xdeadbeefu

static pthread_mutex_t lock_;         /* recursive; every entry point holds it (launches included) */
static pthread_once_t lock_once = PTHREAD_ONCE_INIT;
static void lock_init(void)
{
    pthread_mutexattr_t at;
    pthread_mutexattr_init(&at);
    pthread_mutexattr_settype(&at, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&lock_, &at);
    pthread_mutexattr_destroy(&at);
}
static void lock(void) { pthread_once(&lock_once, lock_init); pthread_mutex_lock(&lock_); }
static void unlock(void) { pthread_mutex_unlock(&lock_); }
static int initialized;
static size_t page;

static alloc_rec *allocs;          /* live allocations */
static int n_allocs, cap_allocs;
static size_t live_bytes;
static long launches, readbacks, allocs_total;
static size_t copied;   /* bytes moved between host and device */
static int violations;

#define N_FREED 1024
static struct { char *base; size_t size; } freed[N_FREED];   /* recently freed, for use-after-free */
static unsigned freed_next;

static mock_module *modules;       /* live modules */
static int n_modules;
static mock_ctx *primary;          /* device 0's primary context, NULL when destroyed */

#define CTX_STACK 64
static __thread mock_ctx *ctx_stack[CTX_STACK];
static __thread int ctx_depth;

/* fault injection */
static char fail_seen[256];
static long allocs_since, launches_since;

/* the kernel being run (for the SIGSEGV report) */
static const char *volatile running_kernel;

/* ------------------------------------------------------------------ helpers */
static int quiet(void)
{
    const char *q = getenv("CQ_MOCK_QUIET");
    return q && *q && *q != '0';
}

static void violation(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void violation(const char *fmt, ...)
{
    ++violations;
    if (!quiet()) {
        va_list ap;
        va_start(ap, fmt);
        fputs("mock_libcuda: ", stderr);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
    }
}

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...)
{
    if (!quiet()) {
        va_list ap;
        va_start(ap, fmt);
        fputs("mock_libcuda: ", stderr);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
    }
}

/* The fault modes in CQ_MOCK_FAIL: 1 if `mode` is listed; for "oom_after"/"launch_after",
   *n receives its number.  Restarts the counters when the variable's value changed. */
static const char *fail_env(void)
{
    const char *f = getenv("CQ_MOCK_FAIL");
    if (!f) f = "";
    if (strncmp(f, fail_seen, sizeof fail_seen - 1) != 0) {
        snprintf(fail_seen, sizeof fail_seen, "%s", f);
        allocs_since = launches_since = 0;
    }
    return f;
}

static int fail_mode(const char *mode, long *n)
{
    const char *f = fail_env();
    size_t len = strlen(mode);
    while (*f) {
        const char *end = strchr(f, ',');
        size_t tl = end ? (size_t)(end - f) : strlen(f);
        while (tl && (*f == ' ')) { ++f; --tl; }
        if (tl >= len && strncmp(f, mode, len) == 0) {
            if (tl == len && !n) return 1;
            if (n && tl > len && f[len] == '=') { *n = strtol(f + len + 1, NULL, 10); return 1; }
        }
        if (!end) break;
        f = end + 1;
    }
    return 0;
}

static mock_ctx *current_ctx(void)
{
    return ctx_depth > 0 ? ctx_stack[ctx_depth - 1] : NULL;
}

/* The check every memory/module/launch call starts with. */
static CUresult need_ctx(void)
{
    mock_ctx *c;
    if (!initialized) return E_NOT_INITIALIZED;
    c = current_ctx();
    if (!c || c->magic != MAGIC_CTX || !c->alive) return E_INVALID_CONTEXT;
    if (c->sticky) return c->sticky;
    return OK;
}

static alloc_rec *find_alloc(const char *p, int inclusive_end)
{
    for (int i = 0; i < n_allocs; ++i) {
        alloc_rec *a = &allocs[i];
        if (p >= a->base && (p < a->base + a->size || (inclusive_end && p == a->base + a->size))) return a;
    }
    return NULL;
}

/* the live allocation whose whole mapping (guard region included) holds p */
static alloc_rec *find_mapping(const char *p)
{
    for (int i = 0; i < n_allocs; ++i)
        if (p >= allocs[i].map && p < allocs[i].map + allocs[i].map_len) return &allocs[i];
    return NULL;
}

static int find_freed(const char *p, char **base, size_t *size)
{
    for (unsigned i = 0; i < N_FREED; ++i)
        if (freed[i].base && p >= freed[i].base && p < freed[i].base + freed[i].size) {
            *base = freed[i].base; *size = freed[i].size;
            return 1;
        }
    return 0;
}

static void forget_freed(const char *base, size_t len)   /* a new mapping reused the range */
{
    for (unsigned i = 0; i < N_FREED; ++i)
        if (freed[i].base && freed[i].base < base + len && base < freed[i].base + freed[i].size)
            freed[i].base = NULL;
}

/* CQ_MOCK_NO_PROTECT=1: device memory stays readable by the host (bounds and argument checks
   remain).  For long test programs where the CPU has no protection keys (below): toggling
   protection there costs a fault and two mprotect calls per allocation a launch touches. */
static int no_protect(void)
{
    static int v = -1;
    if (v < 0) { const char *e = getenv("CQ_MOCK_NO_PROTECT"); v = e && *e && *e != '0'; }
    return v;
}

/* Where the CPU and kernel have memory protection keys (x86 PKU, Linux 4.9+), every allocation is
   mapped with one key at its creation, and opening or closing device memory is a write of the
   thread's key rights (pkey_set: one instruction, no system call): every mock call that opens it
   (a launch, a copy) opens it for its own thread alone.  Threads start with the key's access
   disabled (Linux's default rights for keys other than 0), so the host touching device memory
   faults as with mprotect.  Else (or CQ_MOCK_PKEYS=0) mprotect per allocation (a launch's opened
   lazily, set_open_all): with every allocation opened and closed per launch, a test of many
   launches spent most of its time in the kernel changing page tables (17 s of 20). */
static int mock_pkey = -2;   /* -2: not chosen yet, -1: none (mprotect), else the key */
static int dev_pkey(void)
{
#ifdef PKEY_DISABLE_ACCESS
    if (mock_pkey == -2) {
        const char *e = getenv("CQ_MOCK_PKEYS");
        mock_pkey = no_protect() || (e && *e == '0') ? -1 : pkey_alloc(0, PKEY_DISABLE_ACCESS);
        if (mock_pkey < 0) mock_pkey = -1;
    }
#else
    mock_pkey = -1;
#endif
    return mock_pkey;
}

/* with a protection key: every allocation open (1) or closed (0) for this thread; 0 if there is
   no key (then each allocation's pages are mprotect-ed) */
static int key_open(int open)
{
#ifdef PKEY_DISABLE_ACCESS
    if (dev_pkey() >= 0) {
        if (pkey_set(mock_pkey, open ? 0 : PKEY_DISABLE_ACCESS) != 0) {
            fprintf(stderr, "mock_libcuda: pkey_set failed: %s\n", strerror(errno));
            abort();
        }
        return 1;
    }
#endif
    (void)open;
    return 0;
}

/* allocation a open or closed for the host's code (with a key: every allocation, this thread) */
static void set_open(alloc_rec *a, int open)
{
    if (key_open(open)) { a->open = open; return; }
    if (a->open == open) return;
    if (no_protect()) { a->open = open; return; }
    if (mprotect(a->map, a->prot_len, open ? PROT_READ | PROT_WRITE : PROT_NONE) != 0) {
        fprintf(stderr, "mock_libcuda: mprotect failed: %s\n", strerror(errno));
        abort();
    }
    a->open = open;
}

/* Without a key, a launch opens its allocations lazily: each as its kernel (or the mock on the
   launching thread) first touches it, in the SIGSEGV handler (on_segv: mprotect, then the access
   runs again), not all of them at its start.  A sim keeps 50-100 allocations (checkpoints, the
   tape) and a launch touches a few: with two mprotect calls per allocation per launch, example 10
   on the mock took 323 s (300 steps and their backward), fuzz_api's 12 runs 38 s.  Off where the
   handler is not ours (CQ_MOCK_NO_SEGV_HANDLER, handed back after a fault, or another installed
   since: segv_ours) or CQ_MOCK_LAZY=0.
   Set and read under the lock, and by the handler on the launching thread alone. */
static volatile int lazy_open;        /* a launch is running with its allocations opened lazily */
static pthread_t lazy_thread;         /* the launching thread: another thread's touch still faults */
static int segv_ours(void);

/* every allocation open or closed (a launch) */
static void set_open_all(int open)
{
    if (key_open(open)) return;
    if (open && !no_protect() && segv_ours()) {
        const char *e = getenv("CQ_MOCK_LAZY");
        if (!(e && *e == '0')) { lazy_thread = pthread_self(); lazy_open = 1; return; }
    }
    lazy_open = 0;
    for (int i = 0; i < n_allocs; ++i) set_open(&allocs[i], open);
}

/* The allocation holding the device range [p, p + bytes), or NULL after reporting a violation. */
static alloc_rec *check_range(const char *call, const char *what, CUdeviceptr dp, size_t bytes)
{
    const char *p = (const char *)(size_t)dp;
    alloc_rec *a = find_alloc(p, bytes == 0);
    char *fb;
    size_t fs;
    if (a && (size_t)(a->base + a->size - p) >= bytes) return a;
    if (a)
        violation("%s out of bounds: %s 0x%llx + %zu bytes runs %zu bytes past the end of the allocation "
                  "0x%llx (%zu bytes) [offset %zu]", call, what, dp, bytes, (size_t)(p + bytes - (a->base + a->size)),
                  (unsigned long long)(size_t)a->base, a->size, (size_t)(p - a->base));
    else if (find_freed(p, &fb, &fs))
        violation("%s out of bounds: %s 0x%llx + %zu bytes is in FREED device memory (allocation 0x%llx, %zu bytes)",
                  call, what, dp, bytes, (unsigned long long)(size_t)fb, fs);
    else
        violation("%s out of bounds: %s 0x%llx + %zu bytes is not inside any live device allocation%s", call, what,
                  dp, bytes, dp == 0 ? " (NULL)" : "");
    return NULL;
}

/* host pointers of HtoD/DtoH must be ordinary memory */
static int check_host(const char *call, const char *what, const void *h, size_t bytes)
{
    alloc_rec *a;
    if (!h && bytes) { violation("%s: %s host pointer is NULL (%zu bytes)", call, what, bytes); return 0; }
    if (h && (a = find_mapping((const char *)h)) != NULL) {
        violation("%s: %s host pointer %p is DEVICE memory (allocation 0x%llx, %zu bytes): wrong copy direction or "
                  "argument order?", call, what, h, (unsigned long long)(size_t)a->base, a->size);
        return 0;
    }
    return 1;
}

/* ------------------------------------------------------------------ SIGSEGV report */
static struct sigaction old_segv;
static int segv_installed;

static void put_str(const char *s) { ssize_t r = write(2, s, strlen(s)); (void)r; }
static void put_hex(unsigned long long v)
{
    char b[20];
    int i = 19;
    b[i] = 0;
    do { b[--i] = "0123456789abcdef"[v & 15]; v >>= 4; } while (v && i > 2);
    b[--i] = 'x'; b[--i] = '0';
    put_str(b + i);
}

static void on_segv(int sig, siginfo_t *si, void *uc)
{
    const char *addr = (const char *)si->si_addr;
    (void)uc;
    if (lazy_open && pthread_equal(pthread_self(), lazy_thread))   /* a lazy launch's first touch (set_open_all) */
        for (int i = 0; i < n_allocs; ++i) {
            alloc_rec *a = &allocs[i];
            if (!a->open && addr >= a->map && addr < a->map + a->prot_len) {
                if (mprotect(a->map, a->prot_len, PROT_READ | PROT_WRITE) == 0) { a->open = 1; return; }
                break;
            }
        }
    for (int i = 0; i < n_allocs; ++i) {
        const alloc_rec *a = &allocs[i];
        if (addr >= a->map && addr < a->map + a->map_len) {
            put_str("mock_libcuda: SIGSEGV at ");
            put_hex((unsigned long long)(size_t)addr);
            if (running_kernel) {
                put_str(" in kernel ");
                put_str(running_kernel);
                put_str(addr >= a->map + a->prot_len ? ": past the end of device allocation " :
                        addr < a->base ? ": before the start of device allocation " : ": device allocation ");
            } else {
                put_str(": the HOST touched device memory (allocation ");
            }
            put_hex((unsigned long long)(size_t)a->base);
            put_str(running_kernel ? "\n" : ")\n");
            break;
        }
    }
    if (running_kernel && (!n_allocs || !find_mapping(addr))) {
        put_str("mock_libcuda: SIGSEGV in kernel ");
        put_str(running_kernel);
        put_str(" at ");
        put_hex((unsigned long long)(size_t)addr);
        put_str(" (not device memory)\n");
    }
    /* Hand the fault back: restore the previous handler and return, so the access faults again. */
    sigaction(sig, &old_segv, NULL);
    segv_installed = 0;
}

/* on_segv is the SIGSEGV handler now (a program or a sanitizer may have installed its own since) */
static int segv_ours(void)
{
    struct sigaction cur;
    return segv_installed && sigaction(SIGSEGV, NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_segv;
}

__attribute__((constructor)) static void mock_init(void)
{
    const char *no = getenv("CQ_MOCK_NO_SEGV_HANDLER");
    long ps = sysconf(_SC_PAGESIZE);
    page = ps > 0 ? (size_t)ps : 4096;
    if (!(no && *no && *no != '0')) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_segv;
        sa.sa_flags = SA_SIGINFO | SA_NODEFER;
        sigemptyset(&sa.sa_mask);
        if (sigaction(SIGSEGV, &sa, &old_segv) == 0) segv_installed = 1;
    }
}

__attribute__((destructor)) static void mock_fini(void)
{
    struct sigaction cur;
    /* restore the previous handler only if ours is still the one installed */
    if (segv_installed && sigaction(SIGSEGV, NULL, &cur) == 0 && cur.sa_sigaction == on_segv)
        sigaction(SIGSEGV, &old_segv, NULL);
}

/* ------------------------------------------------------------------ errors */
static const struct { int code; const char *name, *text; } errors[] = {
    {0, "CUDA_SUCCESS", "no error"},
    {1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {4, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
    {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {200, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {209, "CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image is available for execution on the device"},
    {218, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "the provided PTX was compiled with an unsupported toolchain."},
    {400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
    {719, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {720, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE", "too many blocks in cooperative launch"},
    {999, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

EXPORT CUresult cuGetErrorName(CUresult e, const char **name)
{
    if (!name) return E_INVALID_VALUE;
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; ++i)
        if (errors[i].code == e) { *name = errors[i].name; return OK; }
    *name = NULL;
    return E_INVALID_VALUE;
}

EXPORT CUresult cuGetErrorString(CUresult e, const char **text)
{
    if (!text) return E_INVALID_VALUE;
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; ++i)
        if (errors[i].code == e) { *text = errors[i].text; return OK; }
    *text = NULL;
    return E_INVALID_VALUE;
}

/* ------------------------------------------------------------------ init, device */
EXPORT CUresult cuInit(unsigned flags)
{
    CUresult r = OK;
    lock();
    if (flags != 0) r = E_INVALID_VALUE;
    else if (fail_mode("init", NULL)) r = E_NO_DEVICE;
    else initialized = 1;
    unlock();
    return r;
}

EXPORT CUresult cuDriverGetVersion(int *version)
{
    if (!version) return E_INVALID_VALUE;
    lock();
    *version = fail_mode("oldriver", NULL) ? MOCK_OLD_DRIVER_VERSION : MOCK_DRIVER_VERSION;
    unlock();
    return OK;
}

static int device_count(void)
{
    int n;
    lock();
    n = fail_mode("nodevice", NULL) ? 0 : 1;
    unlock();
    return n;
}

static CUresult check_dev(CUdevice dev)
{
    if (!initialized) return E_NOT_INITIALIZED;
    if (dev < 0 || dev >= device_count()) return E_INVALID_DEVICE;
    return OK;
}

EXPORT CUresult cuDeviceGetCount(int *count)
{
    if (!initialized) return E_NOT_INITIALIZED;
    if (!count) return E_INVALID_VALUE;
    *count = device_count();
    return OK;
}

EXPORT CUresult cuDeviceGet(CUdevice *dev, int ordinal)
{
    if (!initialized) return E_NOT_INITIALIZED;
    if (!dev) return E_INVALID_VALUE;
    if (ordinal < 0 || ordinal >= device_count()) return E_INVALID_DEVICE;
    *dev = ordinal;
    return OK;
}

EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
    CUresult r = check_dev(dev);
    if (r) return r;
    if (!name || len <= 0) return E_INVALID_VALUE;
    snprintf(name, (size_t)len, "%s", MOCK_DEVICE_NAME);
    return OK;
}

EXPORT CUresult cuDeviceGetAttribute(int *value, int attrib, CUdevice dev)
{
    CUresult r = check_dev(dev);
    if (r) return r;
    if (!value) return E_INVALID_VALUE;
    switch (attrib) {
    case 1: *value = 1024; break;                 /* MAX_THREADS_PER_BLOCK */
    case 2: case 3: *value = 1024; break;         /* MAX_BLOCK_DIM_X, Y */
    case 4: *value = 64; break;                   /* MAX_BLOCK_DIM_Z */
    case 5: *value = 2147483647; break;           /* MAX_GRID_DIM_X */
    case 6: case 7: *value = 65535; break;        /* MAX_GRID_DIM_Y, Z */
    case 8: *value = 49152; break;                /* MAX_SHARED_MEMORY_PER_BLOCK */
    case 10: *value = 32; break;                  /* WARP_SIZE */
    case 13: *value = 1980000; break;             /* CLOCK_RATE (kHz) */
    case 16: *value = MOCK_SMS; break;            /* MULTIPROCESSOR_COUNT */
    case 95: *value = 1; break;                   /* COOPERATIVE_LAUNCH */
    case 75: *value = MOCK_CC_MAJOR; break;       /* COMPUTE_CAPABILITY_MAJOR */
    case 76: *value = MOCK_CC_MINOR; break;       /* COMPUTE_CAPABILITY_MINOR */
    default: return E_INVALID_VALUE;
    }
    return OK;
}

EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    CUresult r = check_dev(dev);
    if (r) return r;
    if (!bytes) return E_INVALID_VALUE;
    *bytes = MOCK_TOTAL_MEM;
    return OK;
}

/* ------------------------------------------------------------------ contexts */
static void free_module(mock_module *m)
{
    mock_func *f = m->funcs;
    while (f) { mock_func *nx = f->next; f->magic = DEAD; free(f); f = nx; }
    free(m->ptx);
    m->magic = DEAD;
    free(m);
}

static void free_alloc_at(int i)
{
    alloc_rec *a = &allocs[i];
    freed[freed_next % N_FREED].base = a->base;
    freed[freed_next % N_FREED].size = a->size;
    ++freed_next;
    munmap(a->map, a->map_len);
    live_bytes -= a->size;
    allocs[i] = allocs[--n_allocs];
}

EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev)
{
    CUresult r;
    lock();
    r = check_dev(dev);
    if (!r && !ctx) r = E_INVALID_VALUE;
    if (!r) {
        if (!primary) {
            /* never reused, so that a stale handle stays readable and is seen dead: from a static
               pool, then (a program that creates and destroys more than 256 sims one after
               another) from the heap, each kept on a list (reachable: no leak) */
            static mock_ctx pool[256], *made;
            static unsigned pool_used;
            const int heap = pool_used >= sizeof pool / sizeof pool[0];
            primary = heap ? (mock_ctx *)malloc(sizeof *primary) : &pool[pool_used++];
            if (primary) { memset(primary, 0, sizeof *primary); if (heap) { primary->older = made; made = primary; } }
            if (!primary) r = E_OUT_OF_MEMORY;
            else { primary->magic = MAGIC_CTX; primary->alive = 1; }
        }
        if (!r) { ++primary->refs; *ctx = primary; }
    }
    unlock();
    return r;
}

EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    CUresult r;
    lock();
    r = check_dev(dev);
    if (!r && (!primary || primary->refs <= 0)) {
        violation("cuDevicePrimaryCtxRelease_v2: device %d's primary context released more times than retained", dev);
        r = E_INVALID_CONTEXT;
    }
    if (!r && --primary->refs == 0) {
        /* destroyed: a real driver frees its memory and modules with it */
        if (primary->sticky) {
            while (modules) { mock_module *m = modules; modules = m->next; free_module(m); --n_modules; }
            while (n_allocs) free_alloc_at(n_allocs - 1);
        } else if (n_allocs || n_modules) {
            note("primary context destroyed with %d live allocation(s) (%zu bytes) and %d module(s): leaked by the "
                 "host (kept, so cq_mock_live_allocations() shows them)", n_allocs, live_bytes, n_modules);
        }
        primary->alive = 0;
        primary = NULL;
    }
    unlock();
    return r;
}

EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
    if (!initialized) return E_NOT_INITIALIZED;
    if (!ctx || ctx->magic != MAGIC_CTX || !ctx->alive) return E_INVALID_CONTEXT;
    if (ctx_depth >= CTX_STACK) {
        lock();
        violation("cuCtxPushCurrent_v2: context stack deeper than %d: a push without its pop?", CTX_STACK);
        unlock();
        return E_OUT_OF_MEMORY;
    }
    ctx_stack[ctx_depth++] = ctx;
    return OK;
}

EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *ctx)
{
    if (!initialized) return E_NOT_INITIALIZED;
    if (ctx_depth <= 0) {
        lock();
        violation("cuCtxPopCurrent_v2: no current context to pop (a pop without its push?)");
        unlock();
        return E_INVALID_CONTEXT;
    }
    --ctx_depth;
    if (ctx) *ctx = ctx_stack[ctx_depth];
    return OK;
}

EXPORT CUresult cuCtxSynchronize(void)
{
    CUresult r;
    lock();
    r = need_ctx();
    unlock();
    return r;
}

/* ------------------------------------------------------------------ modules */
static void write_log(unsigned n, const int *options, void **values, int buf_opt, int size_opt, const char *msg)
{
    char *buf = NULL;
    size_t cap = 0;
    int size_index = -1;
    for (unsigned i = 0; i < n; ++i) {
        if (options[i] == buf_opt) buf = (char *)values[i];
        if (options[i] == size_opt) { cap = (size_t)values[i]; size_index = (int)i; }
    }
    if (!buf || !cap) return;
    snprintf(buf, cap, "%s", msg);
    values[size_index] = (void *)(strlen(buf) + (msg[0] ? 1 : 0));   /* bytes written, as the driver reports */
}

/* 10 * major + minor of ".version X.Y", or -1 */
static int ptx_isa(const char *ptx)
{
    const char *v = strstr(ptx, ".version");
    int major, minor;
    if (!v || sscanf(v + 8, " %d.%d", &major, &minor) != 2) return -1;
    return major * 10 + minor;
}

static int ptx_target(const char *ptx)
{
    const char *t = strstr(ptx, ".target");
    int sm;
    if (!t || sscanf(t + 7, " sm_%d", &sm) != 1) return -1;
    return sm;
}

EXPORT CUresult cuModuleLoadDataEx(CUmodule *mod, const void *image, unsigned n, int *options, void **values)
{
    CUresult r;
    const char *ptx = (const char *)image;
    char msg[256];
    lock();
    msg[0] = 0;
    if ((r = need_ctx()) != OK) goto out;
    if (!mod || !image || (n && (!options || !values))) { r = E_INVALID_VALUE; goto out; }
    if (fail_mode("ptx", NULL)) {
        r = E_INVALID_PTX;
        snprintf(msg, sizeof msg, "ptxas fatal: mock rejects this PTX");
    } else if (!strstr(ptx, ".version") || !strstr(ptx, ".target")) {
        r = E_INVALID_IMAGE;
        snprintf(msg, sizeof msg, "mock_libcuda: the image is not PTX text (no .version/.target directive)");
    } else if (ptx_isa(ptx) > MOCK_PTX_ISA_MAX) {
        r = E_UNSUPPORTED_PTX_VERSION;
        snprintf(msg, sizeof msg, "ptxas fatal: Unsupported .version %d.%d; current version is '%d.%d'",
                 ptx_isa(ptx) / 10, ptx_isa(ptx) % 10, MOCK_PTX_ISA_MAX / 10, MOCK_PTX_ISA_MAX % 10);
    } else if (ptx_target(ptx) > MOCK_CC_MAJOR * 10 + MOCK_CC_MINOR) {
        r = E_INVALID_PTX;
        snprintf(msg, sizeof msg, "ptxas fatal: PTX .target sm_%d is newer than the device (sm_%d%d)",
                 ptx_target(ptx), MOCK_CC_MAJOR, MOCK_CC_MINOR);
    } else {
        mock_module *m = (mock_module *)calloc(1, sizeof *m);
        size_t len = strlen(ptx);
        if (!m || !(m->ptx = (char *)malloc(len + 1))) { free(m); r = E_OUT_OF_MEMORY; goto out; }
        memcpy(m->ptx, ptx, len + 1);
        m->magic = MAGIC_MOD;
        m->ctx = current_ctx();
        m->next = modules;
        modules = m;
        ++n_modules;
        *mod = m;
    }
    if (n) {
        write_log(n, options, values, 5, 6, msg);                                   /* error log */
        write_log(n, options, values, 3, 4, r ? "" : "mock_libcuda: PTX accepted");  /* info log */
    }
out:
    unlock();
    return r;
}

static int module_live(const mock_module *m)
{
    for (const mock_module *x = modules; x; x = x->next)
        if (x == m) return 1;
    return 0;
}

EXPORT CUresult cuModuleUnload(CUmodule mod)
{
    CUresult r;
    lock();
    if ((r = need_ctx()) != OK) goto out;
    if (!mod || !module_live(mod)) {
        violation("cuModuleUnload: %p is not a loaded module (unloaded twice?)", (void *)mod);
        r = E_INVALID_HANDLE;
        goto out;
    }
    for (mock_module **pp = &modules; *pp; pp = &(*pp)->next)
        if (*pp == mod) { *pp = mod->next; break; }
    --n_modules;
    free_module(mod);
out:
    unlock();
    return r;
}

/* Parses the parameter list of ".entry NAME(" in the PTX into f (nparams = -1 if it cannot), and
   the .maxntid X, Y, Z between it and the body (its __launch_bounds__) into f->maxntid. */
static void parse_params(mock_func *f, const char *decl)
{
    const char *p = decl, *close = strchr(decl, ')');
    f->nparams = -1;
    if (!close) return;
    {
        const char *body = strchr(close, '{'), *m = strstr(close, ".maxntid");
        unsigned x = 0, y = 1, z = 1;
        if (m && body && m < body && sscanf(m, ".maxntid %u, %u, %u", &x, &y, &z) >= 1 && x)
            f->maxntid = (unsigned long)x * y * z;
    }
    f->nparams = 0;
    while ((p = strstr(p, ".param")) != NULL && p < close) {
        const char *end = strchr(p + 6, ',');
        char buf[256];
        size_t len;
        unsigned align = 0, size = 0;
        if (!end || end > close) end = close;
        len = (size_t)(end - p) < sizeof buf - 1 ? (size_t)(end - p) : sizeof buf - 1;
        memcpy(buf, p, len);
        buf[len] = 0;
        if (f->nparams >= MAX_PARAMS) { f->nparams = -1; return; }
        if (strstr(buf, ".b8") && strchr(buf, '[')) {
            const char *al = strstr(buf, ".align");
            if (al) align = (unsigned)strtoul(al + 6, NULL, 10);
            size = (unsigned)strtoul(strchr(buf, '[') + 1, NULL, 10);
            f->kind[f->nparams] = align >= 8 ? P_STRUCT8 : P_STRUCT;
        } else if (strstr(buf, ".u64") || strstr(buf, ".b64") || strstr(buf, ".s64")) {
            size = 8;
            f->kind[f->nparams] = strstr(buf, ".u64") ? P_PTR64 : P_SCALAR;
        } else {
            size = strstr(buf, ".f64") ? 8 : strstr(buf, "16") ? 2 : strstr(buf, "8 ") ? 1 : 4;
            f->kind[f->nparams] = P_SCALAR;
        }
        f->size[f->nparams++] = size;
        p = end;
    }
}

EXPORT CUresult cuModuleGetFunction(CUfunction *fn, CUmodule mod, const char *name)
{
    CUresult r;
    char pat[200];
    const char *decl;
    const cq__emu_kernel *k;
    mock_func *f;
    lock();
    if ((r = need_ctx()) != OK) goto out;
    if (!fn || !name) { r = E_INVALID_VALUE; goto out; }
    if (!mod || !module_live(mod)) {
        violation("cuModuleGetFunction(%s): %p is not a loaded module", name, (void *)mod);
        r = E_INVALID_HANDLE;
        goto out;
    }
    for (f = mod->funcs; f; f = f->next)
        if (strcmp(f->name, name) == 0) { *fn = f; goto out; }
    snprintf(pat, sizeof pat, ".entry %s(", name);
    decl = strlen(name) < sizeof pat - 10 ? strstr(mod->ptx, pat) : NULL;
    k = emu_find(name);
    if (!decl || !k) { r = E_NOT_FOUND; goto out; }
    if (!(f = (mock_func *)calloc(1, sizeof *f))) { r = E_OUT_OF_MEMORY; goto out; }
    f->magic = MAGIC_FUNC;
    f->mod = mod;
    f->k = k;
    snprintf(f->name, sizeof f->name, "%s", name);
    parse_params(f, decl + strlen(pat));
    f->next = mod->funcs;
    mod->funcs = f;
    *fn = f;
out:
    unlock();
    return r;
}

static int func_live(const mock_func *fn)
{
    for (const mock_module *m = modules; m; m = m->next)
        for (const mock_func *f = m->funcs; f; f = f->next)
            if (f == fn) return 1;
    return 0;
}

/* the checks of a call on a function handle (lock held): a current context, fn one of a loaded module */
static CUresult func_call_ok(const char *who, const mock_func *fn)
{
    CUresult r = need_ctx();
    if (r != OK) return r;
    if (!fn || !func_live(fn)) {
        violation("%s: %p is not a function of a loaded module", who, (const void *)fn);
        return E_INVALID_HANDLE;
    }
    return OK;
}

/* A kernel's attributes (bench/gpu_kernels.c `regs`): the mock knows no registers or local memory
   (its kernels are C): 0 for every attribute; its name as the driver's cuFuncGetName gives it. */
EXPORT CUresult cuFuncGetAttribute(int *value, int attrib, CUfunction fn)
{
    CUresult r;
    lock();
    if ((r = func_call_ok("cuFuncGetAttribute", fn)) != OK) goto out;
    if (!value || attrib < 0) { r = E_INVALID_VALUE; goto out; }
    *value = 0;
out:
    unlock();
    return r;
}

EXPORT CUresult cuFuncGetName(const char **name, CUfunction fn)
{
    CUresult r;
    lock();
    if ((r = func_call_ok("cuFuncGetName", fn)) != OK) goto out;
    if (!name) { r = E_INVALID_VALUE; goto out; }
    *name = fn->name;
out:
    unlock();
    return r;
}

/* One block an SM for every kernel: with 132 SMs, the kernels that loop over tiles (the gather,
   the grid adjoint) take several each on the tests' larger grids (a 28^3 grid has 784 rows). */
EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *blocks, CUfunction fn, int block_size, size_t dynamic_shared)
{
    CUresult r;
    lock();
    if ((r = func_call_ok("cuOccupancyMaxActiveBlocksPerMultiprocessor", fn)) != OK) goto out;
    if (!blocks || block_size < 1 || block_size > 1024 || dynamic_shared > 49152) { r = E_INVALID_VALUE; goto out; }
    *blocks = 1;
out:
    unlock();
    return r;
}

/* ------------------------------------------------------------------ launches */
/* 1 if v (a value the kernel will use as a device address) is fine; else reports it. */
static int check_kernel_pointer(const mock_func *f, int i, size_t off, int certain, unsigned long long v)
{
    const char *p = (const char *)(size_t)v;
    char *fb;
    size_t fs;
    unsigned char vec;
    char where[64];
    if (v == 0 || find_alloc(p, 1)) return 1;
    if (certain) snprintf(where, sizeof where, "argument %d", i);
    else snprintf(where, sizeof where, "argument %d (word at +%zu)", i, off);
    if (find_freed(p, &fb, &fs)) {
        violation("cuLaunchKernel(%s): %s holds 0x%llx, in FREED device memory (allocation 0x%llx, %zu "
                  "bytes)", f->name, where, v, (unsigned long long)(size_t)fb, fs);
        return 0;
    }
    if (v < 65536 || v >= (1ull << 47)) {
        if (!certain) return 1;   /* not an address: some other struct field */
        violation("cuLaunchKernel(%s): argument %d (a pointer) holds 0x%llx, which is not device memory", f->name, i, v);
        return 0;
    }
    /* a struct word whose high half is a small number is more likely two int fields (e.g.
       res[0], res[1] = 32, 32 -> 0x2000000020, or nc[2], nf = 1, 480 -> 0x1e000000001) than a
       pointer: below 2^44 + 2^31 lies only ASan's shadow memory (x86-64: [0x7fff8000,
       0x10007fff8000)), which no program hands a kernel, and unmapped space without ASan */
    if (!certain && v < 0x10007fff8000ull) return 1;
    /* a mapped host page? (mincore fails with ENOMEM on unmapped ranges) */
    if (mincore((void *)((size_t)v & ~(page - 1)), 1, &vec) == 0) {
        violation("cuLaunchKernel(%s): %s holds 0x%llx, a HOST address: kernels may only touch device "
                  "memory", f->name, where, v);
        return 0;
    }
    if (certain) {
        violation("cuLaunchKernel(%s): argument %d (a pointer) holds 0x%llx, which is not device memory", f->name, i, v);
        return 0;
    }
    return 1;
}

/* ------------------------------------------------------------------ fibers (CQ_MOCK_FIBERS) */
#define FIBER_MAX 1024
#define FIBER_STACK (64 * 1024)
static ucontext_t fiber_main, fiber_ctx[FIBER_MAX];
/* A fiber starts on its own stack through setcontext (makecontext's entry); every later switch,
   to it or back, is a _setjmp/_longjmp pair: swapcontext saves and sets the signal mask, two
   system calls a switch, which were 95% of a test's time as fibers (1.4 M a test).  Under
   AddressSanitizer the ucontext calls alone: ASan follows them, not a longjmp to another stack. */
#if defined(__SANITIZE_ADDRESS__)
#  define FIBER_UCONTEXT 1
#elif defined(__has_feature)
#  if __has_feature(address_sanitizer)
#    define FIBER_UCONTEXT 1
#  endif
#endif
#ifndef FIBER_UCONTEXT
#  define FIBER_UCONTEXT 0
static jmp_buf fiber_main_jb, fiber_jb[FIBER_MAX];
static unsigned char fiber_started[FIBER_MAX];
#endif
static char *fiber_stacks;                  /* FIBER_MAX stacks, mapped on first use and kept */
static unsigned char fiber_state[FIBER_MAX]; /* 0 running, 1 waiting at a barrier, 2 returned */
static unsigned fiber_cur;
static int shfl_buf[FIBER_MAX];
static const mock_func *fiber_fn;
static void **fiber_params;

/* CQ_MOCK_FIBERS: 0 or unset: none; 1: every block of a barrier kernel as fibers; N > 1: a launch of
   one block, and one block in N of the others (picked by a hash of the block index, spread over
   the grid), as fibers, the rest serial: both paths give the same bits, and the parallel path
   still meets live and empty blocks, at a fraction of the context switches (make test) */
static unsigned fibers_on(void)
{
    const char *e = getenv("CQ_MOCK_FIBERS");
    long v;
    if (!e || !*e) return 0;
    v = strtol(e, NULL, 10);
    return v > 0 ? (unsigned)(v > 1000000 ? 1000000 : v) : (*e != '0');
}

static int fiber_block(unsigned every, unsigned x, unsigned blocks)
{
    return every == 1 || blocks == 1 || (x * 2654435761u >> 7) % every == 0;
}

static void fiber_entry(void)
{
    fiber_fn->k->call(fiber_params);
    fiber_state[fiber_cur] = 2;
#if !FIBER_UCONTEXT
    _longjmp(fiber_main_jb, 1);   /* (its stack is abandoned: the next launch makes it anew) */
#endif
}   /* (ucontext: returns to fiber_main through uc_link) */

/* the running fiber waits: back to the scheduler, until it resumes the fiber */
static __attribute__((noinline)) void fiber_yield(void)
{
#if FIBER_UCONTEXT
    swapcontext(&fiber_ctx[fiber_cur], &fiber_main);
#else
    if (!_setjmp(fiber_jb[fiber_cur])) _longjmp(fiber_main_jb, 1);
#endif
}

/* the scheduler runs fiber f until it waits or returns */
static __attribute__((noinline)) void fiber_resume(unsigned f)
{
#if FIBER_UCONTEXT
    swapcontext(&fiber_main, &fiber_ctx[f]);
#else
    if (!_setjmp(fiber_main_jb)) {
        if (fiber_started[f]) _longjmp(fiber_jb[f], 1);
        fiber_started[f] = 1;
        setcontext(&fiber_ctx[f]);
    }
#endif
}

/* __syncthreads: this thread waits until every thread of the block got here */
EXPORT void cq__emu_syncthreads(void)
{
    if (!cq__emu_fibers) return;
    fiber_state[fiber_cur] = 1;
    fiber_yield();
}

/* a vector load or store of the emulated kernels (kernels_common.j2 cq__ld4_ etc., >>grid_layout)
   at an address the GPU would refuse (a float4 needs 16 bytes of alignment): a violation, as
   compute-sanitizer reports a misaligned address */
EXPORT void cq__emu_misaligned(const void *p, int align)
{
    violation("kernel %s: a %d-byte vector access at %p, not %d-byte aligned", running_kernel ? running_kernel : "?", align, p, align);
}

/* CQ__EMU_COUNTS_ZERO of kernels.cu.j2: the launches' sort leaves its counts array 0 (>>cuda_sort_range) */
EXPORT void cq__emu_counts_left(const int *cnt, int cells)
{
    for (int i = 0; i < cells; ++i)
        if (cnt[i]) {
            violation("kernel %s: the sort's count of cell %d is %d after the scan, not 0 (the scan zeroes its range; a count outside it, or a scan that missed it)",
                      running_kernel ? running_kernel : "?", i, cnt[i]);
            return;
        }
}

/* CQ__SHFL_UP_N(x, n, o) of kernels.cu.j2: __shfl_up_sync of each of x[0..n) (n <= SHFL_N), as one
   exchange through a buffer between two barriers (the block's tile scan shuffles 8 values a
   step: one pair of barriers, not 8) */
#define SHFL_N 16
static int shfl_bufn[FIBER_MAX][SHFL_N];
EXPORT void cq__emu_shfl_up_n(int *x, int n, int o)
{
    unsigned t = fiber_cur, lane = t & 31u;
    if (n > SHFL_N) { violation("CQ__SHFL_UP_N: %d values (the mock takes %d)", n, SHFL_N); n = SHFL_N; }
    for (int i = 0; i < n; ++i) shfl_bufn[t][i] = x[i];
    cq__emu_syncthreads();
    if (lane >= (unsigned)o) for (int i = 0; i < n; ++i) x[i] = shfl_bufn[t - (unsigned)o][i];
    cq__emu_syncthreads();
}

/* __shfl_up_sync(full mask, x, o): lane l gets lane l - o's x (its own when l < o).  Through a
   buffer between two barriers, so every thread of the block must call it (the kernels do). */
EXPORT int cq__emu_shfl_up(int x, int o)
{
    unsigned t = fiber_cur, lane = t & 31u;
    int y;
    shfl_buf[t] = x;
    cq__emu_syncthreads();
    y = lane >= (unsigned)o ? shfl_buf[t - (unsigned)o] : x;
    cq__emu_syncthreads();
    return y;
}

/* The fibers of a launch: the stacks (mapped on first use and kept), the kernel and its arguments;
   0, or -1 if the stacks could not be mapped */
static int fibers_begin(const mock_func *fn, void **params)
{
    if (!fiber_stacks) {
        void *m = mmap(NULL, (size_t)FIBER_MAX * FIBER_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED) return -1;
        fiber_stacks = (char *)m;
    }
    fiber_fn = fn;
    fiber_params = params;
    return 0;
}

static unsigned fiber_tid[FIBER_MAX];       /* the fiber's thread in its block */
static unsigned char fiber_par[FIBER_MAX];  /* 1: its block runs as fibers (cq__emu_fibers: the parallel path) */

/* fiber f, ready to run thread t of its block (par: the block's parallel path) */
static void fiber_make(unsigned f, unsigned t, int par)
{
    getcontext(&fiber_ctx[f]);
    fiber_ctx[f].uc_stack.ss_sp = fiber_stacks + (size_t)f * FIBER_STACK;
    fiber_ctx[f].uc_stack.ss_size = FIBER_STACK;
    fiber_ctx[f].uc_link = &fiber_main;
    makecontext(&fiber_ctx[f], fiber_entry, 0);
    fiber_state[f] = 0;
#if !FIBER_UCONTEXT
    fiber_started[f] = 0;
#endif
    fiber_tid[f] = t;
    fiber_par[f] = (unsigned char)par;
}

/* One round of a block's fibers b .. e - 1: each that has neither returned nor waits at a grid
   barrier runs until it returns or waits at a barrier.  Returns how many wait at a __syncthreads;
   *done: how many have returned, *at: how many wait at a grid barrier. */
static unsigned fiber_round(unsigned b, unsigned e, unsigned *done, unsigned *at)
{
    unsigned waiting = 0;
    for (unsigned f = b; f < e; ++f) {
        if (fiber_state[f] >= 2) continue;
        fiber_state[f] = 0;
        fiber_cur = f;
        cq__emu_fibers = fiber_par[f];
        cq__emu_threadIdx.x = fiber_tid[f]; cq__emu_threadIdx.y = 0; cq__emu_threadIdx.z = 0;
        fiber_resume(f);
    }
    cq__emu_fibers = 0;
    *done = *at = 0;
    for (unsigned f = b; f < e; ++f) { waiting += fiber_state[f] == 1; *done += fiber_state[f] == 2; *at += fiber_state[f] == 3; }
    return waiting;
}

/* Runs the current block's nt threads (a 1-D block) as fibers, round by round: each round
   resumes every thread that has not returned until it returns or waits at a barrier.  0, or -1
   if the stacks could not be mapped. */
static int run_block_fibers(const mock_func *fn, void **params, unsigned nt)
{
    if (fibers_begin(fn, params) != 0) return -1;
    for (unsigned t = 0; t < nt; ++t) fiber_make(t, t, 1);
    for (int round = 0;; ++round) {
        unsigned done, at, waiting = fiber_round(0, nt, &done, &at);
        if (!waiting) break;
        if (done)
            violation("cuLaunchKernel(%s): block %u: barrier %d reached by %u threads while %u had returned", fn->name,
                      cq__emu_blockIdx.x, round + 1, waiting, done);
    }
    return 0;
}

static int run_grid_fibers(const mock_func *fn, void **params, unsigned gx, unsigned nt);

/* cuLaunchKernel and (coop) cuLaunchCooperativeKernel */
static CUresult launch(CUfunction fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                       unsigned bz, unsigned shared_bytes, CUstream stream, void **params, void **extra, int coop)
{
    CUresult r;
    long limit = 0;
    int block_mode;
    unsigned every = 0;
    mock_ctx *ctx;
    lock();
    if ((r = func_call_ok("cuLaunchKernel", fn)) != OK) goto out;
    ctx = current_ctx();
    if (stream && stream != (CUstream)1 && stream != (CUstream)2) {   /* NULL, CU_STREAM_LEGACY, _PER_THREAD */
        violation("cuLaunchKernel(%s): unknown stream %p", fn->name, stream);
        r = E_INVALID_HANDLE;
        goto out;
    }
    if (!gx || !gy || !gz || !bx || !by || !bz || gy > 65535 || gz > 65535 || bx > 1024 || by > 1024 || bz > 64 ||
        (unsigned long long)bx * by * bz > 1024 || shared_bytes > 49152) {
        note("cuLaunchKernel(%s): invalid configuration grid (%u,%u,%u) block (%u,%u,%u) shared %u", fn->name, gx, gy,
             gz, bx, by, bz, shared_bytes);
        r = E_INVALID_VALUE;
        goto out;
    }
    if (fn->maxntid && (unsigned long)bx * by * bz > fn->maxntid) {   /* the driver refuses it */
        violation("cuLaunchKernel(%s): a block of %u threads, over the kernel's .maxntid %lu (its __launch_bounds__)",
                  fn->name, bx * by * bz, fn->maxntid);
        r = E_INVALID_VALUE;
        goto out;
    }
    if (!params || extra) {
        violation("cuLaunchKernel(%s): %s", fn->name, params ? "`extra` is not supported by the mock" : "kernelParams is NULL");
        r = E_INVALID_VALUE;
        goto out;
    }
    for (int i = 0; i < fn->nparams; ++i) {
        alloc_rec *a;
        if (!params[i]) {
            violation("cuLaunchKernel(%s): kernelParams[%d] is NULL (the kernel has %d parameters)", fn->name, i, fn->nparams);
            r = E_INVALID_VALUE;
            goto out;
        }
        if ((a = find_mapping((const char *)params[i])) != NULL) {
            violation("cuLaunchKernel(%s): kernelParams[%d] = %p points INTO device memory (allocation 0x%llx): pass "
                      "the address of a host variable holding the argument", fn->name, i, params[i],
                      (unsigned long long)(size_t)a->base);
            r = E_INVALID_VALUE;
            goto out;
        }
    }
    for (int i = 0; i < fn->nparams; ++i) {
        int okp = 1;
        if (fn->kind[i] == P_PTR64) {
            unsigned long long v;
            memcpy(&v, params[i], 8);
            okp = check_kernel_pointer(fn, i, 0, 1, v);
        } else if (fn->kind[i] == P_STRUCT8 && ((size_t)params[i] & 7) == 0) {
            for (size_t off = 0; okp && off + 8 <= fn->size[i]; off += 8) {
                unsigned long long v;
                memcpy(&v, (const char *)params[i] + off, 8);
                okp = check_kernel_pointer(fn, i, off, 0, v);
            }
        }
        if (!okp) { r = ctx->sticky = E_ILLEGAL_ADDRESS; goto out; }
    }
    if (coop && (!fn->k->barriers || gy != 1 || gz != 1 || by != 1 || bz != 1 || gx > MOCK_SMS || fail_mode("coop", NULL))) {
        note("cuLaunchCooperativeKernel(%s): grid (%u,%u,%u) block (%u,%u,%u): %s", fn->name, gx, gy, gz, bx, by, bz,
             !fn->k->barriers ? "the mock runs only barrier kernels cooperatively" : "more blocks than the device holds at once");
        r = fn->k->barriers ? E_COOPERATIVE_TOO_LARGE : E_INVALID_VALUE;
        goto out;
    }
    if (fail_mode("launch_after", &limit) && launches_since >= limit) {
        note("cuLaunchKernel(%s): CQ_MOCK_FAIL=launch_after=%ld: injected launch failure, context now sticky", fn->name, limit);
        r = ctx->sticky = E_LAUNCH_FAILED;
        goto out;
    }
    ++launches_since;
    set_open_all(1);
    running_kernel = fn->name;
    cq__emu_blockDim.x = bx; cq__emu_blockDim.y = by; cq__emu_blockDim.z = bz;
    cq__emu_gridDim.x = gx; cq__emu_gridDim.y = gy; cq__emu_gridDim.z = gz;
    /* a barrier kernel's 1-D block: 2 as fibers (CQ_MOCK_FIBERS), 1 in its thread 0 alone */
    block_mode = fn->k->barriers && by == 1 && bz == 1 ? ((every = fibers_on()) ? 2 : 1) : 0;
    if (coop) {
        if (run_grid_fibers(fn, params, gx, bx) != 0) { note("cuLaunchCooperativeKernel(%s): no memory for the fibers", fn->name); r = E_OUT_OF_MEMORY; }
        gz = 0;   /* (the blocks ran) */
    }
    for (unsigned z = 0; z < gz; ++z)
        for (unsigned y = 0; y < gy; ++y)
            for (unsigned x = 0; x < gx; ++x) {
                cq__emu_blockIdx.x = x; cq__emu_blockIdx.y = y; cq__emu_blockIdx.z = z;
                if (block_mode == 2 && fiber_block(every, x, gx * gy * gz) && run_block_fibers(fn, params, bx) == 0) continue;
                if (block_mode) {
                    /* serial: thread 0 does the block's work (CQ__BLOCK_SERIAL), every other
                       thread returns at once, so they are not called (the gather's blocks: 127
                       calls each saved) */
                    cq__emu_threadIdx.x = 0; cq__emu_threadIdx.y = 0; cq__emu_threadIdx.z = 0;
                    fn->k->call(params);
                    continue;
                }
                for (unsigned tz = 0; tz < bz; ++tz)
                    for (unsigned ty = 0; ty < by; ++ty)
                        for (unsigned tx = 0; tx < bx; ++tx) {
                            cq__emu_threadIdx.x = tx; cq__emu_threadIdx.y = ty; cq__emu_threadIdx.z = tz;
                            fn->k->call(params);
                        }
            }
    running_kernel = NULL;
    set_open_all(0);
    ++launches;
out:
    unlock();
    return r;
}

/* Grid barriers (a cooperative launch's, cq__emu_grid_sync): every block of the grid is a set of
   fibers, its threads' (with CQ_MOCK_FIBERS, as fibers_on picks the blocks and as long as
   FIBER_MAX fibers last) or its thread 0's alone (the serial path).  Between two grid barriers the
   blocks run one after the other, each until all its threads wait at the grid barrier or have
   returned, its __syncthreads released round by round as in run_block_fibers; then the barrier
   opens for all.  The blocks run in ascending order in one launch, descending in the next: a
   block reading another's result without the barrier that orders them reads the old value in
   one of the two, whichever block's it needs.  A thread at a grid barrier while another thread of its block waits at a
   __syncthreads, or while a block has returned, is a violation (a GPU would hang). */
static int grid_fibers;                     /* 1 while a cooperative launch runs */
EXPORT void cq__emu_grid_sync(void)
{
    if (!grid_fibers) {
        violation("kernel %s: a grid barrier outside a cooperative launch (on a GPU: a hang, or a barrier that orders nothing)",
                  running_kernel ? running_kernel : "?");
        return;
    }
    fiber_state[fiber_cur] = 3;
    fiber_yield();
}

static int run_grid_fibers(const mock_func *fn, void **params, unsigned gx, unsigned nt)
{
    static unsigned launches_here;   /* even: the blocks in ascending order between barriers, odd: descending */
    const int down = (int)(launches_here++ & 1u);
    unsigned first[MOCK_SMS], nf[MOCK_SMS], used = 0, every = fibers_on(), phase = 0;
    if (fibers_begin(fn, params) != 0) return -1;
    /* the blocks that run as fibers take the first slots (each from a multiple of nt: a warp's
       lanes are 32 consecutive fibers, as the shuffles want), then a fiber for each other block */
    for (unsigned x = 0; x < gx; ++x) {
        nf[x] = every && fiber_block(every, x, gx) && nt % 32 == 0 && used + nt + gx <= FIBER_MAX ? nt : 1;
        if (nf[x] > 1) { first[x] = used; used += nt; }
    }
    for (unsigned x = 0; x < gx; ++x) if (nf[x] == 1) first[x] = used++;
    for (unsigned x = 0; x < gx; ++x)
        for (unsigned t = 0; t < nf[x]; ++t) fiber_make(first[x] + t, t, nf[x] > 1);
    grid_fibers = 1;
    for (;; ++phase) {
        unsigned at_grid = 0, returned_blocks = 0;
        for (unsigned i = 0; i < gx; ++i) {
            const unsigned x = down ? gx - 1 - i : i;
            unsigned waiting, done, at;
            cq__emu_blockIdx.x = x; cq__emu_blockIdx.y = 0; cq__emu_blockIdx.z = 0;
            for (;;) {
                waiting = fiber_round(first[x], first[x] + nf[x], &done, &at);
                if (!waiting) break;
                if (done || at) {
                    violation("cuLaunchCooperativeKernel(%s): block %u: a __syncthreads reached by %u threads while %u had returned "
                              "and %u wait at a grid barrier", fn->name, x, waiting, done, at);
                    grid_fibers = 0;
                    return 0;   /* (its fibers are abandoned: the kernel's results are wrong, the test fails) */
                }
            }
            if (at && done)
                violation("cuLaunchCooperativeKernel(%s): block %u: %u threads at grid barrier %u while %u had returned", fn->name, x,
                          at, phase + 1, done);
            at_grid += at > 0;
            returned_blocks += at == 0;
        }
        if (!at_grid) break;
        if (returned_blocks) {
            violation("cuLaunchCooperativeKernel(%s): grid barrier %u reached by %u blocks while %u had returned", fn->name,
                      phase + 1, at_grid, returned_blocks);
            break;
        }
        for (unsigned f = 0; f < used; ++f) if (fiber_state[f] == 3) fiber_state[f] = 0;
    }
    grid_fibers = 0;
    return 0;
}

EXPORT CUresult cuLaunchKernel(CUfunction fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                               unsigned bz, unsigned shared_bytes, CUstream stream, void **params, void **extra)
{
    return launch(fn, gx, gy, gz, bx, by, bz, shared_bytes, stream, params, extra, 0);
}

/* A cooperative launch: every block resident at once (at most MOCK_SMS blocks: one an SM, as
   cuOccupancyMaxActiveBlocksPerMultiprocessor says), so a kernel may wait at grid barriers
   (cq__emu_grid_sync) for every other block; run by run_grid_fibers. */
EXPORT CUresult cuLaunchCooperativeKernel(CUfunction fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                          unsigned bz, unsigned shared_bytes, CUstream stream, void **params)
{
    return launch(fn, gx, gy, gz, bx, by, bz, shared_bytes, stream, params, NULL, 1);
}

/* ------------------------------------------------------------------ memory */
EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *ptr, size_t bytes)
{
    CUresult r;
    long limit = 0;
    lock();
    if ((r = need_ctx()) != OK) goto out;
    if (!ptr || bytes == 0) { r = E_INVALID_VALUE; goto out; }
    if (fail_mode("oom", NULL) || (fail_mode("oom_after", &limit) && allocs_since >= limit) ||
        bytes > MOCK_TOTAL_MEM - live_bytes) {
        r = E_OUT_OF_MEMORY;
        goto out;
    }
    {
        /* the guard region after the block: as long as the block (one page at least), so that a
           kernel striding past the end (a layout's node stride larger than its allocation's) lands
           in it, not in the next mapping (address space alone: never opened, never touched) */
        size_t prot_len = (bytes + page - 1) / page * page, map_len = 2 * prot_len;
        char *b = (char *)mmap(NULL, map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (b == MAP_FAILED) { r = E_OUT_OF_MEMORY; goto out; }
        if (n_allocs == cap_allocs) {
            int nc = cap_allocs ? cap_allocs * 2 : 64;
            alloc_rec *na = (alloc_rec *)realloc(allocs, (size_t)nc * sizeof *na);
            if (!na) { munmap(b, map_len); r = E_OUT_OF_MEMORY; goto out; }
            allocs = na;
            cap_allocs = nc;
        }
        allocs[n_allocs].base = b + prot_len - (bytes + 255) / 256 * 256;   /* the block's end at the guard region */
        allocs[n_allocs].map = b;
        memset(allocs[n_allocs].base, 0xff, bytes);   /* device memory is not zeroed: poison it */
        mprotect(b + prot_len, prot_len, PROT_NONE);  /* the guard region, never opened */
#ifdef PKEY_DISABLE_ACCESS
        if (dev_pkey() >= 0 && pkey_mprotect(b, prot_len, PROT_READ | PROT_WRITE, mock_pkey) != 0) {
            munmap(b, map_len);
            r = E_OUT_OF_MEMORY;
            goto out;
        }
#endif
        forget_freed(b, map_len);
        allocs[n_allocs].size = bytes;
        allocs[n_allocs].prot_len = prot_len;
        allocs[n_allocs].map_len = map_len;
        allocs[n_allocs].open = 1;
        set_open(&allocs[n_allocs], 0);
        ++n_allocs;
        live_bytes += bytes;
        ++allocs_since; ++allocs_total;
        *ptr = (CUdeviceptr)(size_t)allocs[n_allocs - 1].base;
    }
out:
    unlock();
    return r;
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr ptr)
{
    CUresult r;
    int i;
    lock();
    if ((r = need_ctx()) != OK) goto out;
    if (ptr == 0) goto out;
    for (i = 0; i < n_allocs; ++i)
        if ((CUdeviceptr)(size_t)allocs[i].base == ptr) break;
    if (i == n_allocs) {
        char *fb;
        size_t fs;
        alloc_rec *a = find_mapping((const char *)(size_t)ptr);
        if (a)
            violation("cuMemFree_v2: 0x%llx is inside allocation 0x%llx (offset %zu), not its base", ptr,
                      (unsigned long long)(size_t)a->base, (size_t)((const char *)(size_t)ptr - a->base));
        else if (find_freed((const char *)(size_t)ptr, &fb, &fs) && (CUdeviceptr)(size_t)fb == ptr)
            violation("cuMemFree_v2: 0x%llx was already freed (double free)", ptr);
        else
            violation("cuMemFree_v2: 0x%llx is not a device allocation", ptr);
        r = E_INVALID_VALUE;
        goto out;
    }
    free_alloc_at(i);
out:
    unlock();
    return r;
}

EXPORT CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total_bytes)
{
    CUresult r;
    lock();
    if ((r = need_ctx()) == OK) {
        if (!free_bytes || !total_bytes) r = E_INVALID_VALUE;
        else { *free_bytes = MOCK_TOTAL_MEM - live_bytes; *total_bytes = MOCK_TOTAL_MEM; }
    }
    unlock();
    return r;
}

EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t bytes)
{
    CUresult r;
    alloc_rec *a;
    lock();
    if ((r = need_ctx()) != OK) goto out;
    if (!(a = check_range("cuMemcpyHtoD_v2", "dst", dst, bytes)) || !check_host("cuMemcpyHtoD_v2", "src", src, bytes)) {
        r = E_INVALID_VALUE;
        goto out;
    }
    copied += bytes;
    if (bytes) {
        set_open(a, 1);
        memcpy((void *)(size_t)dst, src, bytes);
        set_open(a, 0);
    }
out:
    unlock();
    return r;
}

EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t bytes)
{
    CUresult r;
    alloc_rec *a;
    lock();
    if ((r = need_ctx()) != OK) goto out;
    if (!(a = check_range("cuMemcpyDtoH_v2", "src", src, bytes)) || !check_host("cuMemcpyDtoH_v2", "dst", dst, bytes)) {
        r = E_INVALID_VALUE;
        goto out;
    }
    ++readbacks;
    copied += bytes;
    if (bytes) {
        set_open(a, 1);
        memcpy(dst, (const void *)(size_t)src, bytes);
        set_open(a, 0);
    }
out:
    unlock();
    return r;
}

EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t bytes)
{
    CUresult r;
    alloc_rec *a, *b;
    lock();
    if ((r = need_ctx()) != OK) goto out;
    if (!(a = check_range("cuMemcpyDtoD_v2", "dst", dst, bytes)) || !(b = check_range("cuMemcpyDtoD_v2", "src", src, bytes))) {
        r = E_INVALID_VALUE;
        goto out;
    }
    if (bytes && dst < src + bytes && src < dst + bytes) {
        violation("cuMemcpyDtoD_v2: overlapping ranges dst 0x%llx, src 0x%llx, %zu bytes", dst, src, bytes);
        r = E_INVALID_VALUE;
        goto out;
    }
    if (bytes) {
        set_open(a, 1); set_open(b, 1);
        memcpy((void *)(size_t)dst, (const void *)(size_t)src, bytes);
        set_open(a, 0); set_open(b, 0);
    }
out:
    unlock();
    return r;
}

EXPORT CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char value, size_t count)
{
    CUresult r;
    alloc_rec *a;
    lock();
    if ((r = need_ctx()) != OK) goto out;
    if (!(a = check_range("cuMemsetD8_v2", "dst", dst, count))) { r = E_INVALID_VALUE; goto out; }
    if (count) {
        set_open(a, 1);
        memset((void *)(size_t)dst, value, count);
        set_open(a, 0);
    }
out:
    unlock();
    return r;
}

EXPORT CUresult cuMemsetD32_v2(CUdeviceptr dst, unsigned value, size_t count)
{
    CUresult r;
    alloc_rec *a;
    lock();
    if ((r = need_ctx()) != OK) goto out;
    if (dst & 3) {
        violation("cuMemsetD32_v2: dst 0x%llx is not 4-byte aligned", dst);
        r = E_INVALID_VALUE;
        goto out;
    }
    if (count > ((size_t)-1) / 4 || !(a = check_range("cuMemsetD32_v2", "dst", dst, count * 4))) {
        if (count > ((size_t)-1) / 4) violation("cuMemsetD32_v2 out of bounds: count %zu overflows", count);
        r = E_INVALID_VALUE;
        goto out;
    }
    if (count) {
        unsigned *p = (unsigned *)(size_t)dst;
        set_open(a, 1);
        for (size_t i = 0; i < count; ++i) p[i] = value;
        set_open(a, 0);
    }
out:
    unlock();
    return r;
}

/* ------------------------------------------------------------------ test hooks */
/* each counter read under the lock */
#define MOCK_COUNTER(type, name, expr) \
    EXPORT type name(void) { type n; lock(); n = (expr); unlock(); return n; }
MOCK_COUNTER(int, cq_mock_live_allocations, n_allocs)
MOCK_COUNTER(size_t, cq_mock_live_bytes, live_bytes)
MOCK_COUNTER(long, cq_mock_launches, launches)
MOCK_COUNTER(long, cq_mock_readbacks, readbacks)
MOCK_COUNTER(size_t, cq_mock_copied_bytes, copied)
MOCK_COUNTER(int, cq_mock_allocs, (int)allocs_total)
MOCK_COUNTER(int, cq_mock_violations, violations)
MOCK_COUNTER(int, cq_mock_live_modules, n_modules)
MOCK_COUNTER(int, cq_mock_ctx_refs, primary ? primary->refs : 0)

EXPORT int cq_mock_ctx_depth(void) { return ctx_depth; }

EXPORT void cq_mock_reset_faults(void)
{
    lock();
    allocs_since = launches_since = 0;
    unlock();
}
