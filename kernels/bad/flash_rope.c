/* flash_rope.c: known-bad variants of the flash attention, RoPE and
 * Welford LayerNorm CPU kernels (kernels/cpu/attention_flash.c, rope.c,
 * layernorm_welford.c), each with one defect,
 * each claiming what the correct kernel claims:
 *
 *   attention.bad.flash_norescale   the running sum l is not multiplied by
 *       exp(m_old - m_new) when a later KV tile raises the running max (O
 *       is); l is too large, so every output shrinks.  Shows when seq_k >
 *       16 and a later tile holds a larger score; with seq_k <= 16 (one
 *       tile) it is right.
 *   attention.bad.flash_bf16p_as_f32  float32 in and out, rounds P to
 *       bfloat16 before P V while claiming that P stays float32
 *       (attn_p_format none): an error up to 2^-8 relative per weight against
 *       a float32 bound of about n_kv 2^-24.  Shows whenever some P is not
 *       a bfloat16 number; with seq_k = 1 (P = 1) it is right.
 *   rope.bad.f16_angle   rounds the angle pos * inv_freq to float16 before
 *       cosf / sinf (and overflows to inf, hence NaN, past 65504): shows at
 *       any position > 0 where the angle is not a float16 number; at
 *       position 0 (the identity) it is right.
 *   layernorm.bad.welford_sq   Welford's update with M2 += delta^2 instead
 *       of delta (x_k - M_new): the variance is too large by about
 *       sum_k delta_k^2 / (k n), about (ln n + 0.58) / n of it (7% at
 *       n = 64, 0.75% at n = 1000), against a Welford bound of order
 *       n u.  Shows for n >= 2; with one
 *       column it is right (x - M = 0 whatever the variance).
 */
#include "_bad.h"

const _qf_cpu_flash_cfg _qf_bad_flash_norescale_cfg = {
    .kv_tile = 16, .p_format = QF_FLOAT32, .defect_no_rescale_l = 1};
const _qf_cpu_flash_cfg _qf_bad_flash_bf16p_cfg = {.kv_tile = 16, .p_format = QF_BFLOAT16};
const _qf_cpu_rope_cfg _qf_bad_rope_f16_angle_cfg = {.defect_f16_angle = 1};
const _qf_cpu_welford_cfg _qf_bad_welford_sq_cfg = {.defect_no_factor = 1};
