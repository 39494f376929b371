/* _bad.h: the known-bad kernels' own code and their origins (private). */
#ifndef QF__BAD_H
#define QF__BAD_H

#include <stddef.h>

#include "../cpu/_cpu.h"
#include "qf_kernel.h"

/* What a known-bad kernel is made of (origin.c): the correct kernel whose
 * code it runs and its one defect. */
typedef struct _qf_bad_origin {
    const char *bad;       /* the known-bad kernel */
    const char *good;      /* the correct kernel it is derived from; NULL: none */
    _qf_defect defect;     /* the defect switched on in the good code; NONE: the claim alone is false */
    const char *what;      /* the defect, in words */
    const char *why_alone; /* good == NULL: why it has its own code */
} _qf_bad_origin;
const _qf_bad_origin *_qf_bad_origins(size_t *n);

/* gemm.c: the scope of the known-bad GEMMs (d = a b, nothing more) and
 * gemm.bad.h100_fp8_as_f32, which runs the model kernel by name. */
qf_status _qf_bad_gemm_supports(const qf_kernel *k, const qf_op_desc *op, const qf_dtype_tuple *dtype,
                                char *why, size_t why_size);
qf_status _qf_bad_gemm_fp8_as_f32_run(void *ctx, const qf_kernel_call *call);

qf_status _qf_bad_attention_supports(const qf_kernel *k, const qf_op_desc *op, const qf_dtype_tuple *dtype,
                                     char *why, size_t why_size);
qf_status _qf_bad_attention_drop_tail_run(void *ctx, const qf_kernel_call *call);

qf_status _qf_bad_quantize_supports(const qf_kernel *k, const qf_op_desc *op, const qf_dtype_tuple *dtype,
                                    char *why, size_t why_size);
qf_status _qf_bad_quantize_mx_scale_off_run(void *ctx, const qf_kernel_call *call);
qf_status _qf_bad_quantize_e4m3_nan_run(void *ctx, const qf_kernel_call *call);

#endif
