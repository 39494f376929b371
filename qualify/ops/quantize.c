/* quantize.c: the quantize op class (_ops.h): block-scaled quantization
 * (OCP MX, NVFP4, integer groups, FP8 scaling) of x [rows][cols].  The
 * expectation is exact: the block module's codes and scale codes
 * (precision/qf_block.h), so any difference is FAILED. */
#define _GNU_SOURCE
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "_ops.h"
#include "qf_bound.h"
#include "qf_block.h"
#include "qf_recipe.h"

/* quantize: the block parameters from the suite's params and the out
 * role (the element format).  Stochastic rounding (the kernel would need
 * the reference's random stream) and asymmetric groups (zero points are
 * not carried back yet) are UNSUPPORTED. */
static int build(_qf_case *p, qf_result *r)
{
    const qf_suite_case *c = p->c;
    qf_op_quantize *q = &p->op.u.quantize;
    qf_ref_block_params *bp = &q->block;
    const qf_format *out = _qf_role(c, "out");
    qf_suite_value v;
    int dflt;
    qf_ref_block_family fam = QF_REF_BLOCK_MX;
    qf_round rnd = QF_ROUND_RNE;
    size_t block = (size_t)_qf_param_real(c, "block", 0);
    p->op.op = QF_OP_QUANTIZE;
    q->rows = c->dims[0];
    q->cols = c->dims[1];
    p->rows = q->rows;
    p->cols = q->cols;
    if (qf_suite_case_param(c, "family", &v, &dflt) == QF_OK && v.s) {
        /* mx, nvfp4 and group are spelled as recipes (qf_recipe.h); fp8
         * is the one family that is no recipe name (FP8 scaling, whose
         * recipe, per_tensor or per_channel, is its granularity). */
        qf_scale_recipe rec;
        if (qf_scale_recipe_lookup(v.s, &rec) != QF_OK)
            fam = QF_REF_BLOCK_FP8;
        else if (rec == QF_SCALE_RECIPE_NVFP4)
            fam = QF_REF_BLOCK_NVFP4;
        else if (rec == QF_SCALE_RECIPE_GROUP)
            fam = QF_REF_BLOCK_GROUP;
    }
    if (qf_suite_case_param(c, "round", &v, &dflt) == QF_OK && v.s && qf_round_lookup(v.s, &rnd) != QF_OK) {
        _qf_say(r, QF_CAUSE_UNSUPPORTED, "unsupported: quantize: unknown rounding '%s'", v.s);
        return -1;
    }
    if (rnd == QF_ROUND_STOCHASTIC) {
        _qf_say(r, QF_CAUSE_UNSUPPORTED,
                "unsupported: quantize: stochastic rounding has no exact expectation the runner can check");
        return -1;
    }
    qf_ref_block_params_init(bp, fam);
    if (!out) {
        _qf_say(r, QF_CAUSE_UNSUPPORTED, "unsupported: quantize: no out format");
        return -1;
    }
    switch (fam) {
    case QF_REF_BLOCK_MX:
        bp->mx.elem = out->id;
        bp->mx.round = rnd;
        if (block)
            bp->mx.block = block;
        if (qf_suite_case_param(c, "scale_rule", &v, &dflt) == QF_OK && v.s &&
            qf_block_mx_rule_lookup(v.s, &bp->mx.rule) != QF_OK) {
            _qf_say(r, QF_CAUSE_UNSUPPORTED, "unsupported: quantize: unknown scale_rule '%s'", v.s);
            return -1;
        }
        break;
    case QF_REF_BLOCK_NVFP4:
        bp->nvfp4.round = rnd;
        if (block)
            bp->nvfp4.block = block;
        break;
    case QF_REF_BLOCK_GROUP:
        bp->group.elem = out->id;
        bp->group.round = rnd;
        if (block)
            bp->group.group = block;
        if (_qf_param_real(c, "symmetric", 1) == 0) {
            _qf_say(
                r, QF_CAUSE_UNSUPPORTED,
                "unsupported: quantize: asymmetric groups (zero points) are not driven by the runner yet");
            return -1;
        }
        break;
    case QF_REF_BLOCK_FP8:
        bp->fp8.elem = out->id;
        bp->fp8.round = rnd;
        bp->fp8.saturate = _qf_param_real(c, "saturate", 1) != 0;
        break;
    }
    return 0;
}

/* The scale part of quantize's output q: kind, format and count, stored
 * in the scale format's storage bits (e8m0 / e4m3 one byte, fp16 / bf16
 * two, float32 four) in a _qf_guarded buffer of its own. */
static int quantize_scales(_qf_case *p, qf_result *r)
{
    const qf_ref_block_params *bp = &p->op.u.quantize.block;
    qf_tensor_scale *sc = &p->out[0].scale;
    const qf_format *sf;
    memset(sc, 0, sizeof *sc);
    switch (bp->family) {
    case QF_REF_BLOCK_MX:
        sc->kind = QF_SCALE_BLOCK;
        sc->format = QF_FLOAT8_E8M0FNU;
        sc->axis = bp->mx.axis;
        sc->block = bp->mx.block;
        break;
    case QF_REF_BLOCK_NVFP4:
        sc->kind = QF_SCALE_BLOCK;
        sc->format = QF_FLOAT8_E4M3FN;
        sc->axis = bp->nvfp4.axis;
        sc->block = bp->nvfp4.block;
        sc->has_global = bp->nvfp4.tensor_scale;
        break;
    case QF_REF_BLOCK_GROUP:
        sc->kind = QF_SCALE_BLOCK;
        sc->format = bp->group.scale_format;
        sc->axis = bp->group.axis;
        sc->block = bp->group.group;
        break;
    case QF_REF_BLOCK_FP8:
        sc->kind = bp->fp8.granularity == QF_BLOCK_FP8_TENSOR ? QF_SCALE_TENSOR
                   : bp->fp8.granularity == QF_BLOCK_FP8_ROW  ? QF_SCALE_ROW
                                                              : QF_SCALE_COL;
        sc->format = QF_FLOAT32;
        break;
    }
    sf = qf_format_get(sc->format);
    sc->count = qf_ref_block_scale_count(bp, p->rows, p->cols);
    if (!sf || sf->storage_bits % 8 || sc->count == 0) {
        _qf_say(r, QF_CAUSE_UNSUPPORTED,
                "unsupported: quantize: no scale layout for this family and shape");
        return -1;
    }
    p->out1_n = sc->count;
    p->out1_eb = sf->storage_bits / 8;
    p->out1_is_scale = 1;
    return 0;
}

static int inputs(_qf_case *p, qf_result *r, const qf_dist *d)
{
    int64_t sx[2] = {(int64_t)p->rows, (int64_t)p->cols};
    if (_qf_gen_input(p, r, 0, d, 2, sx, p->rows, p->cols))
        return -1;
    qf_tensor_init(&p->out[0], p->t->out[0], 2, sx);
    return quantize_scales(p, r);
}

/* quantize: an exact expectation.  The block module's element codes,
 * scale codes and (NVFP4) global scale code are what a correct kernel
 * writes, so any difference is FAILED, naming the first one.  Metrics
 * compare the element values (decoded codes, before scaling) with bound 0. */
static int reference_quantize(_qf_case *p, _qf_checked *ck, _qf_checked *ck1, qf_result *r, uint64_t target,
                              uint64_t tile)
{
    const qf_ref_block_params *bp = &p->op.u.quantize.block;
    qf_ref_opts o = qf_ref_opts_default();
    qf_ref_out q;
    qf_ref_block_scales sc;
    size_t i, n = p->out_n, ns = p->out1_n, bad = 0, first = 0, sbad = 0, sfirst = 0;
    int eb = p->outf->storage_bits / 8, rc = -1;
    qf_status s;
    memset(&q, 0, sizeof q);
    memset(&sc, 0, sizeof sc);
    if (_qf_checked_all(ck, n) || qf_ref_out_alloc(&q, n) != QF_OK ||
        !(sc.codes = calloc(ns + 1, sizeof *sc.codes))) {
        _qf_say(r, QF_CAUSE_HARNESS, "out of memory for the reference");
        goto done;
    }
    o.threads = 1;
    s = qf_ref_block_quantize(&o, bp, p->inval[0], p->rows, p->cols, &q, &sc);
    if (s != QF_OK) {
        _qf_say(r, QF_CAUSE_HARNESS, "reference failed: %s", qf_status_str(s));
        goto done;
    }
    for (i = 0; i < n; i++) {
        uint64_t got = _qf_load_code(p->g[0].data, eb, i);
        ck->exact[i] = ck->rounded[i] = qf_format_decode(p->outf, q.code[i]);
        ck->bound[i] = 0;
        ck->status[i] = QF_REF_EXACT;
        if (got != q.code[i] && bad++ == 0)
            first = i;
    }
    r->ref_exact = n;
    for (i = 0; i < ns; i++)
        if (_qf_load_code(p->g1[0].data, p->out1_eb, i) != sc.codes[i] && sbad++ == 0)
            sfirst = i;
    if (bad) {
        snprintf(
            p->fail1, sizeof p->fail1,
            "codes: %zu of %zu element codes differ from the reference (first at (%zu, %zu): got 0x%llx, "
            "expected 0x%llx)%s",
            bad, n, first / p->cols, first % p->cols,
            (unsigned long long)_qf_load_code(p->g[0].data, eb, first), (unsigned long long)q.code[first],
            sbad ? "; scales differ too" : "");
    } else if (sbad) {
        snprintf(p->fail1, sizeof p->fail1,
                 "scales: %zu of %zu scale codes differ from the reference (first at [%zu]: got 0x%llx, "
                 "expected 0x%llx)",
                 sbad, ns, sfirst, (unsigned long long)_qf_load_code(p->g1[0].data, p->out1_eb, sfirst),
                 (unsigned long long)sc.codes[sfirst]);
    } else if (p->out[0].scale.has_global && p->global_code[0] != sc.tensor_scale_code) {
        snprintf(p->fail1, sizeof p->fail1, "scales: global scale code 0x%08x, expected 0x%08x",
                 (unsigned)p->global_code[0], (unsigned)sc.tensor_scale_code);
    }
    snprintf(r->bound.kind, sizeof r->bound.kind, "exact");
    r->bound.claimed_ulp = 0;
    rc = 0;
done:
    free(sc.codes);
    qf_ref_out_free(&q);
    return rc;
}

/* Metrics index into the checked list; report real output positions. */

/* clang-format off */
static const char *const families[] = {"mx", "nvfp4", "group", "fp8", NULL};
/* The MX scale rules of docs/numerics.md#block-scaled-formats: floor is the
 * OCP reference rule, rceil the cuBLAS one. */
static const char *const scale_rules[] = {"floor", "ceil", "even", "rceil", NULL};
static const char *const round_modes[] = {"rne", "rna", "rtz", "up", "down", "stochastic", NULL};
static const pspec params[] = {
    {"family",     PT_ENUM, 0, 0, 0, 0,       families, 1, 0, NULL},
    {"block",      PT_INT,  0, 1048576, 0, 0, NULL, 0, 0, NULL}, /* 0: the family's default */
    {"scale_rule", PT_ENUM, 0, 0, 0, 0,       scale_rules, 0, 0, "floor"},
    {"round",      PT_ENUM, 0, 0, 0, 0,       round_modes, 0, 0, "rne"},
    {"saturate",   PT_BOOL, 0, 0, 0, 0,       NULL, 0, 1, NULL},
    {"symmetric",  PT_BOOL, 0, 0, 0, 0,       NULL, 0, 1, NULL},
    QF_SCHEMA_END};
/* The out role is required (the element format); in may be an integer. */
static const op_schema schema = {
    "quantize", QF_SCHEMA_ROWS_COLS, 2, {"in", "out"}, {ROLE_IN, ROLE_REQUIRED}, 2u, NULL, params, NULL, 0};
/* clang-format on */

static void dims_of(const qf_op_desc *d, int64_t *dims)
{
    dims[0] = _qf_abi_dim(d->u.quantize.rows);
    dims[1] = _qf_abi_dim(d->u.quantize.cols);
}

/* x and the codes rows x cols; the scales (one per block of 16 or more
 * elements) are left out of the estimate (runner_memory.c). */
static void elems(const qf_op_desc *d, uint64_t *in, uint64_t *out)
{
    in[0] = out[0] = _qf_mul_sat(d->u.quantize.rows, d->u.quantize.cols);
}

/* The family and every parameter of it a kernel needs to reproduce the
 * reference's codes (docs/workers.md "quantize"): a worker cannot see the
 * suite, so nothing here may be left to a default it would have to guess. */
static void fields_json(const qf_op_desc *d, json_t *o)
{
    const qf_ref_block_params *bp = &d->u.quantize.block;
    const qf_format *f;
    int axis = 1;
    size_t block = 0;
    qf_round rnd = QF_ROUND_RNE;
    json_object_set_new(o, "family", json_string(families[bp->family]));
    switch (bp->family) {
    case QF_REF_BLOCK_MX:
        f = qf_format_get(bp->mx.elem);
        json_object_set_new(o, "elem", json_string(f ? f->name : "?"));
        json_object_set_new(o, "scale_rule", json_string(qf_block_mx_rule_name(bp->mx.rule)));
        axis = bp->mx.axis;
        block = bp->mx.block;
        rnd = bp->mx.round;
        break;
    case QF_REF_BLOCK_NVFP4:
        f = qf_format_get(QF_FLOAT4_E2M1FN);
        json_object_set_new(o, "elem", json_string(f ? f->name : "?"));
        json_object_set_new(o, "tensor_scale", json_boolean(bp->nvfp4.tensor_scale));
        json_object_set_new(o, "tensor_amax", json_real(bp->nvfp4.tensor_amax));
        json_object_set_new(o, "scale_round", json_string(qf_round_name(bp->nvfp4.scale_round)));
        json_object_set_new(o, "scale_min", json_real(bp->nvfp4.scale_min));
        axis = bp->nvfp4.axis;
        block = bp->nvfp4.block;
        rnd = bp->nvfp4.round;
        break;
    case QF_REF_BLOCK_GROUP:
        f = qf_format_get(bp->group.elem);
        json_object_set_new(o, "elem", json_string(f ? f->name : "?"));
        json_object_set_new(o, "symmetric", json_boolean(bp->group.symmetric));
        json_object_set_new(o, "include_zero", json_boolean(bp->group.include_zero));
        f = qf_format_get(bp->group.scale_format);
        json_object_set_new(o, "scale_format", json_string(f ? f->name : "?"));
        json_object_set_new(o, "scale_min", json_real(bp->group.scale_min));
        axis = bp->group.axis;
        block = bp->group.group;
        rnd = bp->group.round;
        break;
    case QF_REF_BLOCK_FP8: {
        static const char *const gran[] = {"tensor", "row", "col"};
        f = qf_format_get(bp->fp8.elem);
        json_object_set_new(o, "elem", json_string(f ? f->name : "?"));
        json_object_set_new(o, "granularity", json_string(gran[bp->fp8.granularity]));
        json_object_set_new(o, "margin", json_integer(bp->fp8.margin));
        json_object_set_new(o, "amax_epsilon", json_real(bp->fp8.amax_epsilon));
        json_object_set_new(o, "pow2", json_boolean(bp->fp8.pow2));
        json_object_set_new(o, "saturate", json_boolean(bp->fp8.saturate));
        json_object_set_new(o, "fp32_product", json_boolean(bp->fp8.fp32_product));
        json_object_set_new(o, "dequant", json_string(bp->fp8.dequant == QF_BLOCK_FP8_DIV ? "div" : "scale_inv"));
        rnd = bp->fp8.round;
        break;
    }
    }
    if (block) {
        json_object_set_new(o, "block", json_integer((json_int_t)block));
        json_object_set_new(o, "axis", json_integer(axis));
    }
    json_object_set_new(o, "round", json_string(qf_round_name(rnd)));
    if (rnd == QF_ROUND_STOCHASTIC) {
        /* The random stream of the rounding (docs/workers.md): all four
         * families keep it in the same two fields. */
        char seed[32];
        uint64_t sd = bp->family == QF_REF_BLOCK_MX      ? bp->mx.seed
                      : bp->family == QF_REF_BLOCK_NVFP4 ? bp->nvfp4.seed
                      : bp->family == QF_REF_BLOCK_GROUP ? bp->group.seed
                                                         : bp->fp8.seed;
        int bits = bp->family == QF_REF_BLOCK_MX      ? bp->mx.random_bits
                   : bp->family == QF_REF_BLOCK_NVFP4 ? bp->nvfp4.random_bits
                   : bp->family == QF_REF_BLOCK_GROUP ? bp->group.random_bits
                                                      : bp->fp8.random_bits;
        snprintf(seed, sizeof seed, "%llu", (unsigned long long)sd);
        json_object_set_new(o, "round_seed", json_string(seed));
        json_object_set_new(o, "random_bits", json_integer(bits));
    }
}

/* A format member of the op object into *id. */
static int jformat(json_t *o, const char *key, qf_format_id *id, char *err, size_t es)
{
    const char *s = _qf_jstr(o, key, err, es);
    const qf_format *f = s ? qf_format_lookup(s) : NULL;
    if (!s)
        return -1;
    if (!f)
        return snprintf(err, es, "op: \"%s\": unknown format '%s'", key, s), -1;
    *id = f->id;
    return 0;
}

static int jround(json_t *o, const char *key, qf_round *r, char *err, size_t es)
{
    const char *s = _qf_jstr(o, key, err, es);
    if (!s)
        return -1;
    if (qf_round_lookup(s, r) != QF_OK)
        return snprintf(err, es, "op: \"%s\": unknown rounding '%s'", key, s), -1;
    return 0;
}

/* The inverse of fields_json: the family's defaults, then every member. */
static int from_json(qf_op_desc *d, const int64_t *dims, json_t *o, void **owned, char *err, size_t es)
{
    static const char *const gran[] = {"tensor", "row", "col", NULL};
    static const char *const deq[] = {"div", "scale_inv", NULL};
    qf_ref_block_params *bp = &d->u.quantize.block;
    int fam, axis = 1, iv, bits = 0;
    int64_t block = 0, margin;
    qf_round rnd;
    uint64_t seed = 0;
    (void)owned;
    d->u.quantize.rows = (size_t)dims[0];
    d->u.quantize.cols = (size_t)dims[1];
    if (_qf_jword(o, "family", families, &fam, err, es) || jround(o, "round", &rnd, err, es))
        return -1;
    qf_ref_block_params_init(bp, (qf_ref_block_family)fam);
    if (json_object_get(o, "block") &&
        (_qf_jint(o, "block", &block, err, es) || _qf_jint(o, "axis", &margin, err, es)))
        return -1;
    if (block)
        axis = (int)margin;
    if (rnd == QF_ROUND_STOCHASTIC) {
        const char *s = _qf_jstr(o, "round_seed", err, es);
        int64_t rb;
        if (!s || _qf_jint(o, "random_bits", &rb, err, es))
            return -1;
        seed = strtoull(s, NULL, 10);
        bits = (int)rb;
    }
/* The members every family's parameters share. */
#define SET_ROUNDING(P) ((P).round = rnd, (P).seed = seed, (P).random_bits = bits)
#define SET_BLOCKED(P, BLOCK) ((P).axis = axis, (P).BLOCK = (size_t)block, SET_ROUNDING(P))
    switch (bp->family) {
    case QF_REF_BLOCK_MX: {
        const char *rule = _qf_jstr(o, "scale_rule", err, es);
        if (!rule || jformat(o, "elem", &bp->mx.elem, err, es))
            return -1;
        if (qf_block_mx_rule_lookup(rule, &bp->mx.rule) != QF_OK)
            return snprintf(err, es, "op: unknown scale_rule '%s'", rule), -1;
        SET_BLOCKED(bp->mx, block);
        break;
    }
    case QF_REF_BLOCK_NVFP4:
        if (_qf_jbool(o, "tensor_scale", &bp->nvfp4.tensor_scale, err, es) ||
            _qf_jreal(o, "tensor_amax", &bp->nvfp4.tensor_amax, err, es) ||
            jround(o, "scale_round", &bp->nvfp4.scale_round, err, es) ||
            _qf_jreal(o, "scale_min", &bp->nvfp4.scale_min, err, es))
            return -1;
        SET_BLOCKED(bp->nvfp4, block);
        break;
    case QF_REF_BLOCK_GROUP:
        if (jformat(o, "elem", &bp->group.elem, err, es) ||
            _qf_jbool(o, "symmetric", &bp->group.symmetric, err, es) ||
            _qf_jbool(o, "include_zero", &bp->group.include_zero, err, es) ||
            jformat(o, "scale_format", &bp->group.scale_format, err, es) ||
            _qf_jreal(o, "scale_min", &bp->group.scale_min, err, es))
            return -1;
        SET_BLOCKED(bp->group, group);
        break;
    case QF_REF_BLOCK_FP8:
        if (jformat(o, "elem", &bp->fp8.elem, err, es) || _qf_jword(o, "granularity", gran, &iv, err, es))
            return -1;
        bp->fp8.granularity = (qf_block_fp8_granularity)iv;
        if (_qf_jint(o, "margin", &margin, err, es) ||
            _qf_jreal(o, "amax_epsilon", &bp->fp8.amax_epsilon, err, es) ||
            _qf_jbool(o, "pow2", &bp->fp8.pow2, err, es) || _qf_jbool(o, "saturate", &bp->fp8.saturate, err, es) ||
            _qf_jbool(o, "fp32_product", &bp->fp8.fp32_product, err, es) ||
            _qf_jword(o, "dequant", deq, &iv, err, es))
            return -1;
        bp->fp8.margin = (int)margin;
        bp->fp8.dequant = iv ? QF_BLOCK_FP8_SCALE_INV : QF_BLOCK_FP8_DIV;
        SET_ROUNDING(bp->fp8);
        break;
    }
#undef SET_BLOCKED
#undef SET_ROUNDING
    return 0;
}

static const _qf_abi abi = {"block-scaled quantization: MX, NVFP4, integer groups, FP8 scaling",
                            {"x", NULL},
                            {"q", NULL},
                            {"rows", "cols", NULL},
                            dims_of,
                            fields_json,
                            from_json,
                            elems};

/* A zero code for a nonzero input is the op's rounding (an element below
 * half the smallest step of its block's scale), a code the kernel must
 * write exactly: not degenerate data when a suite sets its own
 * max_zero_frac (docs/verdicts.md "Degenerate data and exact zeros"); a
 * zero input's zero code still counts. */
static int zero_code(const _qf_case *p, size_t at, long *fact)
{
    (void)fact;
    return _qf_in_at(p, 0, at) != 0;
}

static size_t exact_zeros(const _qf_case *p, const _qf_checked *ck)
{
    return _qf_exact_zeros(p, ck, zero_code);
}

const _qf_opclass _qf_op_quantize = {
    .abi_info = &abi,
    .schema = &schema,
    .name = "quantize",
    .abi = QF_OP_QUANTIZE,
    .flags = _QF_OPC_EXACT_CODES,
    .bound = "exact",
    .build = build,
    .tuple_matches = _qf_tuple_in,
    .inputs = inputs,
    .reference = reference_quantize,
    .exact_zeros = exact_zeros,
};
