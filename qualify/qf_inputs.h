/* qf_inputs.h: seeded input generation, quantized into the kernel's formats.
 *
 * DETERMINISM
 *   Element (i, j) of a rows x cols tensor is a function of (seed, stream,
 *   i * cols + j) only: its random words come from the counter-based
 *   qf_rng_u64 (precision/qf_format.h) keyed by (seed, stream), so a tensor
 *   generated whole, in row chunks, or by any number of threads is the same
 *   bits.  Transcendental functions (log, exp, cos, sin of the samplers) are
 *   evaluated by this module with + - * / sqrt only, in a fixed order, so
 *   the values do not depend on the C library either: the same case gives
 *   the same inputs on any IEEE 754 machine (built with -ffp-contract=off,
 *   as the project is).  `stream` tells apart the tensors of one case (A = 0,
 *   B = 1, C = 2 ...).
 *
 * QUANTIZATION
 *   Values are drawn in binary64 (qf_inputs_draw), then rounded once into
 *   the tensor's format (qf_inputs_generate): by default nearest-even and
 *   SATURATING (finite overflow gives +-max, not NaN/Inf), since an input
 *   generator that turns a large normal sample into NaN measures nothing.
 *   Both the codes and their exact decoded values are returned: the decoded
 *   values are what kernel and reference see.  The unquantized draw is
 *   available for quantization audits (qf_inputs_draw).
 *
 * Distributions and their parameters are in docs/inputs.md.
 */
#ifndef QF_INPUTS_H
#define QF_INPUTS_H

#include <stddef.h>
#include <stdint.h>

#include "qf_format.h"
#include "qf_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum qf_dist_kind {
    QF_DIST_NORMAL = 0,      /* mean + std * N(0, 1) */
    QF_DIST_UNIFORM,         /* uniform on [lo, hi) */
    QF_DIST_SMALL_INT,       /* integers uniform on [-int_max, int_max] */
    QF_DIST_OUTLIERS,        /* normal, a fraction of entries/columns * scale */
    QF_DIST_HEAVY_TAIL,      /* Student t (dof) or signed log-normal (sigma) */
    QF_DIST_NEAR_SATURATION, /* |x| uniform on [lo, hi] * format max */
    QF_DIST_SUBNORMAL,       /* normal, a fraction exact subnormals */
    QF_DIST_ILL_CONDITIONED, /* dot-product pairs of a given condition */
    QF_DIST_SPECIAL,         /* normal with NaN, +-Inf, +-0 at given rates */
    QF_DIST_FILE,            /* a tensor from .npy or .safetensors */
    /* Designed against a kernel's claim by its op (qf_refute.h), never
     * drawn here: the values depend on the claim, so only an op that knows
     * the kernel can build them (docs/refute.md). */
    QF_DIST_REFUTE,
    QF_DIST_COUNT
} qf_dist_kind;

typedef enum qf_tail {
    QF_TAIL_STUDENT_T = 0, /* mean + std * t(dof) */
    QF_TAIL_LOGNORMAL      /* mean +- std * exp(sigma * N(0, 1)), random sign */
} qf_tail;

/* special: rate_nan / rate_inf = QF_RATE_AUTO (the default) means 0.01
 * where the format has that value and 0 where it has not; an explicit
 * positive rate for a value the format lacks is an error. */
#define QF_RATE_AUTO (-1.0)

#define QF_DIST_PATH_MAX 1024
#define QF_DIST_NAME_MAX 256

/* A distribution: kind plus the parameters that kind reads (the others are
 * ignored).  Start from qf_dist_default(kind). */
typedef struct qf_dist {
    qf_dist_kind kind;
    double mean, std;                     /* normal; the bulk of outliers, subnormal, special;
                                             location and scale of heavy_tail */
    double lo, hi;                        /* uniform: [lo, hi); near_saturation: fractions of max */
    int64_t int_max;                      /* small_int: values in [-int_max, int_max] ([0, ..] unsigned) */
    double fraction;                      /* outliers: of entries (or columns); subnormal: of entries */
    double scale;                         /* outliers: factor applied to the chosen entries */
    int per_channel;                      /* outliers: 1 = whole columns (channels) */
    qf_tail tail;                         /* heavy_tail */
    double dof;                           /* heavy_tail, Student t degrees of freedom (> 0) */
    double sigma;                         /* heavy_tail, log-normal sigma */
    double cond;                          /* ill_conditioned: sum|x_i y_i| / |sum x_i y_i| (>= 1) */
    double rate_nan, rate_inf, rate_zero; /* special: per-entry probabilities;
                                             QF_RATE_AUTO for NaN and Inf */
    int sign;                             /* special: sign of Inf and zero entries: 0 random, +1, -1 */
    char path[QF_DIST_PATH_MAX];          /* file: .npy or .safetensors */
    char tensor[QF_DIST_NAME_MAX];        /* file: tensor name in a .safetensors */
    int refute_family;                    /* refute: a qf_refute_family (qf_refute.h) */
} qf_dist;

/* Defaults: normal(0, 1); uniform [-1, 1); small_int 4; outliers 1% of
 * entries * 100 (per_channel 0); heavy_tail Student t dof 3 (sigma 1 for
 * log-normal); near_saturation [0.5, 1]; subnormal fraction 0.5;
 * ill_conditioned cond 1e6; special rate_zero 0.01, rate_nan and rate_inf
 * QF_RATE_AUTO, random signs. */
qf_dist qf_dist_default(qf_dist_kind kind);
const char *qf_dist_name(qf_dist_kind kind);
/* "normal, uniform, small_int, ..." for 'valid choices' messages. */
void qf_dist_list_names(char *buf, size_t size);
/* Default distribution of a kind by name; QF_EPARSE with a message listing
 * the valid names if unknown. */
qf_status qf_dist_lookup(const char *name, qf_dist *out, char *err, size_t err_size);
/* Set one parameter by name (value as text: numbers, 0/1, "student_t" or
 * "lognormal" for tail, strings for path and tensor); QF_EPARSE with the
 * valid parameter names of that kind if key is not one of them. */
qf_status qf_dist_set(qf_dist *d, const char *key, const char *value, char *err, size_t err_size);
/* "name" or "name:key=value,key=value", e.g.
 * "outliers:fraction=0.001,scale=50,per_channel=1". */
qf_status qf_dist_parse(const char *text, qf_dist *out, char *err, size_t err_size);
/* Check the parameters against their domains and the format (fmt NULL:
 * binary64); QF_EINVAL / QF_EFORMAT with a message naming the parameter. */
qf_status qf_dist_check(const qf_dist *d, const qf_format *fmt, char *err, size_t err_size);

/* ---- Generation ------------------------------------------------------------ */

/* Rows [row_begin, row_end) of the rows x cols tensor of (seed, stream),
 * unquantized binary64, into raw ((row_end - row_begin) * cols values, C
 * order).  fmt (NULL = binary64) is read by the kinds defined relative to
 * the format (near_saturation, subnormal, small_int range checks,
 * ill_conditioned).  ill_conditioned: see qf_inputs_dot_pairs; here
 * stream 2k gives the x rows and stream 2k+1 the y rows of the pairs of
 * stream pair k, both built for format fmt. */
qf_status qf_inputs_draw(const qf_dist *d, uint64_t seed, uint64_t stream, const qf_format *fmt, size_t rows,
                         size_t cols, size_t row_begin, size_t row_end, double *raw, char *err,
                         size_t err_size);

/* Round n values into fmt (enc NULL: nearest-even, saturating); values
 * (may alias raw) receive the exact decoded values and codes (may be NULL)
 * the codes.  first = index of raw[0] in the whole tensor, so that
 * stochastic rounding does not depend on chunking.  fmt NULL: binary64,
 * values copied, codes the bit patterns. */
qf_status qf_inputs_quantize(const qf_format *fmt, const qf_encode_opts *enc, const double *raw, size_t n,
                             uint64_t first, double *values, void *codes);

/* Draw and quantize rows [row_begin, row_end) (the chunk entry point). */
qf_status qf_inputs_generate_rows(const qf_dist *d, uint64_t seed, uint64_t stream, const qf_format *fmt,
                                  const qf_encode_opts *enc, size_t rows, size_t cols, size_t row_begin,
                                  size_t row_end, double *values, void *codes, char *err, size_t err_size);

/* The whole tensor, with OpenMP threads over row chunks (same bits for any
 * thread count).  values: rows * cols exact decoded values (may be NULL);
 * codes: qf_format_array_bytes(fmt, rows * cols) bytes (may be NULL). */
qf_status qf_inputs_generate(const qf_dist *d, uint64_t seed, uint64_t stream, const qf_format *fmt,
                             const qf_encode_opts *enc, size_t rows, size_t cols, double *values, void *codes,
                             char *err, size_t err_size);

/* Ill-conditioned dot-product pairs (Ogita, Rump and Oishi 2005, GenDot):
 * `rows` pairs (x_r, y_r) of length n, pair r = row r of x and of y, such
 * that sum|x_i y_i| / |sum x_i y_i| is close to d->cond.  The second half
 * of each pair is built from the exact dot product of the already
 * QUANTIZED prefix (qf_dot engine), so the cancellation survives
 * quantization into fx / fy, and the construction is repeated with a
 * corrected target when it misses by more than sqrt(2) (docs/inputs.md).
 * cond_out[r] (may be NULL) receives the condition number of the
 * quantized pair, from its exact dot product and magnitude sum (+Inf when
 * the exact dot is 0).  Pairs are scaled by powers of two to fit the
 * formats' ranges.  x, y: rows * n decoded values; codes may be NULL.
 * Stochastic rounding in enc is replaced by nearest-even here. */
qf_status qf_inputs_dot_pairs(const qf_dist *d, uint64_t seed, uint64_t stream, const qf_format *fx,
                              const qf_format *fy, const qf_encode_opts *enc, size_t rows, size_t n,
                              double *x, void *xcodes, double *y, void *ycodes, double *cond_out, char *err,
                              size_t err_size);

/* The largest m such that integers in [-m, m] are exact in format `in` and
 * every dot product of length k of them is exact in an accumulator (and an
 * output) of acc_bits significand bits: k * m^2 <= 2^acc_bits.  0 if none. */
int64_t qf_inputs_small_int_max(const qf_format *in, int acc_bits, size_t k);

#ifdef __cplusplus
}
#endif

#endif /* QF_INPUTS_H */
