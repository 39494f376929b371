/* origin.c: what each known-bad kernel is made of, and where its defect
 * shows (shapes/detection.yaml runs each on both sides).
 *
 * A known-bad kernel is, where it can be, a correct kernel plus one
 * declared defect: table.c gives it the good kernel's run function and a
 * kernel->user naming the defect, so a fix to the good kernel reaches it.
 * The defect is either a _qf_defect the good code switches on, or only the
 * claim (the good code as it is, claiming arithmetic it does not have).
 * tests/kernels/t-bad checks every row: the good kernel exists and shares
 * the run function, and with the defect off the two give the same bits.
 */
#include <stddef.h>

#include "_bad.h"

/* clang-format off */
static const _qf_bad_origin origins[] = {
    /* float16 a, b, d: the accumulator is rounded to float16 after every
     * product, the claim says float32.  Shows once K > 1 on data whose
     * sums are not float16 values (K = 256, normal: errors of ~ 2^-11
     * |A||B| against a bound of ~ K 2^-24 |A||B|); hidden at K = 1 and on
     * small integers whose partial sums are exact in float16. */
    {"gemm.bad.f16acc", "gemm.cpu.f16acc", _QF_DEFECT_NONE,
     "float16 accumulator claimed as float32", NULL},
    /* Rows of the edge tile (the last M % 64) sum K - 1 products.  Shows
     * whenever M % 64 != 0; M = 64, 128 are right. */
    {"gemm.bad.tile64", "gemm.cpu.naive.f32", _QF_DEFECT_GEMM_EDGE_TILE_K,
     "the edge M-tile of 64 drops the last product of K", NULL},
    /* The H100 FP8 wgmma model without promotion (blocks of 32 aligned to
     * 13 fraction bits, truncated) claimed as a float32 sequential sum.
     * Shows at large K on data with a nonzero mean (K = 4096, uniform(0,
     * 1): DeepSeek-V3's ~1e-2 relative error); hidden at K = 1 and on
     * small integers, where the 13 kept bits lose nothing.  Its run looks
     * the model up by name: the model's configuration is private to
     * kernels/models. */
    {"gemm.bad.h100_fp8_as_f32", "gemm.model.h100.e4m3", _QF_DEFECT_NONE,
     "no FP8 promotion claimed as float32 accumulation", NULL},
    /* Each sum starts at an index that changes per call; every order has
     * the same bound, so only the runner's two runs compared bit for bit
     * catch it: shows for K >= 3 on random data; hidden at K <= 2
     * (addition commutes) and on exact sums. */
    {"gemm.bad.racy_order", "gemm.cpu.naive.f32", _QF_DEFECT_GEMM_RACY_ORDER,
     "summation order varies from call to call", NULL},
    /* Odd N: each row's last column is stored as a pair (value, 0), so the
     * last row writes one element past the output: the runner's canary.
     * Even N is right. */
    {"gemm.bad.overrun", "gemm.cpu.naive.f32", _QF_DEFECT_GEMM_PAIR_OVERRUN,
     "a pair store one element past the row", NULL},
    /* The last N % 8 columns are never written: the runner's poison. */
    {"gemm.bad.unwritten", "gemm.cpu.naive.f32", _QF_DEFECT_GEMM_UNWRITTEN_TAIL,
     "the last N % 8 columns are not stored", NULL},
    /* a and b read at dense offsets: on a padded leading dimension or a
     * column-major operand it reads wrong elements and the runner's NaN
     * padding (NaN where the reference is finite).  Hidden on dense
     * operands, where the dense offsets are the strides. */
    {"gemm.bad.ignores_ld", "gemm.cpu.naive.f32", _QF_DEFECT_GEMM_IGNORES_LD,
     "a and b read as dense, ignoring their leading dimensions", NULL},
    /* Zeros stored over each row's padding: the runner's check of the
     * gaps of a strided output.  Hidden on dense d (no padding). */
    {"gemm.bad.pad_store", "gemm.cpu.naive.f32", _QF_DEFECT_GEMM_PAD_STORE,
     "each row of d stored over its whole pitch", NULL},
    /* No max subtracted: expf overflows to +inf once some z_j > 88.7 (NaN
     * rows), a row all below about -87 underflows into 0 / 0.  Shows on
     * large entries (normal with std 100); hidden for |z| < ~80, where
     * expf(z) is as accurate as expf(z - m). */
    {"softmax.bad.nomax", "softmax.cpu.f32", _QF_DEFECT_SOFTMAX_NO_MAX,
     "no max subtraction before expf", NULL},
    /* Every partial sum of the exponentials rounded to bfloat16: about
     * 2^-9 relative per addition, so log S off by up to about n 2^-9
     * absolutely, against a log-softmax bound of about n 2^-24.  Shows on
     * random rows (cols 64); hidden at cols = 1, where the one term
     * exp(0) = 1 is a bfloat16 number (and log_softmax is exactly 0). */
    {"softmax.bad.bf16_sum", "softmax.cpu.f32", _QF_DEFECT_SOFTMAX_BF16_SUM,
     "the sum of exponentials rounded to bfloat16", NULL},
    /* var = E[x^2] - E[x]^2 in float32: when |mean| >> std the two terms
     * agree in most of their bits (var can even be negative: NaN).  Shows
     * on rows with mean 1000, std 1; hidden on zero-mean rows. */
    {"layernorm.bad.onepass", "layernorm.cpu.twopass.f32", _QF_DEFECT_LAYERNORM_ONE_PASS,
     "one-pass variance E[x^2] - E[x]^2", NULL},
    /* r = 1 / sqrtf(q / n): shows when eps is not negligible against
     * mean(x^2) (small inputs, eps = 1e-2; a zero row gives NaN); hidden
     * when eps is below float32's resolution of mean(x^2). */
    {"rmsnorm.bad.no_eps", "rmsnorm.cpu.f32", _QF_DEFECT_RMSNORM_NO_EPS,
     "eps is never added", NULL},
    {"attention.bad.drop_tail", NULL, _QF_DEFECT_NONE,
     "the last partial KV tile of 64 is never read",
     "computes in binary64, which no correct attention kernel does: attention.cpu.naive.f32 with the "
     "defect would change its measured errors"},
    {"quantize.bad.mx_scale_off", NULL, _QF_DEFECT_NONE,
     "the MX scale comes from a bfloat16-rounded amax",
     "no CPU quantize kernel: it is the library's OCP quantizer (qf_block_mx_quantize) with one step redone"},
    {"quantize.bad.e4m3_nan_overflow", NULL, _QF_DEFECT_NONE,
     "the e4m3 encoder does not saturate: overflow becomes NaN",
     "no CPU quantize kernel: it is the library's quantizers (qf_block.h) with saturation off"},
    /* l is not multiplied by exp(m_old - m_new) when a later tile raises
     * the running max (O is): every output shrinks.  Shows when seq_k >
     * 16 and a later tile holds a larger score; one tile is right. */
    {"attention.bad.flash_norescale", "attention.cpu.flash.f32", _QF_DEFECT_FLASH_NO_RESCALE_L,
     "the running sum is not rescaled", NULL},
    /* P rounded to bfloat16 before P V, claimed float32: up to 2^-8
     * relative per weight against a bound of about n_kv 2^-24.  Shows
     * whenever some P is not a bfloat16 number; seq_k = 1 is right. */
    {"attention.bad.flash_bf16p_as_f32", "attention.cpu.flash_bf16p", _QF_DEFECT_NONE,
     "P rounded to bfloat16 claimed as float32", NULL},
    /* The angle pos * inv_freq rounded to float16 before cosf / sinf
     * (inf, hence NaN, past 65504): shows at any position > 0 where the
     * angle is not a float16 number; position 0 is right. */
    {"rope.bad.f16_angle", "rope.cpu.f32", _QF_DEFECT_ROPE_F16_ANGLE,
     "the angle rounded to float16", NULL},
    /* M2 += delta^2 instead of delta (x_k - M_new): the variance is too
     * large by about (ln n + 0.58) / n of it (7% at n = 64) against a
     * bound of order n u.  Shows for n >= 2; one column is right. */
    {"layernorm.bad.welford_sq", "layernorm.cpu.welford.f32", _QF_DEFECT_WELFORD_NO_FACTOR,
     "Welford's M2 update without its (k - 1) / k factor", NULL},
    /* Every square and partial sum of squares rounded to float16: about
     * 2^-11 relative per step against a bound of about n 2^-24, and
     * +inf (outputs 0) once the sum passes 65504.  Shows on normal rows
     * (cols 256); hidden on small integers, whose squares and partial
     * sums (at most 16 x 16 = 256) are float16 values. */
    {"l2norm.bad.f16_sumsq", "l2norm.cpu.f32", _QF_DEFECT_L2NORM_F16_SUMSQ,
     "the sum of squares rounded to float16", NULL},
};
/* clang-format on */

const _qf_bad_origin *_qf_bad_origins(size_t *n)
{
    *n = sizeof origins / sizeof origins[0];
    return origins;
}
