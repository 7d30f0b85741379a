/* mock_selftest.c: checks the CUDA driver mock (tests/gpu/mock_libcuda.c) itself.
   Build: cc -std=c99 -Wall -Wextra -Werror -o build/mock/mock_selftest tests/gpu/mock_selftest.c -ldl
   Run:   build/mock/mock_selftest [path/to/libcuda.so.1]   (default build/mock/libcuda.so.1)
   Prints "mock_selftest: N passed, M failed"; exit status 1 on any failure. */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef void *CUcontext, *CUmodule, *CUfunction, *CUstream;

static struct {
    CUresult (*Init)(unsigned);
    CUresult (*DriverGetVersion)(int *);
    CUresult (*GetErrorName)(CUresult, const char **);
    CUresult (*GetErrorString)(CUresult, const char **);
    CUresult (*DeviceGetCount)(int *);
    CUresult (*DeviceGet)(CUdevice *, int);
    CUresult (*DeviceGetName)(char *, int, CUdevice);
    CUresult (*DeviceGetAttribute)(int *, int, CUdevice);
    CUresult (*DeviceTotalMem)(size_t *, CUdevice);
    CUresult (*PrimaryCtxRetain)(CUcontext *, CUdevice);
    CUresult (*PrimaryCtxRelease)(CUdevice);
    CUresult (*CtxPush)(CUcontext);
    CUresult (*CtxPop)(CUcontext *);
    CUresult (*CtxSynchronize)(void);
    CUresult (*ModuleLoadDataEx)(CUmodule *, const void *, unsigned, int *, void **);
    CUresult (*ModuleUnload)(CUmodule);
    CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
    CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                             void **, void **);
    CUresult (*LaunchCooperativeKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                        CUstream, void **);
    CUresult (*MemAlloc)(CUdeviceptr *, size_t);
    CUresult (*MemFree)(CUdeviceptr);
    CUresult (*MemGetInfo)(size_t *, size_t *);
    CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
    CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
    CUresult (*MemcpyDtoD)(CUdeviceptr, CUdeviceptr, size_t);
    CUresult (*MemsetD8)(CUdeviceptr, unsigned char, size_t);
    CUresult (*MemsetD32)(CUdeviceptr, unsigned, size_t);
    int (*live_allocations)(void);
    long (*launches)(void);
    int (*violations)(void);
    int (*live_modules)(void);
    int (*ctx_refs)(void);
    int (*ctx_depth)(void);
} cu;

static int passed, failed;
#define CHECK(cond) do { if (cond) ++passed; else { ++failed; fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); } } while (0)
#define EQ(a, b) do { long long a_ = (long long)(a), b_ = (long long)(b); if (a_ == b_) ++passed; else { ++failed; \
    fprintf(stderr, "FAIL %s:%d: %s == %lld, expected %s == %lld\n", __FILE__, __LINE__, #a, a_, #b, b_); } } while (0)

static void *sym(void *lib, const char *name)
{
    void *p = dlsym(lib, name);
    if (!p) { fprintf(stderr, "mock_selftest: %s lacks %s\n", "the mock", name); exit(2); }
    return p;
}
#define LOAD(field, name) { void *p_ = sym(lib, name); memcpy(&cu.field, &p_, sizeof p_); }

static const char fake_ptx[] =
    "//\n// mock_selftest: a fake PTX module\n//\n.version 9.0\n.target sm_75\n.address_size 64\n\n"
    ".visible .entry cq__act_sum_2d_f32_kernel(\n"
    "\t.param .u32 cq__act_sum_2d_f32_kernel_param_0,\n"
    "\t.param .u64 cq__act_sum_2d_f32_kernel_param_1,\n"
    "\t.param .u64 cq__act_sum_2d_f32_kernel_param_2,\n"
    "\t.param .u64 cq__act_sum_2d_f32_kernel_param_3\n"
    ")\n{\n\tret;\n}\n"
    ".visible .entry cq__act_reduce_2d_f32_kernel(\n"   /* launch bounds: __launch_bounds__(64) */
    "\t.param .u32 cq__act_reduce_2d_f32_kernel_param_0,\n"
    "\t.param .u64 cq__act_reduce_2d_f32_kernel_param_1,\n"
    "\t.param .u64 cq__act_reduce_2d_f32_kernel_param_2,\n"
    "\t.param .u64 cq__act_reduce_2d_f32_kernel_param_3,\n"
    "\t.param .u64 cq__act_reduce_2d_f32_kernel_param_4\n"
    ")\n.maxntid 64, 1, 1\n{\n\tret;\n}\n"
    ".visible .entry not_a_table_kernel(\n)\n{\n\tret;\n}\n";

static void setfail(const char *mode)
{
    if (mode) setenv("CQ_MOCK_FAIL", mode, 1);
    else unsetenv("CQ_MOCK_FAIL");
}

static void *touch_device(void *p)   /* a thread of the host reading device memory */
{
    volatile int *q = (volatile int *)p;
    return (void *)(size_t)(*q == 12345);
}

/* 1 if a child process doing `what` dies of SIGSEGV: 0 the host reads d, 1 another thread of the
   host reads d, 2 act_sum (fn, args) launched over first[0 .. 200] (804 bytes of the 12 at args[1]) */
static int child_dies_of_segv(int what, CUdeviceptr d, CUfunction fn, void **args)
{
    pid_t pid;
    int status = 0;
    fflush(NULL);
    pid = fork();
    if (pid == 0) {
        if (what == 0) {
            volatile int *p = (volatile int *)(size_t)d;
            _exit(*p == 12345 ? 3 : 0);                        /* not reached */
        }
        if (what == 1) {
            pthread_t th;
            if (pthread_create(&th, NULL, touch_device, (void *)(size_t)d) == 0) pthread_join(th, NULL);
        } else {
            int many = 200;
            args[0] = &many;
            cu.LaunchKernel(fn, 7, 1, 1, 128, 1, 1, 0, NULL, args, NULL);
        }
        _exit(4);                                              /* not reached */
    }
    if (pid < 0) return 0;
    waitpid(pid, &status, 0);
    return WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV;
}

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "build/mock/libcuda.so.1";
    void *lib;
    const char *s = NULL;
    int v = 0, count = -1, major = -1, minor = -1;
    size_t total = 0, freeb = 0;
    char name[64], log[256];
    CUdevice dev = -1;
    CUcontext ctx = NULL, popped = NULL;
    CUmodule mod = NULL;
    CUfunction fn = NULL, fn2 = NULL;
    CUdeviceptr d_act = 0, d_dact = 0, d_out = 0, d_tmp = 0;
    int act[3] = {0, 1, 2}, groups = 2, opts[2];   /* act_sum's first[]: group g's chunks first[g] .. first[g + 1] */
    double dact[12];                               /* its chunk sums: 3 chunks of 4 (the last in no group) */
    double out[8];
    void *vals[2], *args[5];
    int viol;

    unsetenv("CQ_MOCK_FAIL");
    lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) { fprintf(stderr, "mock_selftest: cannot load %s: %s\n", path, dlerror()); return 2; }
    LOAD(Init, "cuInit") LOAD(DriverGetVersion, "cuDriverGetVersion") LOAD(GetErrorName, "cuGetErrorName")
    LOAD(GetErrorString, "cuGetErrorString") LOAD(DeviceGetCount, "cuDeviceGetCount") LOAD(DeviceGet, "cuDeviceGet")
    LOAD(DeviceGetName, "cuDeviceGetName") LOAD(DeviceGetAttribute, "cuDeviceGetAttribute")
    LOAD(DeviceTotalMem, "cuDeviceTotalMem_v2") LOAD(PrimaryCtxRetain, "cuDevicePrimaryCtxRetain")
    LOAD(PrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2") LOAD(CtxPush, "cuCtxPushCurrent_v2")
    LOAD(CtxPop, "cuCtxPopCurrent_v2") LOAD(CtxSynchronize, "cuCtxSynchronize")
    LOAD(ModuleLoadDataEx, "cuModuleLoadDataEx") LOAD(ModuleUnload, "cuModuleUnload")
    LOAD(ModuleGetFunction, "cuModuleGetFunction") LOAD(LaunchKernel, "cuLaunchKernel")
    LOAD(LaunchCooperativeKernel, "cuLaunchCooperativeKernel") LOAD(MemAlloc, "cuMemAlloc_v2")
    LOAD(MemFree, "cuMemFree_v2") LOAD(MemGetInfo, "cuMemGetInfo_v2") LOAD(MemcpyHtoD, "cuMemcpyHtoD_v2")
    LOAD(MemcpyDtoH, "cuMemcpyDtoH_v2") LOAD(MemcpyDtoD, "cuMemcpyDtoD_v2") LOAD(MemsetD8, "cuMemsetD8_v2")
    LOAD(MemsetD32, "cuMemsetD32_v2")
    /* the test hooks, found the way the tests find them */
    {
        void *again = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
        CHECK(again == lib);
        LOAD(live_allocations, "cq_mock_live_allocations") LOAD(launches, "cq_mock_launches")
        LOAD(violations, "cq_mock_violations") LOAD(live_modules, "cq_mock_live_modules")
        LOAD(ctx_refs, "cq_mock_ctx_refs") LOAD(ctx_depth, "cq_mock_ctx_depth")
        if (again) dlclose(again);
    }

    /* errors, init, device */
    EQ(cu.GetErrorName(2, &s), 0); CHECK(s && strcmp(s, "CUDA_ERROR_OUT_OF_MEMORY") == 0);
    EQ(cu.GetErrorName(719, &s), 0); CHECK(s && strcmp(s, "CUDA_ERROR_LAUNCH_FAILED") == 0);
    EQ(cu.GetErrorString(201, &s), 0); CHECK(s && *s);
    EQ(cu.GetErrorName(12345, &s), 1);
    fprintf(stderr, "mock_selftest: the lines of mock_libcuda errors below are expected\n");
    EQ(cu.DeviceGetCount(&count), 3);                 /* before cuInit */
    EQ(cu.Init(0), 0);
    EQ(cu.DriverGetVersion(&v), 0); EQ(v, 13000);
    EQ(cu.DeviceGetCount(&count), 0); EQ(count, 1);
    EQ(cu.DeviceGet(&dev, 0), 0); EQ(dev, 0);
    EQ(cu.DeviceGet(&dev, 1), 101);
    EQ(cu.DeviceGetName(name, (int)sizeof name, 0), 0); CHECK(strcmp(name, "Mock GPU (CPU emulation)") == 0);
    EQ(cu.DeviceGetAttribute(&major, 75, 0), 0); EQ(major, 9);
    EQ(cu.DeviceGetAttribute(&minor, 76, 0), 0); EQ(minor, 0);
    EQ(cu.DeviceTotalMem(&total, 0), 0); EQ(total, (size_t)8 << 30);

    /* no current context */
    EQ(cu.MemAlloc(&d_tmp, 16), 201);
    EQ(cu.CtxSynchronize(), 201);
    viol = cu.violations();
    EQ(cu.CtxPop(&popped), 201);                      /* pop without push */
    EQ(cu.violations(), viol + 1);

    /* a program may create and destroy a context many times (one sim after another): 300 times,
       more than the mock's static pool; a destroyed one's handle is refused */
    {
        CUcontext first = NULL;
        int cycles = 0;   /* (one check for the 300, not 900) */
        for (int k = 0; k < 300; ++k) {
            if (cu.PrimaryCtxRetain(&ctx, 0) != 0 || !ctx) break;
            if (k == 0) first = ctx;
            if (cu.PrimaryCtxRelease(0) != 0) break;
            ++cycles;
        }
        EQ(cycles, 300);
        EQ(cu.CtxPush(first), 201);   /* destroyed */
        EQ(cu.CtxPush(ctx), 201);     /* the last, from the heap: destroyed too */
        EQ(cu.ctx_refs(), 0);
    }
    EQ(cu.PrimaryCtxRetain(&ctx, 0), 0); CHECK(ctx != NULL);
    EQ(cu.ctx_refs(), 1);
    EQ(cu.CtxPush(ctx), 0); EQ(cu.ctx_depth(), 1);
    EQ(cu.CtxSynchronize(), 0);

    /* modules */
    opts[0] = 5; vals[0] = log; opts[1] = 6; vals[1] = (void *)sizeof log; log[0] = 0;
    EQ(cu.ModuleLoadDataEx(&mod, "\x7f" "ELF not ptx", 2, opts, vals), 200); CHECK(log[0] != 0);
    vals[1] = (void *)sizeof log;
    EQ(cu.ModuleLoadDataEx(&mod, ".version 9.9\n.target sm_75\n", 2, opts, vals), 222);
    vals[1] = (void *)sizeof log;
    EQ(cu.ModuleLoadDataEx(&mod, ".version 9.0\n.target sm_100\n", 2, opts, vals), 218);
    vals[1] = (void *)sizeof log; log[0] = 0;
    EQ(cu.ModuleLoadDataEx(&mod, fake_ptx, 2, opts, vals), 0); EQ(log[0], 0);
    EQ(cu.live_modules(), 1);
    EQ(cu.ModuleGetFunction(&fn, mod, "cq__act_sum_2d_f32_kernel"), 0); CHECK(fn != NULL);
    EQ(cu.ModuleGetFunction(&fn2, mod, "cq__act_sum_2d_f32_kernel"), 0); CHECK(fn2 == fn);
    EQ(cu.ModuleGetFunction(&fn2, mod, "cq__grid_fwd_2d_f32_kernel"), 500);   /* in a table, not in the PTX */
    EQ(cu.ModuleGetFunction(&fn2, mod, "not_a_table_kernel"), 500);          /* in the PTX, not in a table */
    EQ(cu.ModuleGetFunction(&fn2, mod, "cq__act_sum_2d_f32"), 500);       /* a prefix is not a name */

    /* memory and a real launch */
    for (int i = 0; i < 12; ++i) dact[i] = (double)(i + 1);
    EQ(cu.MemAlloc(&d_act, sizeof act), 0);
    EQ(cu.MemAlloc(&d_dact, sizeof dact), 0);
    EQ(cu.MemAlloc(&d_out, sizeof out), 0);
    EQ(cu.MemAlloc(&d_tmp, 0), 1);
    EQ(cu.live_allocations(), 3);
    EQ(cu.MemGetInfo(&freeb, &total), 0); EQ(total - freeb, sizeof act + sizeof dact + sizeof out);
    EQ(cu.MemcpyHtoD(d_act, act, sizeof act), 0);
    EQ(cu.MemcpyHtoD(d_dact, dact, sizeof dact), 0);
    EQ(cu.MemsetD8(d_out, 0, sizeof out), 0);
    args[0] = &groups; args[1] = &d_act; args[2] = &d_dact; args[3] = &d_out;
    {
        long before = cu.launches();
        EQ(cu.LaunchKernel(fn, 1, 1, 1, 128, 1, 1, 0, NULL, args, NULL), 0);
        EQ(cu.LaunchKernel(fn, 4, 1, 1, 2, 1, 1, 0, NULL, args, NULL), 0);    /* 8 threads: adds again */
        EQ(cu.launches(), before + 2);
        EQ(cu.LaunchKernel(fn, 1, 1, 1, 2048, 1, 1, 0, NULL, args, NULL), 1);
        EQ(cu.LaunchKernel(fn, 1, 1, 1, 64, 32, 1, 0, NULL, args, NULL), 1);
        EQ(cu.LaunchKernel(fn, 1, 1, 1, 128, 1, 1, 0, NULL, NULL, NULL), 1);
        EQ(cu.LaunchKernel(NULL, 1, 1, 1, 128, 1, 1, 0, NULL, args, NULL), 400);
        /* cooperative launches: of barrier kernels alone (the cooperative sort), on a device that
           says it runs them (attribute 95) */
        EQ(cu.LaunchCooperativeKernel(fn, 1, 1, 1, 128, 1, 1, 0, NULL, args), 1);
        EQ(cu.DeviceGetAttribute(&v, 95, 0), 0); EQ(v, 1);
        EQ(cu.launches(), before + 2);
    }
    {   /* a block over the kernel's .maxntid (its launch bounds): refused, as the driver refuses it */
        CUfunction fr;
        long before = cu.launches();
        int vb = cu.violations();
        EQ(cu.ModuleGetFunction(&fr, mod, "cq__act_reduce_2d_f32_kernel"), 0);
        EQ(cu.LaunchKernel(fr, 1, 1, 1, 128, 1, 1, 0, NULL, args, NULL), 1);
        EQ(cu.LaunchKernel(fr, 1, 1, 1, 32, 4, 1, 0, NULL, args, NULL), 1);   /* 128 threads in two dimensions */
        EQ(cu.violations(), vb + 2);
        EQ(cu.launches(), before);
    }
    memset(out, 0, sizeof out);
    EQ(cu.MemcpyDtoH(out, d_out, sizeof out), 0);
    for (int a = 0; a < 4; ++a) {
        EQ(out[a] * 2, dact[a] * 4);          /* chunk 0 -> group 0, twice */
        EQ(out[4 + a] * 2, dact[4 + a] * 4);  /* chunk 1 -> group 1; chunk 2 is in none */
    }
    EQ(cu.MemcpyDtoD(d_out, d_out + 32, 32), 0);   /* group 1 over group 0 */
    EQ(cu.MemcpyDtoH(out, d_out, 8), 0); EQ(out[0], 2.0 * dact[4]);
    EQ(cu.MemsetD32(d_act, 0xffffffffu, 3), 0);
    EQ(cu.MemcpyDtoH(act, d_act, sizeof act), 0); EQ(act[0], -1); EQ(act[2], -1);

    /* violations: out of bounds, wrong pointers, bad kernel arguments */
    viol = cu.violations();
    EQ(cu.MemcpyHtoD(d_act, act, sizeof act + 1), 1);
    EQ(cu.MemcpyHtoD(d_act + 4, act, sizeof act), 1);
    EQ(cu.MemcpyDtoH(out, d_out + 60, 8), 1);
    EQ(cu.MemcpyDtoH(out, d_out - 8, 8), 1);
    EQ(cu.MemcpyDtoD(d_out, d_act, sizeof out), 1);           /* src is 12 bytes */
    EQ(cu.MemcpyDtoD(d_out, d_out + 8, 16), 1);               /* overlap */
    EQ(cu.MemsetD8(d_act, 0, sizeof act + 1), 1);
    EQ(cu.MemsetD32(d_act, 0, 4), 1);
    EQ(cu.MemsetD32(d_act + 1, 0, 1), 1);                     /* unaligned */
    EQ(cu.MemcpyHtoD(d_out, (const void *)(size_t)d_dact, 8), 1);   /* "host" source is device memory */
    EQ(cu.MemcpyDtoH((void *)(size_t)d_dact, d_out, 8), 1);
    EQ(cu.MemFree(d_act + 4), 1);                             /* interior pointer */
    EQ(cu.MemFree(0x1000), 1);                                /* unknown */
    args[1] = (void *)(size_t)d_act;                          /* the device pointer itself, not its address */
    EQ(cu.LaunchKernel(fn, 1, 1, 1, 128, 1, 1, 0, NULL, args, NULL), 1);
    args[1] = &d_act;
    EQ(cu.violations(), viol + 14);
    EQ(cu.live_allocations(), 3);

    /* the host must never read device memory: a child that does dies of SIGSEGV; nor may another
       thread (the mock's protection keys are per thread: each starts closed); and a kernel reading
       past the end of its allocation faults in the guard region, however the launch opened device
       memory (a key, or each allocation as it is first touched) */
    CHECK(child_dies_of_segv(0, d_act, fn, args));
    CHECK(child_dies_of_segv(1, d_act, fn, args));
    CHECK(child_dies_of_segv(2, d_act, fn, args));

    EQ(cu.MemFree(d_act), 0);
    EQ(cu.MemFree(d_act), 1);                                 /* double free */
    {   /* a kernel given a host or freed pointer: illegal address, and the context is sticky */
        int host_act[3] = {0, 0, 0};
        void *hp = host_act;
        viol = cu.violations();
        args[1] = &hp;
        EQ(cu.LaunchKernel(fn, 1, 1, 1, 128, 1, 1, 0, NULL, args, NULL), 700);
        EQ(cu.violations(), viol + 1);
        EQ(cu.MemcpyDtoH(out, d_out, 8), 700);
        EQ(cu.CtxSynchronize(), 700);
        args[1] = &d_act;
    }
    EQ(cu.MemFree(d_dact), 700);                              /* sticky: the host cannot free ... */
    EQ(cu.ModuleUnload(mod), 700);
    EQ(cu.CtxPop(&popped), 0); CHECK(popped == ctx); EQ(cu.ctx_depth(), 0);
    EQ(cu.PrimaryCtxRelease(0), 0);                           /* ... releasing the context frees it */
    EQ(cu.ctx_refs(), 0);
    EQ(cu.live_allocations(), 0);
    EQ(cu.live_modules(), 0);
    viol = cu.violations();
    EQ(cu.PrimaryCtxRelease(0), 201);                         /* over-release */
    EQ(cu.violations(), viol + 1);
    EQ(cu.CtxPush(ctx), 201);                                 /* a destroyed context */

    /* a fresh context: clean */
    EQ(cu.PrimaryCtxRetain(&ctx, 0), 0);
    EQ(cu.CtxPush(ctx), 0);
    EQ(cu.MemAlloc(&d_out, sizeof out), 0);
    EQ(cu.MemsetD8(d_out, 0, sizeof out), 0);
    EQ(cu.ModuleLoadDataEx(&mod, fake_ptx, 0, NULL, NULL), 0);
    EQ(cu.ModuleGetFunction(&fn, mod, "cq__act_sum_2d_f32_kernel"), 0);
    EQ(cu.MemAlloc(&d_act, sizeof act), 0);
    EQ(cu.MemAlloc(&d_dact, sizeof dact), 0);

    /* fault injection */
    setfail("init");     EQ(cu.Init(0), 100);
    setfail("nodevice"); EQ(cu.Init(0), 0); EQ(cu.DeviceGetCount(&count), 0); EQ(count, 0); EQ(cu.DeviceGet(&dev, 0), 101);
    setfail("oldriver"); EQ(cu.DriverGetVersion(&v), 0); EQ(v, 11080);
    setfail("ptx");
    vals[1] = (void *)sizeof log; log[0] = 0;
    {
        CUmodule m2 = NULL;
        EQ(cu.ModuleLoadDataEx(&m2, fake_ptx, 2, opts, vals), 218);
        CHECK(strcmp(log, "ptxas fatal: mock rejects this PTX") == 0);
    }
    setfail("oom");      EQ(cu.MemAlloc(&d_tmp, 8), 2);
    setfail("oom_after=2");
    {
        CUdeviceptr a = 0, b = 0;
        EQ(cu.MemAlloc(&a, 8), 0); EQ(cu.MemAlloc(&b, 8), 0); EQ(cu.MemAlloc(&d_tmp, 8), 2); EQ(cu.MemAlloc(&d_tmp, 8), 2);
        EQ(cu.MemFree(a), 0); EQ(cu.MemFree(b), 0);
    }
    setfail(NULL);       EQ(cu.MemAlloc(&d_tmp, 8), 0); EQ(cu.MemFree(d_tmp), 0);
    setfail("launch_after=1");
    EQ(cu.MemcpyHtoD(d_act, act, sizeof act), 0);
    EQ(cu.MemcpyHtoD(d_dact, dact, sizeof dact), 0);
    EQ(cu.LaunchKernel(fn, 1, 1, 1, 128, 1, 1, 0, NULL, args, NULL), 0);
    EQ(cu.LaunchKernel(fn, 1, 1, 1, 128, 1, 1, 0, NULL, args, NULL), 719);
    EQ(cu.LaunchKernel(fn, 1, 1, 1, 128, 1, 1, 0, NULL, args, NULL), 719);
    EQ(cu.MemcpyDtoH(out, d_out, 8), 719);
    EQ(cu.MemAlloc(&d_tmp, 8), 719);
    EQ(cu.CtxSynchronize(), 719);
    setfail(NULL);
    EQ(cu.MemsetD8(d_out, 0, 8), 719);                        /* still sticky with the variable gone */
    EQ(cu.CtxPop(&popped), 0);
    EQ(cu.PrimaryCtxRelease(0), 0);
    EQ(cu.live_allocations(), 0);
    EQ(cu.live_modules(), 0);

    /* and clean again, no leaks left by a well-behaved session */
    EQ(cu.PrimaryCtxRetain(&ctx, 0), 0);
    EQ(cu.CtxPush(ctx), 0);
    EQ(cu.MemAlloc(&d_tmp, 100), 0);
    EQ(cu.MemsetD32(d_tmp, 7, 25), 0);
    EQ(cu.MemFree(d_tmp), 0);
    EQ(cu.CtxPop(&popped), 0);
    EQ(cu.PrimaryCtxRelease(0), 0);
    EQ(cu.live_allocations(), 0);
    EQ(cu.ctx_refs(), 0);

    printf("mock_selftest: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
