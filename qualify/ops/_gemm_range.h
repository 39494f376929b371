/* _gemm_range.h: where a GEMM claim's accumulator may overflow (private;
 * gemm_range.c, docs/bounds.md "Overflow of the claimed accumulator").
 *
 * The derived bounds assume the claimed accumulator never overflows.  When
 * its intermediates can reach the format's largest finite value, a NaN or
 * Inf from a kernel that does exactly what it claims is possible where the
 * exact result is finite (or Inf where the result is Inf).  Such elements
 * are not evidence against the kernel, nor for it: the runner leaves them
 * unchecked and the case MISTRUSTED with the reason, never FAILED.
 */
#ifndef QF__RUNNER_RANGE_H
#define QF__RUNNER_RANGE_H

#include <stddef.h>
#include <stdint.h>

#include "qf_bound.h"
#include "qf_kernel.h"

#include "_gemm_scaled.h"

/* Factor f >= 1 such that every intermediate of the claimed arithmetic of
 * a (possibly scaled) GEMM is at most (1 + rel) |alpha| sum|a b| f: the
 * product over the scale categories of operands a and b (per-tensor, row,
 * column or block scales; the NVFP4 global scale) and over alpha of
 * 1 / min(1, smallest scale of the category).  A scale that is zero or
 * not a number gives +Inf (anything may overflow). */
double _qf_rr_unscale_factor(const qf_tensor *a, const qf_tensor *b, double alpha);

/* The largest finite value the claim's accumulator (and promoted
 * accumulator) holds. */
double _qf_rr_acc_max(const qf_arith_claim *claim);

/* Where the claimed accumulator may overflow, (1 + rel) absb[i] f >=
 * acc_max, and the exact result exact[i] is finite: mark (status =
 * QF_REF_UNDEFINED) each of the n checked elements whose kernel result
 * got[i] is finite while the correctly rounded reference rounded[i] is NaN
 * or +-Inf (a truncating accumulator overflows to +-max), or whose result
 * and reference are both non-finite (NaN against Inf): no evidence either
 * way.  A NaN or Inf result where the rounded reference is finite is not
 * marked: it stays FAILED (docs/verdicts.md "Verdicts"), and *n_failed counts
 * those the overflow explains.  Returns how many were marked; *worst gets
 * the largest intermediate estimate of either kind (0 when none). */
size_t _qf_rr_gemm_mark_overflow(double rel, double f, double acc_max, size_t n, const double *absb,
                                 const double *exact, const double *rounded, const double *got,
                                 uint8_t *status, double *worst, size_t *n_failed);

/* Underflow inside a scale epilogue, which the GEMM coefficient (one
 * relative rounding per epilogue step) does not see (docs/bounds.md
 * "Underflow in the scale epilogue"): recipe is a qf_scale_recipe, a and b
 * the operands handed to the kernel.  nvfp4: alpha = fl(g_a g_b) below
 * float32's normal range errs by up to 2^-150 absolutely, which the
 * accumulator (up to (1 + rel) A / (g_a g_b)) magnifies: rel_abs grows by
 * 2^-150 / (g_a g_b) (1 + rel)(1 + u)(1 + u_o).  per_channel: fl(s_b acc)
 * may underflow by 2^-150, then times s_a: abs_min grows by
 * max(s_a) 2^-150 (1 + u)(1 + u_o).  Other recipes: unchanged. */
void _qf_rr_scaled_underflow(qf_scale_recipe recipe, const qf_tensor *a, const qf_tensor *b,
                             qf_bound_coef *coef);

#endif
