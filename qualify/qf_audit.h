/* qf_audit.h: how much error a quantization scheme adds to a tensor.
 *
 * The third use of qualify (README.md, docs/audit.md): an ML engineer has weights
 * or activations in binary64/32/16 and wants to know what e4m3 per-tensor,
 * MXFP4 or int4 group-wise would do to them.  A scheme quantizes a tensor
 * and dequantizes it again (precision/qf_block.h does the arithmetic, every
 * rounding once from the exact value); the metrics compare the result with
 * the exact original values.  docs/audit.md defines every scheme and metric
 * and the --formats syntax parsed here.
 *
 * Layout: a tensor of shape (d0, ..., dk) is viewed as a rows x cols
 * matrix with cols = dk (the contiguous axis) and rows the product of the
 * others; a 1-D tensor is one row.  "Channels" are rows (the output
 * channels of an N x K weight, the tokens of an activation); blocks and
 * groups run along a row, as MX, NVFP4 and GPTQ-style groups do along K.
 */
#ifndef QF_AUDIT_H
#define QF_AUDIT_H

#include <stddef.h>
#include <stdint.h>

#include "qf_block.h"
#include "qf_format.h"
#include "qf_recipe.h"
#include "qf_status.h"

#ifdef __cplusplus
extern "C" {
#endif

struct json_t;

typedef enum qf_audit_kind {
    QF_AUDIT_CAST = 0, /* round each element into a format, no scale */
    QF_AUDIT_FP8,      /* FP8 with a float32 scale per tensor or per channel */
    QF_AUDIT_MX,       /* OCP MX: 32-element blocks, E8M0 scale, scale rule */
    QF_AUDIT_NVFP4,    /* E2M1 in 16-element blocks, E4M3 scale, FP32 tensor scale */
    QF_AUDIT_INT,      /* int4/int8 per group, symmetric or with a zero point */
    QF_AUDIT_KIND_COUNT
} qf_audit_kind;

/* "cast", "fp8", "mx", "nvfp4", "int". */
const char *qf_audit_kind_name(qf_audit_kind k);

typedef struct qf_audit_scheme {
    char label[64]; /* the head as given, options canonical: "e4m3:per_channel:mse" */
    qf_audit_kind kind;
    qf_format_id cast; /* CAST: the target format */
    int saturate;      /* CAST: overflow gives +-max (1) or the format's Inf/NaN (0) */
    qf_block_fp8_params fp8;
    int mse;          /* FP8: search the clipping threshold that minimizes the MSE */
    qf_block_mx_params mx;
    qf_block_nvfp4_params nvfp4;
    qf_block_group_params group;
} qf_audit_scheme;

/* Parse one scheme ("e4m3:per_tensor", "mxfp4:rule=rceil", "int4:g64:asym");
 * QF_EPARSE with a message naming the bad token and the valid choices.
 * Recipe words are the spellings of qf_recipe.h; the older tensor, channel
 * and row are accepted and labelled per_tensor, per_channel. */
qf_status qf_audit_scheme_parse(const char *spec, qf_audit_scheme *out, char *err, size_t err_size);
/* The scheme's scaling recipe: none (cast), per_tensor or per_channel
 * (FP8), mx, nvfp4, group (int4, int8). */
qf_scale_recipe qf_audit_recipe(const qf_audit_scheme *s);
/* Parse a comma-separated list into a malloc'ed array (free()). */
qf_status qf_audit_scheme_parse_list(const char *list, qf_audit_scheme **out, size_t *n, char *err,
                                     size_t err_size);

/* Quantize and dequantize x (rows x cols, row-major) into y; lo and hi
 * (may be NULL) receive per element the representable range of its block
 * (the scaled format's -max and +max; with a zero point the two ends), so
 * x outside [lo, hi] was clipped.  A non-finite x goes through as the
 * scheme treats it.  QF_EINVAL, QF_ENOMEM. */
qf_status qf_audit_apply(const qf_audit_scheme *s, const double *x, size_t rows, size_t cols, double *y,
                         double *lo, double *hi);

/* Elements per block for the worst-block list: the scheme's block or
 * group, 32 for casts and FP8. */
size_t qf_audit_block(const qf_audit_scheme *s);

#define QF_AUDIT_TOP  5 /* offenders listed */
#define QF_AUDIT_HIST 9 /* histogram bins */

/* Histogram of |y - x| / rms(x): bin 0 exact, then (0, 1e-6), [1e-6,
 * 1e-5), ..., [1e-1, 1), [1, inf); labels for reports. */
const char *qf_audit_hist_label(int bin);

typedef struct qf_audit_offender {
    size_t row;      /* channel */
    size_t col;      /* first column of the block (0 for a channel) */
    size_t len;      /* elements */
    double err_norm; /* ||y - x|| over the offender */
    double rel;      /* err_norm / ||x|| over the offender (Inf if ||x|| = 0 < err) */
} qf_audit_offender;

typedef struct qf_audit_metrics {
    size_t n, rows, cols;
    size_t n_used;        /* finite x with finite y: the elements the norms use */
    size_t n_nonfinite_x; /* non-finite originals (left out) */
    size_t n_nonfinite_y; /* finite x that came back NaN/Inf (overflow without saturation) */
    double sum_x2, sum_e2; /* sum x^2 and sum (y - x)^2, exact then rounded once */
    double sqnr_db;        /* 10 log10(sum_x2 / sum_e2); +Inf when y == x; -Inf with n_nonfinite_y */
    double normwise;       /* sqrt(sum_e2 / sum_x2) */
    double max_abs, max_rel; /* max |y - x|, max |y - x| / |x| over x != 0 */
    size_t at_abs, at_rel;   /* flat indices */
    double bias;             /* mean of y - x (exact sum, rounded once) */
    double rms_err;          /* sqrt(sum_e2 / n_used) */
    size_t n_clipped;        /* x outside [lo, hi] of its block */
    size_t n_flushed;        /* x != 0, y == 0 */
    double frac_clipped, frac_flushed; /* over n_used */
    size_t block;
    size_t n_worst_rows, n_worst_blocks;
    qf_audit_offender worst_rows[QF_AUDIT_TOP];   /* by rel, largest first */
    qf_audit_offender worst_blocks[QF_AUDIT_TOP]; /* by err_norm, largest first */
    size_t hist[QF_AUDIT_HIST];
} qf_audit_metrics;

/* Measure y against x (rows x cols); lo/hi as from qf_audit_apply (NULL:
 * nothing counts as clipped); block > 0: the worst-block length. */
qf_status qf_audit_measure(const double *x, const double *y, const double *lo, const double *hi, size_t rows,
                           size_t cols, size_t block, qf_audit_metrics *m);

/* The metrics as a JSON object (docs/audit.md); non-finite numbers as the
 * strings "Infinity", "-Infinity", "NaN" as in results.json. */
qf_status qf_audit_metrics_to_json(const qf_audit_metrics *m, struct json_t **out);
/* A number as audit.json writes it (non-finite as those strings; NULL on
 * allocation failure), and back (NaN when absent or not a number). */
struct json_t *qf_audit_json_number(double x);
double qf_audit_json_get(const struct json_t *obj, const char *key);

#ifdef __cplusplus
}
#endif

#endif /* QF_AUDIT_H */
