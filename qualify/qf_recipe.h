/* qf_recipe.h: scaling recipes, one enum and one spelling for the suites'
 * gemm `scale:`, the runner's scaled GEMM and `qualify audit`.
 *
 * A recipe says how a tensor is cut into pieces that share a scale and in
 * which format the scales are (docs/runner.md "Scaled GEMM" for GEMM
 * operands, docs/audit.md for one tensor):
 *   none         unscaled;
 *   per_tensor   one float32 scale per tensor (FP8, Transformer Engine);
 *   per_channel  one float32 scale per row of a (per token) and per column
 *                of b (per output channel) for GEMM; per row for audit;
 *   per_token    one scale per row of an activation (not driven yet);
 *   per_block    one scale per 2-D block (not driven yet);
 *   mx           OCP Microscaling Formats (MX) v1.0: an E8M0 scale per 32
 *                elements along K;
 *   nvfp4        E2M1 elements, an E4M3 scale per 16 along K and a float32
 *                scale per tensor (NVIDIA technical blog, "Introducing
 *                NVFP4 for efficient and accurate low-precision inference");
 *   group        integers with an fp16 / bf16 scale per group along K
 *                (W4A16, GPTQ-style groups).
 *
 * A recipe is not a layout.  The kernel ABI's qf_scale_kind (qf_kernel.h)
 * says how one tensor's scales are laid out; a recipe fixes it per GEMM
 * operand, untransposed (a is [M][K], b is [K][N]):
 *   none         a NONE,   b NONE
 *   per_tensor   a TENSOR, b TENSOR (float32)
 *   per_channel  a ROW,    b COL    (float32)
 *   mx           a BLOCK,  b BLOCK  (e8m0, block 32, along K)
 *   nvfp4        a BLOCK,  b BLOCK  (e4m3, block 16, along K; has_global)
 *   group        a NONE,   b BLOCK  (bfloat16 or float16, block group_size)
 *   per_token, per_block: no layout is fixed until the runner drives them.
 * The block families of precision/qf_block.h compute them: fp8 scaling
 * (per_tensor, per_channel), MX, NVFP4 and group.
 */
#ifndef QF_RECIPE_H
#define QF_RECIPE_H

#include "qf_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The order is that of the suites' valid list (docs/suites.md). */
typedef enum qf_scale_recipe {
    QF_SCALE_RECIPE_NONE = 0,
    QF_SCALE_RECIPE_PER_TENSOR,
    QF_SCALE_RECIPE_PER_CHANNEL,
    QF_SCALE_RECIPE_PER_TOKEN,
    QF_SCALE_RECIPE_PER_BLOCK,
    QF_SCALE_RECIPE_MX,
    QF_SCALE_RECIPE_NVFP4,
    QF_SCALE_RECIPE_GROUP,
    QF_SCALE_RECIPE_COUNT
} qf_scale_recipe;

/* The spellings in enum order, NULL-terminated: the suites' choice list of
 * gemm `scale:` and the list error messages name. */
extern const char *const qf_scale_recipe_names[QF_SCALE_RECIPE_COUNT + 1];

/* "none", "per_tensor", "per_channel", "per_token", "per_block", "mx",
 * "nvfp4", "group"; NULL out of range. */
const char *qf_scale_recipe_name(qf_scale_recipe r);

/* The recipe of a spelling (exact, lower case); QF_EPARSE if it is none,
 * QF_EINVAL for NULL arguments. */
qf_status qf_scale_recipe_lookup(const char *name, qf_scale_recipe *out);

/* As qf_scale_recipe_lookup, and also the words `qualify audit` used
 * before recipes had one spelling: "tensor" (per_tensor), "channel" and
 * "row" (per_channel).  Reports print qf_scale_recipe_name of the result. */
qf_status qf_scale_recipe_lookup_alias(const char *name, qf_scale_recipe *out);

#ifdef __cplusplus
}
#endif

#endif /* QF_RECIPE_H */
