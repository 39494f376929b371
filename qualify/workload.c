/* workload.c: a small transformer forward pass from registered kernels and
 * from exact references, and their comparison (qf_workload.h,
 * docs/workload.md). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qf_dot.h"
#include "qf_inputs.h"
#include "qf_ref.h"
#include "qf_safetensors.h"
#include "qf_workload.h"

static qf_status fail(char *err, size_t size, qf_status st, const char *fmt, ...)
{
    va_list ap;
    if (err && size) {
        va_start(ap, fmt);
        vsnprintf(err, size, fmt, ap);
        va_end(ap);
    }
    return st;
}

qf_workload_config qf_workload_config_default(void)
{
    qf_workload_config c = {2, 128, 4, 2, 256, 256, 16, 1e-5, 10000.0};
    return c;
}

qf_status qf_workload_config_check(const qf_workload_config *c, char *err, size_t err_size)
{
    if (!c->layers || !c->dim || !c->heads || !c->kv_heads || !c->ffn || !c->vocab || !c->seq)
        return fail(err, err_size, QF_EINVAL, "every size (layers, dim, heads, kv heads, ffn, vocab, seq) must be >= 1");
    if (c->heads % c->kv_heads)
        return fail(err, err_size, QF_EINVAL, "heads (%zu) must be a multiple of kv heads (%zu)", c->heads,
                    c->kv_heads);
    if (c->dim % c->heads || (c->dim / c->heads) % 2)
        return fail(err, err_size, QF_EINVAL, "dim (%zu) / heads (%zu) must be an even head size", c->dim,
                    c->heads);
    if (c->dim > 65536 || c->ffn > 262144 || c->vocab > 1u << 20 || c->seq > 65536 || c->layers > 4096)
        return fail(err, err_size, QF_EINVAL, "sizes too large for a CPU receipt");
    if (!(c->eps >= 0) || !(c->rope_theta > 0))
        return fail(err, err_size, QF_EINVAL, "eps must be >= 0 and rope theta > 0");
    return QF_OK;
}

static const char *const layer_names[QF_WL_PER_LAYER] = {
    "input_layernorm.weight", "self_attn.q_proj.weight", "self_attn.k_proj.weight",
    "self_attn.v_proj.weight", "self_attn.o_proj.weight", "post_attention_layernorm.weight",
    "mlp.gate_proj.weight",    "mlp.up_proj.weight",      "mlp.down_proj.weight"};

void qf_workload_tensor_name(int which, size_t layer, char *buf, size_t size)
{
    if (which == -1)
        snprintf(buf, size, "model.embed_tokens.weight");
    else if (which == -2)
        snprintf(buf, size, "model.norm.weight");
    else if (which == -3)
        snprintf(buf, size, "lm_head.weight");
    else
        snprintf(buf, size, "model.layers.%zu.%s", layer, layer_names[which]);
}

/* Rows and columns of each tensor. */
static void tensor_shape(const qf_workload_config *c, int which, size_t *rows, size_t *cols)
{
    size_t hd = c->dim / c->heads;
    switch (which) {
    case -1:
    case -3: *rows = c->vocab, *cols = c->dim; return;
    case -2:
    case QF_WL_ATTN_NORM:
    case QF_WL_MLP_NORM: *rows = 1, *cols = c->dim; return;
    case QF_WL_WQ: *rows = c->heads * hd, *cols = c->dim; return;
    case QF_WL_WK:
    case QF_WL_WV: *rows = c->kv_heads * hd, *cols = c->dim; return;
    case QF_WL_WO: *rows = c->dim, *cols = c->heads * hd; return;
    case QF_WL_WG:
    case QF_WL_WU: *rows = c->ffn, *cols = c->dim; return;
    default: *rows = c->dim, *cols = c->ffn; return;
    }
}

static double **slot(qf_workload_weights *w, int which, size_t layer)
{
    return which == -1 ? &w->embed : which == -2 ? &w->final_norm : which == -3 ? &w->lm_head
                                                                  : &w->layer[layer * QF_WL_PER_LAYER + which];
}

void qf_workload_weights_free(qf_workload_weights *w)
{
    size_t i;
    if (!w)
        return;
    free(w->embed);
    free(w->final_norm);
    free(w->lm_head);
    for (i = 0; w->layer && i < w->layers * QF_WL_PER_LAYER; i++)
        free(w->layer[i]);
    free(w->layer);
    memset(w, 0, sizeof *w);
}

static qf_status alloc_layers(const qf_workload_config *c, qf_workload_weights *w)
{
    memset(w, 0, sizeof *w);
    w->layers = c->layers;
    w->layer = calloc(c->layers * QF_WL_PER_LAYER, sizeof *w->layer);
    return w->layer ? QF_OK : QF_ENOMEM;
}

qf_status qf_workload_weights_synthetic(const qf_workload_config *c, uint64_t seed, qf_workload_weights *w)
{
    int which;
    size_t l, rows, cols, stream = 0;
    qf_dist dist = qf_dist_default(QF_DIST_NORMAL);
    const qf_format *f32 = qf_format_get(QF_FLOAT32);
    if (qf_workload_config_check(c, NULL, 0) != QF_OK || !w)
        return QF_EINVAL;
    if (alloc_layers(c, w) != QF_OK)
        return QF_ENOMEM;
    for (l = 0; l < c->layers + 1; l++)
        for (which = (l == c->layers ? -3 : 0); which < (l == c->layers ? 0 : QF_WL_PER_LAYER); which++) {
            double **p = slot(w, which, l);
            int norm = which == -2 || which == QF_WL_ATTN_NORM || which == QF_WL_MLP_NORM;
            tensor_shape(c, which, &rows, &cols);
            *p = malloc(rows * cols * sizeof **p);
            if (!*p) {
                qf_workload_weights_free(w);
                return QF_ENOMEM;
            }
            /* The inputs module's counter-based normal draws (the same bits
             * on every IEEE machine, qf_inputs.h), rounded to float32
             * (nearest even, saturating). */
            dist.mean = norm ? 1.0 : 0.0;
            dist.std = which == -1 ? 1.0 : norm ? 0.1 : 1.0 / sqrt((double)cols);
            if (qf_inputs_generate_rows(&dist, seed, ++stream, f32, NULL, rows, cols, 0, rows, *p, NULL, NULL, 0) !=
                QF_OK) {
                qf_workload_weights_free(w);
                return QF_EINVAL;
            }
        }
    return QF_OK;
}

qf_status qf_workload_weights_load(const qf_safetensors *st, qf_workload_config *c, qf_workload_weights *w,
                                   char *err, size_t err_size)
{
    char name[128];
    size_t idx, l, rows, cols, count;
    int which;
    qf_status s;
    qf_workload_config cfg = *c;
    const qf_st_tensor *t;
    qf_workload_tensor_name(-1, 0, name, sizeof name);
    if ((s = qf_safetensors_find(st, name, &idx, err, err_size)) != QF_OK)
        return s;
    t = &st->tensors[idx];
    if (t->ndim != 2)
        return fail(err, err_size, QF_EINVAL, "%s: tensor '%s' must be 2-d [vocab][dim]", st->name, name);
    cfg.vocab = t->shape[0];
    cfg.dim = t->shape[1];
    for (cfg.layers = 0;; cfg.layers++) {
        qf_workload_tensor_name(QF_WL_ATTN_NORM, cfg.layers, name, sizeof name);
        if (qf_safetensors_find(st, name, &idx, NULL, 0) != QF_OK)
            break;
    }
    if (cfg.layers == 0)
        return fail(err, err_size, QF_EINVAL, "%s: no tensor 'model.layers.0.input_layernorm.weight'", st->name);
    /* The layers must be numbered 0..L-1 without a gap: a tensor of a later
     * layer would otherwise be ignored and the receipt describe a smaller
     * model than the file holds. */
    for (idx = 0; idx < st->ntensors; idx++) {
        unsigned long long li;
        int used = 0;
        if (sscanf(st->tensors[idx].name, "model.layers.%llu.%n", &li, &used) == 1 && used > 0 &&
            li >= cfg.layers)
            return fail(err, err_size, QF_EINVAL,
                        "%s: tensor '%s' belongs to layer %llu, but 'model.layers.%zu.input_layernorm.weight' "
                        "is missing (layers must be numbered 0..N-1)",
                        st->name, st->tensors[idx].name, li, cfg.layers);
    }
    if (!cfg.heads || cfg.dim % cfg.heads)
        return fail(err, err_size, QF_EINVAL, "%s: dim %zu (from the embedding) is not a multiple of heads %zu",
                    st->name, cfg.dim, cfg.heads);
    qf_workload_tensor_name(QF_WL_WK, 0, name, sizeof name);
    if (qf_safetensors_find(st, name, &idx, err, err_size) != QF_OK)
        return QF_EINVAL;
    cfg.kv_heads = st->tensors[idx].shape[0] / (cfg.dim / cfg.heads);
    qf_workload_tensor_name(QF_WL_WG, 0, name, sizeof name);
    if (qf_safetensors_find(st, name, &idx, err, err_size) != QF_OK)
        return QF_EINVAL;
    cfg.ffn = st->tensors[idx].shape[0];
    if ((s = qf_workload_config_check(&cfg, err, err_size)) != QF_OK)
        return s;
    if ((s = alloc_layers(&cfg, w)) != QF_OK)
        return s;
    for (l = 0; l < cfg.layers + 1; l++)
        for (which = (l == cfg.layers ? -3 : 0); which < (l == cfg.layers ? 0 : QF_WL_PER_LAYER); which++) {
            const qf_format *fmt;
            int is_vec = which == -2 || which == QF_WL_ATTN_NORM || which == QF_WL_MLP_NORM, ok;
            qf_workload_tensor_name(which, l, name, sizeof name);
            tensor_shape(&cfg, which, &rows, &cols);
            if ((s = qf_safetensors_find(st, name, &idx, err, err_size)) != QF_OK) {
                qf_workload_weights_free(w);
                return s;
            }
            t = &st->tensors[idx];
            ok = is_vec ? (t->ndim == 1 && t->shape[0] == cols)
                        : (t->ndim == 2 && t->shape[0] == rows && t->shape[1] == cols);
            if (!ok) {
                qf_workload_weights_free(w);
                if (is_vec)
                    return fail(err, err_size, QF_EINVAL, "%s: tensor '%s': shape must be [%zu]", st->name, name, cols);
                return fail(err, err_size, QF_EINVAL, "%s: tensor '%s': shape must be [%zu, %zu]", st->name, name,
                            rows, cols);
            }
            if ((s = qf_safetensors_load_f64(st, name, slot(w, which, l), &count, &fmt, err, err_size)) != QF_OK) {
                qf_workload_weights_free(w);
                return s;
            }
            if (!fmt) {
                qf_workload_weights_free(w);
                return fail(err, err_size, QF_EINVAL, "%s: tensor '%s': dtype %s is not a float type", st->name,
                            name, qf_st_dtype_name(t->dtype));
            }
        }
    *c = cfg;
    return QF_OK;
}

qf_status qf_workload_weights_save(const char *path, const qf_workload_config *c, const qf_workload_weights *w,
                                   char *err, size_t err_size)
{
    size_t n = 3 + c->layers * QF_WL_PER_LAYER, k = 0, l, i;
    qf_st_write_tensor *t = calloc(n, sizeof *t);
    char (*names)[128] = calloc(n, sizeof *names);
    size_t (*shapes)[2] = calloc(n, sizeof *shapes);
    float **data = calloc(n, sizeof *data);
    qf_status s = QF_OK;
    int which;
    if (!t || !names || !shapes || !data)
        s = QF_ENOMEM;
    for (l = 0; s == QF_OK && l < c->layers + 1; l++)
        for (which = (l == c->layers ? -3 : 0); s == QF_OK && which < (l == c->layers ? 0 : QF_WL_PER_LAYER);
             which++) {
            size_t rows, cols;
            const double *v = *slot((qf_workload_weights *)w, which, l);
            int is_vec = which == -2 || which == QF_WL_ATTN_NORM || which == QF_WL_MLP_NORM;
            tensor_shape(c, which, &rows, &cols);
            qf_workload_tensor_name(which, l, names[k], sizeof names[k]);
            if (!(data[k] = malloc(rows * cols * sizeof(float)))) {
                s = QF_ENOMEM;
                break;
            }
            for (i = 0; i < rows * cols; i++)
                data[k][i] = (float)v[i];
            shapes[k][0] = is_vec ? cols : rows;
            shapes[k][1] = cols;
            t[k] = (qf_st_write_tensor){names[k], QF_ST_F32, is_vec ? 1 : 2, shapes[k], data[k]};
            k++;
        }
    if (s == QF_OK)
        s = qf_safetensors_write(path, t, k, NULL, NULL, 0, err, err_size);
    for (i = 0; data && i < n; i++)
        free(data[i]);
    free(data);
    free(t);
    free(names);
    free(shapes);
    return s;
}

/* ---- The forward pass ---------------------------------------------------- */

/* The kernel ABI op each stage of the forward pass runs on; a stage is
 * named by its op (qf_op_name: the op table's spelling). */
static const qf_op stage_ops[QF_WL_OP_COUNT] = {QF_OP_GEMM, QF_OP_RMSNORM, QF_OP_ATTENTION, QF_OP_ACTIVATION,
                                                QF_OP_ROPE};

qf_op qf_workload_op_kernel_op(qf_workload_op op)
{
    return (unsigned)op < QF_WL_OP_COUNT ? stage_ops[op] : QF_OP_COUNT;
}

const char *qf_workload_op_name(qf_workload_op op)
{
    return (unsigned)op < QF_WL_OP_COUNT ? qf_op_name(stage_ops[op]) : NULL;
}

typedef struct run_ctx {
    const qf_workload_plan *plan;
    const qf_format *fmt; /* NULL: binary64 (exact path); float32 otherwise */
    qf_workload_trace *tr;
    char *err;
    size_t err_size;
    double e2[QF_WL_OP_COUNT], r2[QF_WL_OP_COUNT]; /* local error sums */
} run_ctx;

static void local(run_ctx *x, qf_workload_op op, const double *got, const double *exact, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) {
        x->e2[op] += (got[i] - exact[i]) * (got[i] - exact[i]);
        x->r2[op] += exact[i] * exact[i];
    }
}

static double rnd(const run_ctx *x, double v)
{
    return x->fmt ? (double)(float)v : v;
}

static void note(run_ctx *x, qf_workload_op op, const char *fmt, ...)
{
    va_list ap;
    char *u = x->tr->used[op];
    if (*u && strncmp(u, "fallback", 8) == 0)
        return; /* the first fallback reason stays */
    va_start(ap, fmt);
    vsnprintf(u, sizeof x->tr->used[op], fmt, ap);
    va_end(ap);
}

/* A dense tensor of codes of values v (NULL: allocated and zeroed). */
static qf_status mk(qf_tensor *t, qf_format_id f, int ndim, const int64_t *shape, const double *v)
{
    qf_encode_opts o = qf_encode_opts_default();
    qf_status s = qf_tensor_init(t, f, ndim, shape);
    if (s != QF_OK)
        return s;
    t->bytes = qf_tensor_dense_bytes(t);
    t->data = calloc(1, t->bytes ? t->bytes : 1);
    if (!t->data)
        return QF_ENOMEM;
    if (v)
        return qf_format_encode_array(qf_format_get(f), v, qf_tensor_numel(t), t->data, &o);
    return QF_OK;
}

static void rm(qf_tensor *t, int n)
{
    int i;
    for (i = 0; i < n; i++) {
        free(t[i].data);
        t[i].data = NULL;
    }
}

/* Call k (first tuple unless dt) in-process. */
static qf_status call(run_ctx *x, const qf_kernel *k, const qf_dtype_tuple *dt, const qf_op_desc *op,
                      qf_tensor *in, qf_tensor *out)
{
    qf_kernel_call c;
    char msg[256] = "";
    void *ctx = k->user;
    qf_status s;
    memset(&c, 0, sizeof c);
    c.abi_version = QF_KERNEL_ABI_VERSION;
    c.kernel = k;
    c.dtype = dt;
    c.op = op;
    c.in = in;
    c.out = out;
    c.threads = 1;
    c.msg = msg;
    c.msg_size = sizeof msg;
    if (k->init && (s = k->init(k, &ctx)) != QF_OK)
        return fail(x->err, x->err_size, s, "kernel %s: init failed", k->name);
    s = k->run(ctx, &c);
    if (k->fini)
        k->fini(ctx);
    if (s != QF_OK)
        return fail(x->err, x->err_size, s, "kernel %s failed: %s", k->name, msg[0] ? msg : qf_status_str(s));
    return QF_OK;
}

/* The kernel for op if it takes this case, else NULL (with a note). */
static const qf_kernel *pick(run_ctx *x, qf_workload_op op, const qf_op_desc *d, const qf_dtype_tuple *dt)
{
    const qf_kernel *k = x->fmt ? x->plan->kernel[op] : NULL;
    char why[256] = "";
    if (!x->fmt) {
        note(x, op, "exact (binary64 correctly rounded reference)");
        return NULL;
    }
    if (!k) {
        note(x, op, "fallback: reference correctly rounded to float32 (no kernel assigned)");
        return NULL;
    }
    if (qf_kernel_check(k, d, dt, why, sizeof why) != QF_OK) {
        note(x, op, "fallback: reference correctly rounded to float32 (%s: %s)", k->name, why);
        return NULL;
    }
    note(x, op, "%s (%s)", k->name, dt->name);
    return k;
}

static const qf_dtype_tuple *gemm_tuple(const qf_workload_plan *p)
{
    const qf_kernel *k = p->kernel[QF_WL_OP_GEMM];
    size_t i;
    if (!k)
        return NULL;
    if (p->gemm_dtype)
        return p->gemm_dtype;
    for (i = 0; i < k->n_dtypes; i++)
        if (k->dtypes[i].out[0] == QF_FLOAT32)
            return &k->dtypes[i];
    return &k->dtypes[0];
}

/* y[m][n] = a[m][k] w[n][k]^T by the reference, rounded into x->fmt. */
static qf_status gemm_ref(run_ctx *x, const double *a, const double *w, size_t m, size_t n, size_t k, double *y)
{
    qf_gemm_desc g = qf_gemm_desc_default();
    g.trans_b = QF_TRANS;
    g.m = m, g.n = n, g.k = k;
    g.a = a, g.lda = k, g.b = w, g.ldb = k;
    g.out = x->fmt;
    g.ldd = n;
    g.d_value = y;
    g.threads = 1;
    return qf_gemm(&g);
}

/* y[m][n] = a[m][k] w[n][k]^T */
static qf_status gemm(run_ctx *x, const double *a, const double *w, size_t m, size_t n, size_t k, double *y)
{
    qf_op_desc d;
    const qf_dtype_tuple *dt = gemm_tuple(x->plan);
    const qf_kernel *ker;
    memset(&d, 0, sizeof d);
    d.op = QF_OP_GEMM;
    d.u.gemm.m = m;
    d.u.gemm.n = n;
    d.u.gemm.k = k;
    d.u.gemm.trans_b = 1;
    d.u.gemm.alpha = 1;
    d.u.gemm.batch = 1;
    ker = dt ? pick(x, QF_WL_OP_GEMM, &d, dt) : pick(x, QF_WL_OP_GEMM, &d, NULL);
    if (!ker) {
        return gemm_ref(x, a, w, m, n, k, y);
    } else {
        const qf_format *fa = qf_format_get(dt->in[0]), *fb = qf_format_get(dt->in[1]);
        int scaled = fa->bits == 8 && fa->kind == QF_KIND_FLOAT && fb->bits == 8 && fb->kind == QF_KIND_FLOAT;
        int64_t sa_[2] = {(int64_t)m, (int64_t)k}, sb_[2] = {(int64_t)n, (int64_t)k}, sd_[2] = {(int64_t)m, (int64_t)n};
        qf_tensor in[QF_KERNEL_MAX_IN], out[QF_KERNEL_MAX_OUT];
        double *sa = NULL, *sw = NULL, *dv = malloc(m * n * sizeof *dv);
        uint32_t *ca = NULL, *cw = NULL;
        size_t i, j;
        qf_status s;
        memset(in, 0, sizeof in);
        memset(out, 0, sizeof out);
        if (!dv)
            return QF_ENOMEM;
        if (scaled) {
            qf_block_fp8_params pa = qf_block_fp8_params_default(), pw;
            pa.granularity = x->plan->fp8_granularity == QF_BLOCK_FP8_TENSOR ? QF_BLOCK_FP8_TENSOR : QF_BLOCK_FP8_ROW;
            pa.elem = dt->in[0];
            pw = pa;
            pw.elem = dt->in[1];
            sa = malloc(m * sizeof *sa), sw = malloc(n * sizeof *sw);
            ca = malloc(m * sizeof *ca), cw = malloc(n * sizeof *cw);
            s = sa && sw && ca && cw ? QF_OK : QF_ENOMEM;
            if (s == QF_OK && (s = mk(&in[0], dt->in[0], 2, sa_, NULL)) == QF_OK &&
                (s = mk(&in[1], dt->in[1], 2, sb_, NULL)) == QF_OK)
                if ((s = qf_block_fp8_scale_quantize(&pa, a, m, k, in[0].data, ca, sa)) == QF_OK)
                    s = qf_block_fp8_scale_quantize(&pw, w, n, k, in[1].data, cw, sw);
        } else {
            s = mk(&in[0], dt->in[0], 2, sa_, a);
            if (s == QF_OK)
                s = mk(&in[1], dt->in[1], 2, sb_, w);
        }
        if (s == QF_OK)
            s = qf_tensor_init(&in[2], dt->in[2], 2, sd_);
        if (s == QF_OK)
            s = mk(&out[0], dt->out[0], 2, sd_, NULL);
        if (s == QF_OK)
            s = call(x, ker, dt, &d, in, out);
        if (s == QF_OK)
            s = qf_format_decode_array(qf_format_get(dt->out[0]), out[0].data, m * n, dv);
        for (i = 0; s == QF_OK && i < m; i++)
            for (j = 0; j < n; j++) {
                double v = dv[i * n + j];
                if (scaled) /* the scales are float32, so their product is exact */
                    v /= sa[x->plan->fp8_granularity == QF_BLOCK_FP8_TENSOR ? 0 : i] *
                         sw[x->plan->fp8_granularity == QF_BLOCK_FP8_TENSOR ? 0 : j];
                y[i * n + j] = (double)(float)v;
            }
        if (s == QF_OK) { /* local error: the exact product of the kernel's own inputs */
            double *aq = malloc(m * k * sizeof *aq), *wq = malloc(n * k * sizeof *wq);
            qf_gemm_desc g = qf_gemm_desc_default();
            s = aq && wq ? QF_OK : QF_ENOMEM;
            if (s == QF_OK && (s = qf_format_decode_array(fa, in[0].data, m * k, aq)) == QF_OK &&
                (s = qf_format_decode_array(fb, in[1].data, n * k, wq)) == QF_OK) {
                g.trans_b = QF_TRANS;
                g.m = m, g.n = n, g.k = k;
                g.a = aq, g.lda = k, g.b = wq, g.ldb = k;
                g.ldd = n;
                g.d_value = dv;
                g.threads = 1;
                s = qf_gemm(&g);
            }
            for (i = 0; s == QF_OK && i < m; i++)
                for (j = 0; j < n; j++)
                    if (scaled)
                        dv[i * n + j] /= sa[x->plan->fp8_granularity == QF_BLOCK_FP8_TENSOR ? 0 : i] *
                                         sw[x->plan->fp8_granularity == QF_BLOCK_FP8_TENSOR ? 0 : j];
            if (s == QF_OK)
                local(x, QF_WL_OP_GEMM, y, dv, m * n);
            free(aq), free(wq);
        }
        rm(in, QF_KERNEL_MAX_IN);
        rm(out, QF_KERNEL_MAX_OUT);
        free(sa), free(sw), free(ca), free(cw), free(dv);
        if (s == QF_EUNSUPPORTED) {
            /* The kernel passed qf_kernel_check but refused the call when
             * it ran (a plugin that takes no transposed B, for one): the
             * same as a refusal up front, a fallback that says why, not
             * an error. */
            note(x, QF_WL_OP_GEMM, "fallback: reference correctly rounded to float32 (%s)",
                 x->err && x->err[0] ? x->err : "the kernel refused the call when run");
            if (x->err)
                x->err[0] = '\0';
            return gemm_ref(x, a, w, m, n, k, y);
        }
        return s;
    }
}

static qf_ref_opts ref_opts(const qf_format *fmt)
{
    qf_ref_opts o = qf_ref_opts_default();
    o.format = fmt;
    o.threads = 1;
    return o;
}

/* The references, rounded into fmt (NULL: binary64). */
static qf_status rmsnorm_ref(const qf_format *fmt, const double *h, const double *wt, size_t rows, size_t cols,
                             double eps, double *y)
{
    qf_ref_opts o = ref_opts(fmt);
    qf_ref_norm_params p = {rows, cols, eps, wt, NULL, 0};
    qf_ref_out out;
    memset(&out, 0, sizeof out);
    out.value = y;
    return qf_ref_rmsnorm(&o, &p, h, &out);
}

static qf_status rope_ref(const qf_format *fmt, const double *t, size_t tokens, size_t heads, size_t hd,
                          double theta, double *y)
{
    qf_ref_opts o = ref_opts(fmt);
    qf_ref_rope_params p;
    qf_ref_out out;
    qf_ref_rope_params_init(&p);
    p.tokens = tokens, p.heads = heads, p.head_dim = hd, p.layout = QF_REF_ROPE_HALF, p.theta = theta;
    memset(&out, 0, sizeof out);
    out.value = y;
    return qf_ref_rope(&o, &p, t, &out);
}

static qf_status attention_ref(const qf_format *fmt, const double *q, const double *k, const double *v, size_t H,
                               size_t KV, size_t S, size_t hd, double *o)
{
    qf_ref_opts o_ = ref_opts(fmt);
    qf_ref_attn_params p;
    qf_ref_out out;
    qf_ref_attn_params_init(&p);
    p.batch = 1, p.heads = H, p.kv_heads = KV, p.seq_q = p.seq_k = S, p.head_dim = hd, p.causal = 1;
    memset(&out, 0, sizeof out);
    out.value = o;
    return qf_ref_attention(&o_, &p, q, k, v, &out, NULL);
}

static qf_status swiglu_ref(const qf_format *fmt, const double *g, const double *u, size_t n, double *y)
{
    qf_ref_opts o = ref_opts(fmt);
    qf_ref_out out;
    memset(&out, 0, sizeof out);
    out.value = y;
    return qf_ref_glu(&o, QF_REF_ACT_SILU, g, u, n, &out);
}

/* Local error of a kernel output y (n elements): against the binary64
 * reference of the same inputs, computed by the caller into a buffer. */
static qf_status local_check(run_ctx *x, qf_workload_op op, const double *y, double *exact, size_t n, qf_status s)
{
    if (s == QF_OK)
        local(x, op, y, exact, n);
    free(exact);
    return s;
}

static qf_status rmsnorm(run_ctx *x, const double *h, const double *wt, size_t rows, size_t cols, double eps,
                         double *y)
{
    qf_op_desc d;
    const qf_kernel *k = x->plan->kernel[QF_WL_OP_RMSNORM];
    memset(&d, 0, sizeof d);
    d.op = QF_OP_RMSNORM;
    d.u.norm.rows = rows;
    d.u.norm.cols = cols;
    d.u.norm.eps = eps;
    if ((k = pick(x, QF_WL_OP_RMSNORM, &d, k ? &k->dtypes[0] : NULL)) != NULL) {
        qf_tensor in[QF_KERNEL_MAX_IN], out[QF_KERNEL_MAX_OUT];
        int64_t s2[2] = {(int64_t)rows, (int64_t)cols}, s1[1] = {(int64_t)cols};
        qf_status s;
        memset(in, 0, sizeof in);
        memset(out, 0, sizeof out);
        if ((s = mk(&in[0], QF_FLOAT32, 2, s2, h)) == QF_OK && (s = mk(&in[1], QF_FLOAT32, 1, s1, wt)) == QF_OK &&
            (s = qf_tensor_init(&in[2], QF_FLOAT32, 1, s1)) == QF_OK && (s = mk(&out[0], QF_FLOAT32, 2, s2, NULL)) == QF_OK &&
            (s = call(x, k, &k->dtypes[0], &d, in, out)) == QF_OK)
            s = qf_format_decode_array(qf_format_get(QF_FLOAT32), out[0].data, rows * cols, y);
        rm(in, QF_KERNEL_MAX_IN);
        rm(out, QF_KERNEL_MAX_OUT);
        if (s == QF_OK) {
            double *e = malloc(rows * cols * sizeof *e);
            s = local_check(x, QF_WL_OP_RMSNORM, y, e, rows * cols, e ? rmsnorm_ref(NULL, h, wt, rows, cols, eps, e) : QF_ENOMEM);
        }
        return s;
    }
    return rmsnorm_ref(x->fmt, h, wt, rows, cols, eps, y);
}

/* In place on t [tokens][heads][hd]. */
static qf_status rope(run_ctx *x, double *t, size_t tokens, size_t heads, size_t hd, double theta)
{
    qf_op_desc d;
    const qf_kernel *k = x->plan->kernel[QF_WL_OP_ROPE];
    size_t n = tokens * heads * hd;
    double *y = malloc(n * sizeof *y);
    qf_status s;
    if (!y)
        return QF_ENOMEM;
    memset(&d, 0, sizeof d);
    d.op = QF_OP_ROPE;
    d.u.rope.tokens = tokens;
    d.u.rope.heads = heads;
    d.u.rope.head_dim = hd;
    d.u.rope.layout = QF_REF_ROPE_HALF;
    d.u.rope.theta = theta;
    if ((k = pick(x, QF_WL_OP_ROPE, &d, k ? &k->dtypes[0] : NULL)) != NULL) {
        qf_tensor in[QF_KERNEL_MAX_IN], out[QF_KERNEL_MAX_OUT];
        int64_t s3[3] = {(int64_t)tokens, (int64_t)heads, (int64_t)hd};
        memset(in, 0, sizeof in);
        memset(out, 0, sizeof out);
        if ((s = mk(&in[0], QF_FLOAT32, 3, s3, t)) == QF_OK && (s = mk(&out[0], QF_FLOAT32, 3, s3, NULL)) == QF_OK &&
            (s = call(x, k, &k->dtypes[0], &d, in, out)) == QF_OK)
            s = qf_format_decode_array(qf_format_get(QF_FLOAT32), out[0].data, n, y);
        rm(in, QF_KERNEL_MAX_IN);
        rm(out, QF_KERNEL_MAX_OUT);
        if (s == QF_OK) {
            double *e = malloc(n * sizeof *e);
            s = local_check(x, QF_WL_OP_ROPE, y, e, n, e ? rope_ref(NULL, t, tokens, heads, hd, theta, e) : QF_ENOMEM);
        }
    } else {
        s = rope_ref(x->fmt, t, tokens, heads, hd, theta, y);
    }
    if (s == QF_OK)
        memcpy(t, y, n * sizeof *y);
    free(y);
    return s;
}

/* q [H][S][hd], k, v [KV][S][hd] -> o [H][S][hd], causal. */
static qf_status attention(run_ctx *x, const double *q, const double *k_, const double *v, size_t H, size_t KV,
                           size_t S, size_t hd, double *o)
{
    qf_op_desc d;
    const qf_kernel *k = x->plan->kernel[QF_WL_OP_ATTENTION];
    memset(&d, 0, sizeof d);
    d.op = QF_OP_ATTENTION;
    d.u.attention.batch = 1;
    d.u.attention.heads = H;
    d.u.attention.kv_heads = KV;
    d.u.attention.seq_q = d.u.attention.seq_k = S;
    d.u.attention.head_dim = hd;
    d.u.attention.mask = QF_MASK_CAUSAL;
    d.u.attention.window_left = d.u.attention.window_right = -1;
    if ((k = pick(x, QF_WL_OP_ATTENTION, &d, k ? &k->dtypes[0] : NULL)) != NULL) {
        qf_tensor in[QF_KERNEL_MAX_IN], out[QF_KERNEL_MAX_OUT];
        int64_t sq[4] = {1, (int64_t)H, (int64_t)S, (int64_t)hd}, sk[4] = {1, (int64_t)KV, (int64_t)S, (int64_t)hd};
        int64_t sl[3] = {1, (int64_t)H, (int64_t)S};
        qf_status s;
        memset(in, 0, sizeof in);
        memset(out, 0, sizeof out);
        if ((s = mk(&in[0], QF_FLOAT32, 4, sq, q)) == QF_OK && (s = mk(&in[1], QF_FLOAT32, 4, sk, k_)) == QF_OK &&
            (s = mk(&in[2], QF_FLOAT32, 4, sk, v)) == QF_OK && (s = qf_tensor_init(&in[3], QF_FLOAT32, 4, sq)) == QF_OK &&
            (s = mk(&out[0], QF_FLOAT32, 4, sq, NULL)) == QF_OK && (s = qf_tensor_init(&out[1], QF_FLOAT32, 3, sl)) == QF_OK &&
            (s = call(x, k, &k->dtypes[0], &d, in, out)) == QF_OK)
            s = qf_format_decode_array(qf_format_get(QF_FLOAT32), out[0].data, H * S * hd, o);
        rm(in, QF_KERNEL_MAX_IN);
        rm(out, QF_KERNEL_MAX_OUT);
        if (s == QF_OK) {
            double *e = malloc(H * S * hd * sizeof *e);
            s = local_check(x, QF_WL_OP_ATTENTION, o, e, H * S * hd,
                            e ? attention_ref(NULL, q, k_, v, H, KV, S, hd, e) : QF_ENOMEM);
        }
        return s;
    }
    return attention_ref(x->fmt, q, k_, v, H, KV, S, hd, o);
}

/* y = silu(g) * u elementwise, [rows][cols]. */
static qf_status swiglu(run_ctx *x, const double *g, const double *u, size_t rows, size_t cols, double *y)
{
    qf_op_desc d;
    const qf_kernel *k = x->plan->kernel[QF_WL_OP_ACTIVATION];
    memset(&d, 0, sizeof d);
    d.op = QF_OP_ACTIVATION;
    d.u.activation.n = rows * cols;
    d.u.activation.act = QF_REF_ACT_SILU;
    d.u.activation.glu = 1;
    if ((k = pick(x, QF_WL_OP_ACTIVATION, &d, k ? &k->dtypes[0] : NULL)) != NULL) {
        qf_tensor in[QF_KERNEL_MAX_IN], out[QF_KERNEL_MAX_OUT];
        int64_t s2[2] = {(int64_t)rows, (int64_t)cols};
        qf_status s;
        memset(in, 0, sizeof in);
        memset(out, 0, sizeof out);
        if ((s = mk(&in[0], QF_FLOAT32, 2, s2, g)) == QF_OK && (s = mk(&in[1], QF_FLOAT32, 2, s2, u)) == QF_OK &&
            (s = mk(&out[0], QF_FLOAT32, 2, s2, NULL)) == QF_OK && (s = call(x, k, &k->dtypes[0], &d, in, out)) == QF_OK)
            s = qf_format_decode_array(qf_format_get(QF_FLOAT32), out[0].data, rows * cols, y);
        rm(in, QF_KERNEL_MAX_IN);
        rm(out, QF_KERNEL_MAX_OUT);
        if (s == QF_OK) {
            double *e = malloc(rows * cols * sizeof *e);
            s = local_check(x, QF_WL_OP_ACTIVATION, y, e, rows * cols, e ? swiglu_ref(NULL, g, u, rows * cols, e) : QF_ENOMEM);
        }
        return s;
    }
    return swiglu_ref(x->fmt, g, u, rows * cols, y);
}

void qf_workload_trace_free(qf_workload_trace *t)
{
    if (!t)
        return;
    free(t->hidden);
    free(t->final);
    free(t->logits);
    memset(t, 0, sizeof *t);
}

qf_status qf_workload_run(const qf_workload_config *c, const qf_workload_weights *w, const int64_t *tokens,
                          const qf_workload_plan *plan, qf_workload_trace *tr, char *err, size_t err_size)
{
    size_t S = c->seq, D = c->dim, H = c->heads, KV = c->kv_heads, hd = c->dim / c->heads, F = c->ffn, V = c->vocab;
    size_t l, i, j, t, hh;
    double *h = NULL, *a, *q, *k, *v, *qh, *kh, *vh, *att, *o, *g, *u, *m, *buf;
    run_ctx x;
    qf_status s = QF_OK;
    if (!c || !w || !tokens || !plan || !tr)
        return QF_EINVAL;
    if ((s = qf_workload_config_check(c, err, err_size)) != QF_OK)
        return s;
    for (t = 0; t < S; t++)
        if (tokens[t] < 0 || (uint64_t)tokens[t] >= V)
            return fail(err, err_size, QF_EINVAL, "token %lld at position %zu is outside the vocabulary [0, %zu)",
                        (long long)tokens[t], t, V);
    memset(tr, 0, sizeof *tr);
    tr->layers = c->layers, tr->seq = S, tr->dim = D, tr->vocab = V;
    tr->hidden = malloc(c->layers * S * D * sizeof *tr->hidden);
    tr->final = malloc(S * D * sizeof *tr->final);
    tr->logits = malloc(S * V * sizeof *tr->logits);
    /* one allocation for the work arrays */
    buf = malloc((2 * S * D + 2 * S * H * hd + 4 * S * KV * hd + 2 * S * H * hd + S * D + 3 * S * F) * sizeof *buf);
    if (!tr->hidden || !tr->final || !tr->logits || !buf) {
        free(buf);
        qf_workload_trace_free(tr);
        return QF_ENOMEM;
    }
    h = buf;
    a = h + S * D;
    q = a + S * D;
    qh = q + S * H * hd;
    k = qh + S * H * hd;
    v = k + S * KV * hd;
    kh = v + S * KV * hd;
    vh = kh + S * KV * hd;
    att = vh + S * KV * hd;
    o = att + S * H * hd;
    g = o + S * H * hd;
    u = g + S * F;
    m = u + S * F;
    (void)o;
    x.plan = plan;
    x.fmt = plan->exact ? NULL : qf_format_get(QF_FLOAT32);
    x.tr = tr;
    x.err = err;
    x.err_size = err_size;
    memset(x.e2, 0, sizeof x.e2);
    memset(x.r2, 0, sizeof x.r2);
    for (t = 0; t < S; t++)
        for (j = 0; j < D; j++)
            h[t * D + j] = rnd(&x, w->embed[(size_t)tokens[t] * D + j]);
    for (l = 0; l < c->layers && s == QF_OK; l++) {
        double *const *L = &w->layer[l * QF_WL_PER_LAYER];
        if ((s = rmsnorm(&x, h, L[QF_WL_ATTN_NORM], S, D, c->eps, a)) != QF_OK ||
            (s = gemm(&x, a, L[QF_WL_WQ], S, H * hd, D, q)) != QF_OK ||
            (s = gemm(&x, a, L[QF_WL_WK], S, KV * hd, D, k)) != QF_OK ||
            (s = gemm(&x, a, L[QF_WL_WV], S, KV * hd, D, v)) != QF_OK ||
            (s = rope(&x, q, S, H, hd, c->rope_theta)) != QF_OK || (s = rope(&x, k, S, KV, hd, c->rope_theta)) != QF_OK)
            break;
        /* [S][heads][hd] -> [heads][S][hd] */
        for (t = 0; t < S; t++)
            for (hh = 0; hh < H; hh++)
                memcpy(&qh[(hh * S + t) * hd], &q[(t * H + hh) * hd], hd * sizeof *q);
        for (t = 0; t < S; t++)
            for (hh = 0; hh < KV; hh++) {
                memcpy(&kh[(hh * S + t) * hd], &k[(t * KV + hh) * hd], hd * sizeof *k);
                memcpy(&vh[(hh * S + t) * hd], &v[(t * KV + hh) * hd], hd * sizeof *v);
            }
        if ((s = attention(&x, qh, kh, vh, H, KV, S, hd, att)) != QF_OK)
            break;
        for (t = 0; t < S; t++)
            for (hh = 0; hh < H; hh++)
                memcpy(&q[(t * H + hh) * hd], &att[(hh * S + t) * hd], hd * sizeof *q);
        if ((s = gemm(&x, q, L[QF_WL_WO], S, D, H * hd, a)) != QF_OK)
            break;
        for (i = 0; i < S * D; i++) /* residual add: one rounding (float32, or none in binary64) */
            h[i] = rnd(&x, h[i] + a[i]);
        if ((s = rmsnorm(&x, h, L[QF_WL_MLP_NORM], S, D, c->eps, a)) != QF_OK ||
            (s = gemm(&x, a, L[QF_WL_WG], S, F, D, g)) != QF_OK || (s = gemm(&x, a, L[QF_WL_WU], S, F, D, u)) != QF_OK ||
            (s = swiglu(&x, g, u, S, F, m)) != QF_OK || (s = gemm(&x, m, L[QF_WL_WD], S, D, F, a)) != QF_OK)
            break;
        for (i = 0; i < S * D; i++)
            h[i] = rnd(&x, h[i] + a[i]);
        memcpy(&tr->hidden[l * S * D], h, S * D * sizeof *h);
    }
    if (s == QF_OK && (s = rmsnorm(&x, h, w->final_norm, S, D, c->eps, tr->final)) == QF_OK)
        s = gemm(&x, tr->final, w->lm_head, S, V, D, tr->logits);
    free(buf);
    for (i = 0; i < QF_WL_OP_COUNT; i++)
        tr->local[i] = x.r2[i] > 0 ? sqrt(x.e2[i] / x.r2[i]) : x.e2[i] > 0 ? INFINITY : NAN;
    if (s != QF_OK) {
        if (err && !*err)
            fail(err, err_size, s, "forward pass failed: %s", qf_status_str(s));
        qf_workload_trace_free(tr);
    }
    return s;
}

/* ---- Comparison ---------------------------------------------------------- */

static qf_workload_err cmp(const double *ref, const double *got, size_t n)
{
    qf_dot_acc r2, e2;
    qf_workload_err e = {0, 0};
    size_t i;
    double nr, ne;
    qf_dot_acc_init(&r2);
    qf_dot_acc_init(&e2);
    for (i = 0; i < n; i++) {
        double d = got[i] - ref[i];
        if (!isfinite(got[i]) || !isfinite(d)) {
            e.normwise = e.max_abs = INFINITY;
            return e;
        }
        qf_dot_acc_add_product(&r2, ref[i], ref[i]);
        qf_dot_acc_add_product(&e2, d, d);
        if (fabs(d) > e.max_abs)
            e.max_abs = fabs(d);
    }
    nr = qf_dot_acc_get_d(&r2, QF_ROUND_RNE);
    ne = qf_dot_acc_get_d(&e2, QF_ROUND_RNE);
    e.normwise = ne == 0 ? 0 : nr > 0 ? sqrt(ne / nr) : INFINITY;
    return e;
}

/* log-softmax of one row into lp. */
static void log_softmax(const double *z, size_t n, double *lp)
{
    double mx = -INFINITY, sum = 0, lse;
    size_t i;
    for (i = 0; i < n; i++)
        if (z[i] > mx)
            mx = z[i];
    for (i = 0; i < n; i++)
        sum += exp(z[i] - mx);
    lse = mx + log(sum);
    for (i = 0; i < n; i++)
        lp[i] = z[i] - lse;
}

static size_t argmax(const double *z, size_t n)
{
    size_t i, best = 0;
    for (i = 1; i < n; i++)
        if (z[i] > z[best])
            best = i;
    return best;
}

void qf_workload_cmp_free(qf_workload_cmp *c)
{
    if (c) {
        free(c->layer);
        memset(c, 0, sizeof *c);
    }
}

qf_status qf_workload_compare(const qf_workload_trace *ref, const qf_workload_trace *got, qf_workload_cmp *out)
{
    size_t l, t, i, S, V, agree = 0;
    double *lp, *lq;
    if (!ref || !got || !out || ref->layers != got->layers || ref->seq != got->seq || ref->dim != got->dim ||
        ref->vocab != got->vocab)
        return QF_EINVAL;
    S = ref->seq;
    V = ref->vocab;
    memset(out, 0, sizeof *out);
    out->layers = ref->layers;
    out->layer = calloc(ref->layers, sizeof *out->layer);
    lp = malloc(V * sizeof *lp);
    lq = malloc(V * sizeof *lq);
    if (!out->layer || !lp || !lq) {
        free(lp), free(lq);
        qf_workload_cmp_free(out);
        return QF_ENOMEM;
    }
    for (l = 0; l < ref->layers; l++)
        out->layer[l] = cmp(&ref->hidden[l * S * ref->dim], &got->hidden[l * S * ref->dim], S * ref->dim);
    out->final = cmp(ref->final, got->final, S * ref->dim);
    out->logits = cmp(ref->logits, got->logits, S * V);
    for (t = 0; t < S; t++) {
        double kl = 0;
        const double *zr = &ref->logits[t * V], *zg = &got->logits[t * V];
        log_softmax(zr, V, lp);
        log_softmax(zg, V, lq);
        for (i = 0; i < V; i++)
            if (lp[i] > -INFINITY)
                kl += exp(lp[i]) * (lp[i] - lq[i]);
        if (!(kl >= 0)) /* NaN from a non-finite logit: as bad as it gets */
            kl = isnan(kl) ? INFINITY : 0;
        out->kl_mean += kl / (double)S;
        if (kl > out->kl_max)
            out->kl_max = kl;
        agree += argmax(zr, V) == argmax(zg, V);
    }
    out->top1 = (double)agree / (double)S;
    free(lp), free(lq);
    return QF_OK;
}
