/* _hip.h: helpers shared by the HIP back end and kernels (private).
 *
 * Every HIP call goes through QF_HIP (in a function with `qf_status st`, a
 * `done` label and msg/msg_size), which records the call, the error name
 * and the line; a launch is followed by QF_HIP_LAUNCH (hipGetLastError,
 * then hipDeviceSynchronize).
 *
 * Targets: Debian 12's hipcc (ROCm 5.2, clang 15) compiles for gfx90a and
 * gfx940 but knows no gfx942 or newer; clang-19 compiles the same sources
 * for gfx942.  The kernels use the MFMA builtins where __gfx90a__ /
 * __gfx940__ / __gfx942__ is defined and refuse other targets at run time
 * with that reason (docs/gpu.md "Guards").
 */
#ifndef QF__HIP_H
#define QF__HIP_H

#include <hip/hip_runtime.h>
#include <stdio.h>

#include "qf_kernel.h"
#include "qf_status.h"

/* The same sources are compiled twice: by hipcc for gfx90a/gfx940 and by
 * clang-19 for gfx942 (kernels/hip/CMakeLists.txt), and both objects go
 * into one module.  In the gfx942 object (QF_HIP_GFX942) the C entry points
 * carry a _gfx942 suffix, so the gfx942 records (table.c) reach code built
 * for gfx942 and the names do not collide; kernels are static in both. */
#ifdef QF_HIP_GFX942
#define QF_HIP_ENTRY(name) name##_gfx942
#else
#define QF_HIP_ENTRY(name) name
#endif

extern "C" qf_status qf_hip_fail(hipError_t e, const char *what, const char *file, int line, char *msg,
                                 size_t msg_size);
extern "C" const char *qf_hip_last_error(void);
/* 1 when the current device is gfx942 (decode_fp8.hip, hipcc object). */
extern "C" int qf_hip_device_is_gfx942(void);

#define QF_HIP(call)                                                                                         \
    do {                                                                                                     \
        hipError_t e_ = (call);                                                                              \
        if (e_ != hipSuccess) {                                                                              \
            st = qf_hip_fail(e_, #call, __FILE__, __LINE__, msg, msg_size);                                  \
            goto done;                                                                                       \
        }                                                                                                    \
    } while (0)

#define QF_HIP_LAUNCH()                                                                                      \
    do {                                                                                                     \
        QF_HIP(hipGetLastError());                                                                           \
        QF_HIP(hipDeviceSynchronize());                                                                      \
    } while (0)

#endif
