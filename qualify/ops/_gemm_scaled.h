/* _gemm_scaled.h: the scaled GEMM operands the runner drives beyond
 * per_tensor (private; gemm_scaled.c, docs/runner.md "Scaled GEMM").
 *
 * A suite's gemm dtype tuple says how a and b are scaled (`scale:`); each
 * recipe quantizes the binary64 draw of an operand with precision/qf_block.h
 * and hands the kernel codes plus scales (qf_tensor_scale) and the
 * reference the exact dequantized values.
 */
#ifndef QF__RUNNER_SCALED_H
#define QF__RUNNER_SCALED_H

#include <stddef.h>
#include <stdint.h>

#include "qf_inputs.h"
#include "qf_kernel.h"
#include "qf_recipe.h"

/* The recipes (qf_recipe.h) the runner drives: none; per_tensor (gemm.c's
 * gen_scaled: one float32 scale per operand); per_channel (FP8, a: one
 * float32 per row of A, b: one per column of B); mx (OCP MX v1.0: e8m0
 * per 32 along K, a and b); nvfp4 (e2m1, e4m3 per 16 along K, float32
 * global, a and b); group (W4A16: b int4 per group along K with bfloat16
 * scales, a unscaled).  Not per_token and per_block, nor a value out of
 * range (QF_SCALE_RECIPE_COUNT: a `scale:` that is no recipe). */
int _qf_rs_driven(qf_scale_recipe r);

/* Roundings charged for applying the scales, counted in the bound's
 * epilogue (docs/bounds.md "Scaled and integer GEMM"): 1 for per_tensor
 * (acc * (s_a s_b) rounded once), mx (the block sum times 2^(Xa + Xb)) and
 * group (the group sum times its scale); 2 for per_channel (s_a * (s_b *
 * acc), vLLM's ScaledEpilogue order) and nvfp4 (the float32 product of the
 * two global scales, then its product with the accumulator). */
int _qf_rs_epilogue(qf_scale_recipe r);

/* Does tuple t take operands scaled by recipe r (group: with this group
 * size)?  The tuple's in_scale names the layout of untransposed operands:
 * per_channel ROW for a and COL for b, the block recipes BLOCK with the
 * scale format and block size (0: any). */
int _qf_rs_tuple_matches(qf_scale_recipe r, size_t group, const qf_dtype_tuple *t);

/* One scaled operand: slot 0 (a) or 1 (b) of a gemm, stored as `batch`
 * slices of rows x cols (trans says the stored tensor is the transpose of
 * the logical one, so K runs along rows for a and along cols for b).
 * Fills t (codes, shape, scale) and o; on failure returns -1 with the
 * reason in why and *mistrusted set when the failure is not the case's
 * (out of memory), else the case is UNSUPPORTED. */
typedef struct _qf_rs_operand {
    double *val;  /* [batch * rows * cols] exact dequantized values (malloc) */
    void *codes;  /* element codes, one per byte (malloc) */
    void *scales; /* scale codes of every slice, slice after slice (malloc) */
} _qf_rs_operand;

int _qf_rs_gen(qf_scale_recipe r, size_t group, qf_format_id elem, int slot, int trans, const qf_dist *d,
               uint64_t seed, int ndim, const int64_t *shape, size_t batch, size_t rows, size_t cols,
               qf_tensor *t, _qf_rs_operand *o, int *mistrusted, char *why, size_t why_size);

#endif
