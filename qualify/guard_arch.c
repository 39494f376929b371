/* guard_arch.c: which architecture is this (qf_guard.h)?
 *
 * GPUs are asked through their runtime loaded with dlopen, so the guard
 * library links neither libcudart nor libamdhip64: a build with the back
 * end (QF_HAVE_CUDA / QF_HAVE_HIP, the macros the back ends define) asks
 * the runtime when it is installed and answers "cpu" when it is not. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "_cpu_isa.h"
#include "qf_guard.h"

#if defined(QF_HAVE_CUDA)
/* cudaDeviceGetAttribute with cudaDevAttrComputeCapabilityMajor (75) and
 * ...Minor (76): plain ints, so no header struct layout is needed. */
static int cuda_arch(char *buf, size_t size)
{
    static const char *libs[] = {"libcudart.so", "libcudart.so.12", "libcudart.so.11.0"};
    typedef int (*count_fn)(int *);
    typedef int (*attr_fn)(int *, int, int);
    void *h = NULL;
    size_t i;
    int n = 0, major = 0, minor = 0, ok = 0;
    for (i = 0; i < sizeof libs / sizeof libs[0] && !h; i++)
        h = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return 0;
    {
        count_fn count = (count_fn)dlsym(h, "cudaGetDeviceCount");
        attr_fn attr = (attr_fn)dlsym(h, "cudaDeviceGetAttribute");
        if (count && attr && count(&n) == 0 && n > 0 && attr(&major, 75, 0) == 0 &&
            attr(&minor, 76, 0) == 0) {
            snprintf(buf, size, "sm_%d%d", major, minor);
            ok = 1;
        }
    }
    dlclose(h);
    return ok;
}
#endif

#if defined(QF_HAVE_HIP)
#include <hip/hip_runtime_api.h>
/* hipGetDeviceProperties fills gcnArchName ("gfx90a:sramecc+:xnack-"),
 * trimmed at the first ':'.  The struct comes from the header this was
 * built with, the function from the runtime found at run time. */
static int hip_arch(char *buf, size_t size)
{
    typedef hipError_t (*count_fn)(int *);
    typedef hipError_t (*prop_fn)(hipDeviceProp_t *, int);
    void *h = dlopen("libamdhip64.so", RTLD_NOW | RTLD_LOCAL);
    hipDeviceProp_t p;
    int n = 0, ok = 0;
    if (!h)
        return 0;
    {
        count_fn count = (count_fn)dlsym(h, "hipGetDeviceCount");
        prop_fn prop = (prop_fn)dlsym(h, "hipGetDeviceProperties");
        memset(&p, 0, sizeof p);
        if (count && prop && count(&n) == hipSuccess && n > 0 && prop(&p, 0) == hipSuccess &&
            p.gcnArchName[0]) {
            snprintf(buf, size, "%.*s", (int)strcspn(p.gcnArchName, ":"), p.gcnArchName);
            ok = 1;
        }
    }
    dlclose(h);
    return ok;
}
#endif

/* Asking a runtime costs a dlopen and its initialization (HIP: about half
 * a second): once per process. */
static char detected[64];
static pthread_once_t detect_once = PTHREAD_ONCE_INIT;

static void detect(void)
{
#if defined(QF_HAVE_CUDA)
    if (cuda_arch(detected, sizeof detected))
        return;
#endif
#if defined(QF_HAVE_HIP)
    if (hip_arch(detected, sizeof detected))
        return;
#endif
    snprintf(detected, sizeof detected, "cpu");
}

void qf_guard_detect_arch(char *buf, size_t size)
{
    pthread_once(&detect_once, detect);
    snprintf(buf, size, "%s", detected);
}

/* The ISA list is made by the helper the provenance uses too (_cpu_isa.h):
 * a feature recorded there and not looked for here would deny a cpu entry
 * on the CPU it qualified on. */
void _qf_guard_cpu_isa(unsigned builtin, const char *flags, char *out, size_t size)
{
    _qf_cpu_isa_list(builtin, flags, out, size);
}

void qf_guard_cpu_identity(char *vendor, size_t vsize, char *model, size_t msize, char *isa, size_t isize)
{
    char flags[8192];
    if (!_qf_cpuinfo_value(NULL, "vendor_id", vendor, vsize))
        snprintf(vendor, vsize, "unknown");
    if (!_qf_cpuinfo_value(NULL, "model name", model, msize))
        snprintf(model, msize, "unknown");
    _qf_cpu_flags(NULL, flags, sizeof flags);
    _qf_guard_cpu_isa(_qf_cpu_builtin(), flags, isa, isize);
    if (!isa[0])
        snprintf(isa, isize, "unknown");
}
