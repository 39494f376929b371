/* gemm_scaled.c: scaled GEMM operands (per_channel, mx, nvfp4, group)
 * for the runner; _gemm_scaled.h says what each recipe is.
 *
 * Every recipe draws the operand in binary64 from the case's distribution
 * and seed (stream = slot, as unscaled inputs), quantizes it with the block
 * module (precision/qf_block.h, whose roundings happen once from the exact
 * value) and keeps the DEQUANTIZED values for the reference.  Those are
 * exact binary64 numbers, so the reference sees exactly what a correct
 * kernel multiplies (docs/runner.md "Scaled GEMM"):
 *   per_channel  fp8 code (at most 4 significant bits) x the float32
 *                scale_inv (24 bits): 28 bits;
 *   mx           element (at most 4 bits: e4m3, e5m2, e2m1) x 2^X, X in
 *                [-127, 127]: a power of two, inside binary64's range;
 *   nvfp4        e2m1 (2 bits) x e4m3 block scale (4 bits) x float32 global
 *                scale (24 bits): 30 bits, exponents far inside binary64's;
 *   group        int4 (4 bits) x bfloat16 scale (8 bits): 12 bits.
 * All below 53 bits: qf_block's dequantize functions return them exactly
 * (they say so; binary64 products of that many bits are not rounded).
 *
 * Batched operands are quantized slice by slice (a slice is one batch
 * entry's rows x cols); the scale codes of slice p follow those of p - 1.
 * NVFP4's global scale is one per tensor: it is computed from the amax of
 * the whole batched tensor, so every slice shares it.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "_gemm_scaled.h"
#include "qf_block.h"

int _qf_rs_driven(qf_scale_recipe r)
{
    switch (r) {
    case QF_SCALE_RECIPE_NONE:
    case QF_SCALE_RECIPE_PER_TENSOR:
    case QF_SCALE_RECIPE_PER_CHANNEL:
    case QF_SCALE_RECIPE_MX:
    case QF_SCALE_RECIPE_NVFP4:
    case QF_SCALE_RECIPE_GROUP: return 1;
    default: return 0;
    }
}

int _qf_rs_epilogue(qf_scale_recipe r)
{
    switch (r) {
    case QF_SCALE_RECIPE_PER_TENSOR:
    case QF_SCALE_RECIPE_MX:
    case QF_SCALE_RECIPE_GROUP: return 1;
    case QF_SCALE_RECIPE_PER_CHANNEL:
    case QF_SCALE_RECIPE_NVFP4: return 2;
    default: return 0;
    }
}

static int block_ok(const qf_dtype_tuple *t, int slot, qf_format_id sf, size_t block)
{
    return t->in_scale[slot] == QF_SCALE_BLOCK && t->in_scale_format[slot] == sf &&
           (t->in_scale_block[slot] == 0 || t->in_scale_block[slot] == block);
}

int _qf_rs_tuple_matches(qf_scale_recipe r, size_t group, const qf_dtype_tuple *t)
{
    switch (r) {
    case QF_SCALE_RECIPE_NONE: return t->in_scale[0] == QF_SCALE_NONE && t->in_scale[1] == QF_SCALE_NONE;
    case QF_SCALE_RECIPE_PER_TENSOR:
        return t->in_scale[0] == QF_SCALE_TENSOR && t->in_scale[1] == QF_SCALE_TENSOR;
    case QF_SCALE_RECIPE_PER_CHANNEL: return t->in_scale[0] == QF_SCALE_ROW && t->in_scale[1] == QF_SCALE_COL;
    case QF_SCALE_RECIPE_MX:
        return block_ok(t, 0, QF_FLOAT8_E8M0FNU, 32) && block_ok(t, 1, QF_FLOAT8_E8M0FNU, 32);
    case QF_SCALE_RECIPE_NVFP4:
        return block_ok(t, 0, QF_FLOAT8_E4M3FN, 16) && block_ok(t, 1, QF_FLOAT8_E4M3FN, 16);
    case QF_SCALE_RECIPE_GROUP:
        return t->in_scale[0] == QF_SCALE_NONE && t->in_scale[1] == QF_SCALE_BLOCK &&
               (t->in_scale_format[1] == QF_BFLOAT16 || t->in_scale_format[1] == QF_FLOAT16) &&
               t->in_scale_block[1] == group;
    default: return 0;
    }
}

/* Set the reason (and whether the case is MISTRUSTED rather than
 * UNSUPPORTED); returns -1. */
static int fail(int *mistrusted, int m, char *why, size_t why_size, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

static int fail(int *mistrusted, int m, char *why, size_t why_size, const char *fmt, ...)
{
    va_list ap;
    *mistrusted = m;
    va_start(ap, fmt);
    vsnprintf(why, why_size, fmt, ap);
    va_end(ap);
    return -1;
}

/* The decoded scale of stored element (i, j) of one slice (global scale
 * apart): the layouts of qf_tensor_scale, as the kernels read them. */
static double scale_of(const qf_tensor_scale *sc, const void *scales, size_t rows, size_t cols, size_t i,
                       size_t j)
{
    const qf_format *sf = qf_format_get(sc->format);
    size_t b = sc->block, k;
    (void)rows;
    switch (sc->kind) {
    case QF_SCALE_ROW: k = i; break;
    case QF_SCALE_COL: k = j; break;
    default: k = sc->axis ? i * ((cols + b - 1) / b) + j / b : (i / b) * cols + j; break;
    }
    switch (sf->storage_bits) {
    case 8: return qf_format_decode(sf, ((const uint8_t *)scales)[k]);
    case 16: return qf_format_decode(sf, ((const uint16_t *)scales)[k]);
    default: return qf_format_decode(sf, ((const uint32_t *)scales)[k]);
    }
}

/* Is every reference value exactly decode(code) * scale (* global)?  The
 * products have at most 30 significant bits (file comment), so each is
 * exact in binary64: fma(d, s, -d s) == 0 checks it, and the value the
 * block module returned must be that product.  A miss means the layout or
 * the block module is not what this file assumes: MISTRUSTED. */
static int values_exact(const qf_tensor_scale *sc, const qf_format *f, const uint8_t *codes,
                        const void *scales, size_t ns, size_t sb, const double *val, size_t batch,
                        size_t rows, size_t cols)
{
    double g = sc->has_global ? qf_format_decode(qf_format_get(QF_FLOAT32), sc->global_code) : 1;
    size_t p, i, j;
    for (p = 0; p < batch; p++)
        for (i = 0; i < rows; i++)
            for (j = 0; j < cols; j++) {
                size_t e = (p * rows + i) * cols + j;
                double d = qf_format_decode(f, codes[e]);
                double s = scale_of(sc, (const unsigned char *)scales + p * ns * sb, rows, cols, i, j),
                       ds = d * s;
                if (d != d || s != s || val[e] != val[e]) {
                    if (!(val[e] != val[e]))
                        return 0; /* a NaN code or scale must give a NaN value */
                    continue;
                }
                if (fma(d, s, -ds) != 0 || fma(ds, g, -ds * g) != 0 || ds * g != val[e])
                    return 0;
            }
    return 1;
}

int _qf_rs_gen(qf_scale_recipe r, size_t group, qf_format_id elem, int slot, int trans, const qf_dist *d,
               uint64_t seed, int ndim, const int64_t *shape, size_t batch, size_t rows, size_t cols,
               qf_tensor *t, _qf_rs_operand *o, int *mistrusted, char *why, size_t why_size)
{
    const qf_format *f = qf_format_get(elem);
    const char *sname = slot ? "b" : "a";
    /* K runs along the columns of a stored a and of a stored b^T. */
    int kcols = (slot == 0) != (trans != 0), axis = kcols ? 1 : 0;
    size_t n = rows * cols, nt = batch * n, ns = 0, sb = 1, p, i;
    qf_block_fp8_params fp = qf_block_fp8_params_default();
    qf_block_mx_params mp = qf_block_mx_params_default();
    qf_block_nvfp4_params np = qf_block_nvfp4_params_default();
    qf_block_group_params gp = qf_block_group_params_default();
    qf_tensor_scale sc;
    uint32_t global = 0;
    qf_status s = QF_OK;
    char err[256];

    *mistrusted = 0;
    memset(&sc, 0, sizeof sc);
    if (!f)
        return fail(mistrusted, 0, why, why_size, "unsupported: input %s has no valid format", sname);
    switch (r) {
    case QF_SCALE_RECIPE_PER_CHANNEL:
        if (f->kind != QF_KIND_FLOAT || f->bits != 8)
            return fail(mistrusted, 0, why, why_size, "unsupported: per_channel scaling needs FP8 %s", sname);
        fp.elem = elem;
        fp.granularity = kcols ? QF_BLOCK_FP8_ROW : QF_BLOCK_FP8_COL;
        fp.dequant = QF_BLOCK_FP8_SCALE_INV;
        ns = qf_block_fp8_scale_count(&fp, rows, cols);
        sc.kind = kcols ? QF_SCALE_ROW : QF_SCALE_COL;
        sc.format = QF_FLOAT32;
        sb = 4;
        break;
    case QF_SCALE_RECIPE_MX:
        if (qf_block_mx_emax(elem) == -1000 || elem == QF_INT8)
            return fail(mistrusted, 0, why, why_size, "unsupported: mx: %s is not an MX element format",
                        f->name);
        mp.elem = elem;
        mp.axis = axis;
        ns = qf_block_scale_count(rows, cols, axis, mp.block);
        sc.kind = QF_SCALE_BLOCK;
        sc.format = QF_FLOAT8_E8M0FNU;
        sc.block = mp.block;
        break;
    case QF_SCALE_RECIPE_NVFP4:
        if (elem != QF_FLOAT4_E2M1FN)
            return fail(mistrusted, 0, why, why_size, "unsupported: nvfp4 elements are float4_e2m1fn, not %s",
                        f->name);
        np.axis = axis;
        ns = qf_block_scale_count(rows, cols, axis, np.block);
        sc.kind = QF_SCALE_BLOCK;
        sc.format = QF_FLOAT8_E4M3FN;
        sc.block = np.block;
        sc.has_global = 1;
        break;
    case QF_SCALE_RECIPE_GROUP:
        if (slot != 1 || (elem != QF_INT4 && elem != QF_INT8))
            return fail(mistrusted, 0, why, why_size,
                        "unsupported: group scaling drives b as int4 or int8 weights (a unscaled), not %s",
                        f->name);
        gp.elem = elem;
        gp.group = group;
        gp.axis = axis;
        gp.scale_format = QF_BFLOAT16;
        ns = qf_block_scale_count(rows, cols, axis, group);
        sc.kind = QF_SCALE_BLOCK;
        sc.format = QF_BFLOAT16;
        sc.block = group;
        sb = 2;
        break;
    default: return fail(mistrusted, 0, why, why_size, "unsupported: scale recipe %d", (int)r);
    }
    o->val = malloc((nt ? nt : 1) * sizeof(double));
    o->codes = malloc(nt + 8);
    o->scales = malloc((batch * ns > 0 ? batch * ns : 1) * sb);
    if (!o->val || !o->codes || !o->scales)
        return fail(mistrusted, 1, why, why_size, "out of memory generating input %s", sname);
    if (qf_inputs_draw(d, seed, (uint64_t)slot, f, batch * rows, cols, 0, batch * rows, o->val, err,
                       sizeof err) != QF_OK)
        return fail(mistrusted, 0, why, why_size, "unsupported: input: %s", err);
    if (r == QF_SCALE_RECIPE_NVFP4) {
        /* One global scale for the whole tensor: from its amax. */
        double amax = 0;
        for (i = 0; i < nt; i++)
            if (isfinite(o->val[i]) && fabs(o->val[i]) > amax)
                amax = fabs(o->val[i]);
        np.tensor_amax = amax > 0 ? amax : 1;
    }
    for (p = 0; p < batch && s == QF_OK; p++) {
        double *x = o->val + p * n; /* quantized in place: read, then overwritten */
        uint8_t *c = (uint8_t *)o->codes + p * n;
        switch (r) {
        case QF_SCALE_RECIPE_PER_CHANNEL: {
            uint32_t *q = (uint32_t *)o->scales + p * ns;
            s = qf_block_fp8_scale_quantize(&fp, x, rows, cols, c, q, NULL);
            if (s == QF_OK)
                s = qf_block_fp8_scale_dequantize(&fp, c, q, rows, cols, x);
            /* The kernel multiplies by scale_inv = float32(1 / S). */
            for (i = 0; i < ns && s == QF_OK; i++)
                q[i] = qf_block_fp8_scale_inv(q[i]);
            break;
        }
        case QF_SCALE_RECIPE_MX: {
            uint8_t *q = (uint8_t *)o->scales + p * ns;
            s = qf_block_mx_quantize(&mp, x, rows, cols, c, q, NULL);
            if (s == QF_OK)
                s = qf_block_mx_dequantize(&mp, c, q, rows, cols, x);
            break;
        }
        case QF_SCALE_RECIPE_NVFP4: {
            uint8_t *q = (uint8_t *)o->scales + p * ns;
            s = qf_block_nvfp4_quantize(&np, x, rows, cols, c, q, NULL, &global, NULL);
            if (s == QF_OK)
                s = qf_block_nvfp4_dequantize(&np, c, q, global, rows, cols, x);
            break;
        }
        case QF_SCALE_RECIPE_GROUP: {
            uint16_t *q = (uint16_t *)o->scales + p * ns;
            s = qf_block_group_quantize(&gp, x, rows, cols, c, q, NULL, NULL);
            if (s == QF_OK)
                s = qf_block_group_dequantize(&gp, c, q, NULL, rows, cols, x);
            break;
        }
        default: break;
        }
    }
    if (s != QF_OK)
        return fail(mistrusted, 0, why, why_size,
                    "unsupported: cannot quantize input %s with these parameters", sname);
    sc.axis = axis;
    sc.global_code = global;
    if (!values_exact(&sc, f, o->codes, o->scales, ns, sb, o->val, batch, rows, cols))
        return fail(mistrusted, 1, why, why_size,
                    "input %s: a dequantized value is not decode(code) * scale exactly", sname);
    qf_tensor_init(t, elem, ndim, shape);
    t->data = o->codes;
    t->bytes = nt;
    sc.data = o->scales;
    sc.count = batch * ns;
    t->scale = sc;
    return 0;
}
