/* runner.c: the isolated runner: plan, worker processes, kernel child with
 * poison, canaries and a time limit, reference, metrics, bound, verdict,
 * journal (qf_runner.h, docs/runner.md). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "qf_suite.h"

#include "_runner_device.h"
#include "_runner_range.h"
#include "_runner_scaled.h"

#include "qf_backend.h"
#include "qf_block.h"
#include "qf_bound.h"
#include "qf_dot.h"
#include "qf_inputs.h"
#include "qf_kernel.h"
#include "qf_metrics.h"
#include "qf_ref.h"
#include "qf_result.h"
#include "qf_runner.h"
#include "qf_verdict.h"

#define CANARY_BYTES 4096
#define CANARY_BYTE  0xCD
/* Two runs into two differently poisoned buffers: an element that still
 * holds its run's poison in BOTH runs was never written (a kernel cannot
 * write 0xA5.. in one run and 0x5A.. in the other deterministically; a
 * nondeterministic one is caught by the bitwise comparison instead). */
static const unsigned char poison[2] = {0xA5, 0x5A};

static void errf(char *err, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void errf(char *err, size_t size, const char *fmt, ...)
{
    va_list ap;
    if (!err || !size)
        return;
    va_start(ap, fmt);
    vsnprintf(err, size, fmt, ap);
    va_end(ap);
}

static void say(qf_result *r, qf_verdict v, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(qf_result *r, qf_verdict v, const char *fmt, ...)
{
    va_list ap;
    r->verdict = v;
    va_start(ap, fmt);
    vsnprintf(r->reason, sizeof r->reason, fmt, ap);
    va_end(ap);
}

qf_runner_opts qf_runner_opts_default(void)
{
    qf_runner_opts o;
    memset(&o, 0, sizeof o);
    o.jobs = 1;
    o.timeout_s = 60;
    return o;
}

void qf_runner_summary_free(qf_runner_summary *s)
{
    if (!s)
        return;
    free(s->results);
    memset(s, 0, sizeof *s);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- Shared memory ------------------------------------------------------- */

static void *shm_alloc(size_t bytes)
{
    void *p = mmap(NULL, bytes ? bytes : 1, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* One guarded output buffer: [canary page][data][canary to the page end and
 * one more page].  The data start is page-aligned and the tail canary starts
 * at the first byte past the data, so a one-element overrun lands in it. */
typedef struct guarded {
    unsigned char *map;
    size_t map_bytes, bytes;
    unsigned char *data;
} guarded;

static int guarded_alloc(guarded *g, size_t bytes, unsigned char fill)
{
    size_t pg = CANARY_BYTES, body = (bytes + pg - 1) / pg * pg;
    g->bytes = bytes;
    g->map_bytes = pg + body + pg;
    g->map = shm_alloc(g->map_bytes);
    if (!g->map)
        return -1;
    memset(g->map, CANARY_BYTE, g->map_bytes);
    g->data = g->map + pg;
    memset(g->data, fill, bytes);
    return 0;
}

static void guarded_free(guarded *g)
{
    if (g->map)
        munmap(g->map, g->map_bytes);
    g->map = NULL;
}

/* Offset of the first clobbered canary byte: < 0 before the data, > 0 past
 * its end (1-based), 0 when intact. */
static long guarded_check(const guarded *g)
{
    size_t i;
    for (i = 0; i < CANARY_BYTES; i++)
        if (g->map[i] != CANARY_BYTE)
            return -(long)(CANARY_BYTES - i);
    for (i = CANARY_BYTES + g->bytes; i < g->map_bytes; i++)
        if (g->map[i] != CANARY_BYTE)
            return (long)(i - CANARY_BYTES - g->bytes) + 1;
    return 0;
}

/* What the kernel child reports back. */
typedef struct child_report {
    volatile int done;
    int status; /* qf_status of the run function */
    char msg[256];
    uint32_t global_code[2]; /* quantize: the tensor's global scale code after each run */
    double times[1024];
    size_t ntimes;
} child_report;

/* ---- Per-case preparation ------------------------------------------------ */

#define MAX_SLOTS 4

typedef struct prep {
    const qf_suite_case *c;
    const char *opname; /* suite op name */
    qf_op_desc op;
    const qf_kernel *k;
    const qf_dtype_tuple *t;
    /* inputs */
    int nin;
    qf_tensor in[QF_KERNEL_MAX_IN];
    double *inval[QF_KERNEL_MAX_IN]; /* decoded values (reference input) */
    void *incode[QF_KERNEL_MAX_IN];
    /* output (slot 0 only: every op the runner drives has one) */
    int nout;
    qf_tensor out[QF_KERNEL_MAX_OUT];
    const qf_format *outf;
    size_t out_n, rows, cols; /* output as rows x cols (batch folded into rows) */
    guarded g[2];             /* run 0 and run 1 */
    /* A second output (attention lse, moe_router indices): its element
     * count (0: none driven), bytes per element, and buffers per run. */
    size_t out1_n;
    int out1_eb;
    const qf_format *outf1; /* NULL for index tensors */
    guarded g1[2];
    char fail1[256];         /* the reference found the second output wrong (moe indices) */
    int out1_is_scale;       /* quantize: the second buffer is out[0].scale.data */
    uint32_t global_code[2]; /* quantize nvfp4: out[0].scale.global_code of each run */
    _qf_rs_recipe recipe;    /* gemm operand scaling (_runner_scaled.h); QF_RS_NONE: unscaled */
    size_t group;            /* recipe group: the group size along K */
    void *inscale[2];        /* scale codes of a and b beyond per_tensor */
    uint32_t in_scale[2];    /* the float32 scale codes of a and b (value = decode(code) * scale) */
    uint64_t seed;
    /* The policy's baseline kernel and the tuple it serves the case with
     * (NULL when the policy names none). */
    const qf_kernel *bk;
    const qf_dtype_tuple *bt;
} prep;

static void prep_free(prep *p)
{
    int i;
    for (i = 0; i < QF_KERNEL_MAX_IN; i++) {
        free(p->inval[i]);
        free(p->incode[i]);
    }
    free(p->inscale[0]);
    free(p->inscale[1]);
    guarded_free(&p->g[0]);
    guarded_free(&p->g[1]);
    guarded_free(&p->g1[0]);
    guarded_free(&p->g1[1]);
}

static int fmt_eq(const qf_format *f, qf_format_id id)
{
    return f && f->id == id;
}

static const qf_format *role(const qf_suite_case *c, const char *name)
{
    return qf_suite_case_format(c, name);
}

static double param_real(const qf_suite_case *c, const char *key, double dflt)
{
    qf_suite_value v;
    int is_default;
    if (qf_suite_case_param(c, key, &v, &is_default) != QF_OK)
        return dflt;
    return v.type == QF_PARAM_INT || v.type == QF_PARAM_BOOL ? (double)v.i : v.r;
}

/* Does tuple t serve the case's dtype roles? */
static int tuple_matches(const char *op, const qf_suite_case *c, const qf_dtype_tuple *t)
{
    const qf_format *acc = role(c, "acc"), *out = role(c, "out");
    if (!fmt_eq(out, t->out[0]) || (acc && !fmt_eq(acc, t->arith.acc_format)))
        return 0;
    if (!strcmp(op, "gemm")) {
        /* The case's scaling must be the tuple's (runner_scaled.c). */
        if (!_qf_rs_tuple_matches(_qf_rs_recipe_of(c->dtype->scale), (size_t)param_real(c, "group_size", 128),
                                  t))
            return 0;
        return fmt_eq(role(c, "a"), t->in[0]) && fmt_eq(role(c, "b"), t->in[1]);
    }
    if (!strcmp(op, "rmsnorm") || !strcmp(op, "layernorm"))
        return fmt_eq(role(c, "in"), t->in[0]) && fmt_eq(role(c, "weight"), t->in[1]);
    if (!strcmp(op, "attention"))
        return fmt_eq(role(c, "q"), t->in[0]) && fmt_eq(role(c, "k"), t->in[1]) &&
               fmt_eq(role(c, "v"), t->in[2]);
    return fmt_eq(role(c, "in"), t->in[0]);
}

/* quantize: the block parameters from the suite's params and the out
 * role (the element format).  Stochastic rounding (the kernel would need
 * the reference's random stream) and asymmetric groups (zero points are
 * not carried back yet) are UNSUPPORTED. */
static int build_quantize(prep *p, qf_result *r)
{
    const qf_suite_case *c = p->c;
    qf_op_quantize *q = &p->op.u.quantize;
    qf_ref_block_params *bp = &q->block;
    const qf_format *out = role(c, "out");
    qf_suite_value v;
    int dflt;
    qf_ref_block_family fam = QF_REF_BLOCK_MX;
    qf_round rnd = QF_ROUND_RNE;
    size_t block = (size_t)param_real(c, "block", 0);
    p->op.op = QF_OP_QUANTIZE;
    q->rows = c->dims[0];
    q->cols = c->dims[1];
    p->rows = q->rows;
    p->cols = q->cols;
    if (qf_suite_case_param(c, "family", &v, &dflt) == QF_OK && v.s) {
        if (!strcmp(v.s, "nvfp4"))
            fam = QF_REF_BLOCK_NVFP4;
        else if (!strcmp(v.s, "group"))
            fam = QF_REF_BLOCK_GROUP;
        else if (!strcmp(v.s, "fp8"))
            fam = QF_REF_BLOCK_FP8;
    }
    if (qf_suite_case_param(c, "round", &v, &dflt) == QF_OK && v.s && qf_round_lookup(v.s, &rnd) != QF_OK) {
        say(r, QF_VERDICT_UNSUPPORTED, "unsupported: quantize: unknown rounding '%s'", v.s);
        return -1;
    }
    if (rnd == QF_ROUND_STOCHASTIC) {
        say(r, QF_VERDICT_UNSUPPORTED,
            "unsupported: quantize: stochastic rounding has no exact expectation the runner can check");
        return -1;
    }
    qf_ref_block_params_init(bp, fam);
    if (!out) {
        say(r, QF_VERDICT_UNSUPPORTED, "unsupported: quantize: no out format");
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
            say(r, QF_VERDICT_UNSUPPORTED, "unsupported: quantize: unknown scale_rule '%s'", v.s);
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
        if (param_real(c, "symmetric", 1) == 0) {
            say(r, QF_VERDICT_UNSUPPORTED,
                "unsupported: quantize: asymmetric groups (zero points) are not driven by the runner yet");
            return -1;
        }
        break;
    case QF_REF_BLOCK_FP8:
        bp->fp8.elem = out->id;
        bp->fp8.round = rnd;
        bp->fp8.saturate = param_real(c, "saturate", 1) != 0;
        break;
    }
    return 0;
}

/* Build the op descriptor from the case; 0, or -1 with reason in r. */
static int build_op(prep *p, qf_result *r)
{
    const qf_suite_case *c = p->c;
    const char *op = p->opname;
    memset(&p->op, 0, sizeof p->op);
    if (!strcmp(op, "gemm")) {
        qf_op_gemm *g = &p->op.u.gemm;
        p->op.op = QF_OP_GEMM;
        g->m = c->dims[0];
        g->n = c->dims[1];
        g->k = c->dims[2];
        g->batch = c->ndims > 3 && c->dims[3] ? c->dims[3] : 1;
        g->trans_a = param_real(c, "trans_a", 0) != 0;
        g->trans_b = param_real(c, "trans_b", 0) != 0;
        g->alpha = param_real(c, "alpha", 1);
        g->beta = param_real(c, "beta", 0);
        p->recipe = _qf_rs_recipe_of(c->dtype->scale);
        p->group = (size_t)param_real(c, "group_size", 128);
        if (p->recipe != QF_RS_NONE) {
            if (p->recipe == QF_RS_UNKNOWN) {
                say(r, QF_VERDICT_UNSUPPORTED,
                    "unsupported: the runner drives scaled GEMM with per_tensor, per_channel, mx, nvfp4 and "
                    "group scales, not %s",
                    c->dtype->scale);
                return -1;
            }
            if (g->beta != 0) {
                say(r, QF_VERDICT_UNSUPPORTED, "unsupported: scaled GEMM with beta != 0 is not driven yet");
                return -1;
            }
        }
        p->rows = g->batch * g->m;
        p->cols = g->n;
        return 0;
    }
    if (!strcmp(op, "softmax") || !strcmp(op, "log_softmax")) {
        p->op.op = QF_OP_SOFTMAX;
        p->op.u.softmax.rows = c->dims[0];
        p->op.u.softmax.cols = c->dims[1];
        p->op.u.softmax.scale = 1;
        p->op.u.softmax.log = !strcmp(op, "log_softmax");
        p->rows = c->dims[0];
        p->cols = c->dims[1];
        return 0;
    }
    if (!strcmp(op, "rmsnorm") || !strcmp(op, "layernorm")) {
        p->op.op = !strcmp(op, "rmsnorm") ? QF_OP_RMSNORM : QF_OP_LAYERNORM;
        p->op.u.norm.rows = c->dims[0];
        p->op.u.norm.cols = c->dims[1];
        p->op.u.norm.eps = param_real(c, "eps", 1e-6);
        p->op.u.norm.weight_offset = param_real(c, "weight_offset", 0);
        p->rows = c->dims[0];
        p->cols = c->dims[1];
        return 0;
    }
    if (!strcmp(op, "activation") || !strcmp(op, "glu")) {
        qf_suite_value v;
        int dflt;
        p->op.op = QF_OP_ACTIVATION;
        p->op.u.activation.n = c->dims[0] * c->dims[1];
        p->op.u.activation.glu = !strcmp(op, "glu");
        if (qf_suite_case_param(c, "fn", &v, &dflt) != QF_OK || !v.s ||
            qf_ref_act_lookup(v.s, &p->op.u.activation.act) != QF_OK) {
            say(r, QF_VERDICT_UNSUPPORTED, "unsupported: %s: unknown activation fn '%s'", op,
                v.s ? v.s : "(none)");
            return -1;
        }
        p->rows = c->dims[0];
        p->cols = c->dims[1];
        return 0;
    }
    if (!strcmp(op, "rope")) {
        qf_op_rope *ro = &p->op.u.rope;
        qf_suite_value v;
        int dflt;
        p->op.op = QF_OP_ROPE;
        ro->tokens = c->dims[0];
        ro->heads = c->dims[1];
        ro->head_dim = c->dims[2];
        ro->rotary_dim = (size_t)param_real(c, "rotary_dim", 0);
        ro->theta = param_real(c, "theta", 10000);
        ro->pos_offset = (int64_t)param_real(c, "pos_offset", 0);
        ro->layout = qf_suite_case_param(c, "layout", &v, &dflt) == QF_OK && v.s && !strcmp(v.s, "half")
                         ? QF_REF_ROPE_HALF
                         : QF_REF_ROPE_INTERLEAVED;
        p->rows = ro->tokens * ro->heads; /* one row per (token, head) */
        p->cols = ro->head_dim;
        return 0;
    }
    if (!strcmp(op, "attention")) {
        qf_op_attention *a = &p->op.u.attention;
        long window = (long)param_real(c, "window", -1);
        int bottom = param_real(c, "align_bottom_right", 0) != 0;
        p->op.op = QF_OP_ATTENTION;
        a->batch = c->dims[0] ? c->dims[0] : 1;
        a->heads = c->dims[1];
        a->kv_heads = c->dims[2] ? c->dims[2] : a->heads;
        a->seq_q = c->dims[3];
        a->seq_k = c->dims[4] ? c->dims[4] : a->seq_q;
        a->head_dim = c->dims[5];
        a->head_dim_v = c->dims[6] ? c->dims[6] : a->head_dim;
        a->scale = param_real(c, "scale", 0);
        a->softcap = param_real(c, "softcap", 0);
        a->causal = param_real(c, "causal", 0) != 0;
        a->window_left = window;
        a->window_right = a->causal ? 0 : -1;
        if (window >= 0) {
            if (bottom) {
                say(r, QF_VERDICT_UNSUPPORTED,
                    "unsupported: attention: a window with align_bottom_right has no qf_op_attention form");
                return -1;
            }
            a->mask = QF_MASK_WINDOW;
        } else if (a->causal) {
            a->mask = bottom ? QF_MASK_CAUSAL_BOTTOM_RIGHT : QF_MASK_CAUSAL;
        } else {
            a->mask = QF_MASK_NONE;
        }
        if (a->kv_heads == 0 || a->heads % a->kv_heads) {
            say(r, QF_VERDICT_UNSUPPORTED, "unsupported: attention: heads %zu not a multiple of kv_heads %zu",
                a->heads, a->kv_heads);
            return -1;
        }
        p->rows = a->batch * a->heads * a->seq_q;
        p->cols = a->head_dim_v;
        return 0;
    }
    if (!strcmp(op, "moe_router")) {
        qf_op_moe_router *m = &p->op.u.moe_router;
        qf_suite_value v;
        int dflt;
        p->op.op = QF_OP_MOE_ROUTER;
        m->tokens = c->dims[0];
        m->experts = c->dims[1];
        m->top_k = (size_t)param_real(c, "top_k", 1);
        m->score = qf_suite_case_param(c, "score", &v, &dflt) == QF_OK && v.s && !strcmp(v.s, "sigmoid")
                       ? QF_REF_ROUTER_SIGMOID
                       : QF_REF_ROUTER_SOFTMAX;
        m->renormalize = param_real(c, "renormalize", 0) != 0;
        m->route_scale = param_real(c, "route_scale", 1);
        p->rows = m->tokens;
        p->cols = m->top_k;
        return 0;
    }
    if (!strcmp(op, "quantize"))
        return build_quantize(p, r);
    say(r, QF_VERDICT_UNSUPPORTED,
        "unsupported: the runner does not drive op '%s' yet (it drives gemm without scales, softmax, "
        "log_softmax, rmsnorm, layernorm, activation, glu, rope, attention, moe_router, quantize)",
        op);
    return -1;
}

/* The case's distribution as a qf_dist. */
static qf_status case_dist(const qf_suite_input *in, qf_dist *d, char *err, size_t err_size)
{
    size_t i;
    qf_status s = qf_dist_lookup(in->name, d, err, err_size);
    if (s != QF_OK)
        return s;
    for (i = 0; i < in->nparams; i++) {
        /* The suite's parameter names (docs/suites.md) where qf_dist's
         * differ (docs/inputs.md); near_saturation's level is the lower end
         * of |x| / max. */
        static const char *const alias[][2] = {
            {"low", "lo"}, {"high", "hi"}, {"max", "int_max"}, {"level", "lo"}};
        const char *key = in->keys[i];
        char v[64];
        size_t a;
        for (a = 0; a < sizeof alias / sizeof alias[0]; a++)
            if (!strcmp(key, alias[a][0]) && qf_dist_set(d, key, "0", NULL, 0) != QF_OK)
                key = alias[a][1];
        /* The text as written (a number in its shortest exact form, or a
         * word such as tail: lognormal) is what qf_dist_set() reads. */
        if (in->texts && in->texts[i])
            snprintf(v, sizeof v, "%s", in->texts[i]);
        else
            snprintf(v, sizeof v, "%.17g", in->values[i]);
        s = qf_dist_set(d, key, v, err, err_size);
        if (s != QF_OK)
            return s;
    }
    if (in->path)
        snprintf(d->path, sizeof d->path, "%s", in->path);
    if (in->tensor)
        snprintf(d->tensor, sizeof d->tensor, "%s", in->tensor);
    return QF_OK;
}

/* Generate input slot `slot` as rows x cols of the tuple's format. */
static int gen_input(prep *p, qf_result *r, int slot, const qf_dist *d, int ndim, const int64_t *shape,
                     size_t rows, size_t cols)
{
    const qf_format *f = qf_format_get(p->t->in[slot]);
    char err[256];
    size_t n = rows * cols;
    qf_status s;
    if (!f) {
        say(r, QF_VERDICT_UNSUPPORTED, "unsupported: input slot %d has no valid format", slot);
        return -1;
    }
    p->inval[slot] = malloc((n ? n : 1) * sizeof(double));
    p->incode[slot] = malloc(qf_format_array_bytes(f, n ? n : 1) + 8);
    if (!p->inval[slot] || !p->incode[slot]) {
        say(r, QF_VERDICT_MISTRUSTED, "out of memory generating inputs");
        return -1;
    }
    /* The chunk entry point runs in this thread only: the worker must not
     * start OpenMP threads before it forks the kernel child. */
    s = qf_inputs_generate_rows(d, p->seed, (uint64_t)slot, f, NULL, rows, cols, 0, rows, p->inval[slot],
                                p->incode[slot], err, sizeof err);
    if (s != QF_OK) {
        say(r, QF_VERDICT_UNSUPPORTED, "unsupported: input %s: %s", qf_op_slot_name(p->op.op, 0, slot), err);
        return -1;
    }
    qf_tensor_init(&p->in[slot], f->id, ndim, shape);
    p->in[slot].data = p->incode[slot];
    p->in[slot].bytes = qf_format_array_bytes(f, n);
    return 0;
}

/* The scale part of quantize's output q: kind, format and count, stored
 * in the scale format's storage bits (e8m0 / e4m3 one byte, fp16 / bf16
 * two, float32 four) in a guarded buffer of its own. */
static int quantize_scales(prep *p, qf_result *r)
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
        say(r, QF_VERDICT_UNSUPPORTED, "unsupported: quantize: no scale layout for this family and shape");
        return -1;
    }
    p->out1_n = sc->count;
    p->out1_eb = sf->storage_bits / 8;
    p->out1_is_scale = 1;
    return 0;
}

/* A per-tensor scaled FP8 operand (Transformer Engine's recipe, FACTS.md):
 * draw in binary64, S = fp8_max / amax as a float32 (qf_block_fp8), codes =
 * round(x * S) saturating; the kernel gets the codes and the float32
 * dequantization scale s = float32(1 / S) (value = decode(code) * s, the
 * qf_tensor convention), and the reference the exact products
 * decode(code) * s (at most 4 + 24 significant bits: exact in binary64). */
static int gen_scaled(prep *p, qf_result *r, int slot, const qf_dist *d, int ndim, const int64_t *shape,
                      size_t rows, size_t cols)
{
    const qf_format *f = qf_format_get(p->t->in[slot]), *f32 = qf_format_get(QF_FLOAT32);
    qf_block_fp8_params bp = qf_block_fp8_params_default();
    char err[256];
    size_t i, n = rows * cols;
    double amax = 0, S, sinv;
    uint8_t *codes;
    if (!f || f->bits > 8 || f->kind != QF_KIND_FLOAT) {
        say(r, QF_VERDICT_UNSUPPORTED,
            "unsupported: per_tensor scaling needs a float format of at most 8 bits");
        return -1;
    }
    p->inval[slot] = malloc((n ? n : 1) * sizeof(double));
    p->incode[slot] = codes = malloc(n + 8);
    if (!p->inval[slot] || !codes) {
        say(r, QF_VERDICT_MISTRUSTED, "out of memory generating inputs");
        return -1;
    }
    if (qf_inputs_draw(d, p->seed, (uint64_t)slot, f, rows, cols, 0, rows, p->inval[slot], err, sizeof err) !=
        QF_OK) {
        say(r, QF_VERDICT_UNSUPPORTED, "unsupported: input %s: %s", qf_op_slot_name(p->op.op, 0, slot), err);
        return -1;
    }
    for (i = 0; i < n; i++)
        if (isfinite(p->inval[slot][i]) && fabs(p->inval[slot][i]) > amax)
            amax = fabs(p->inval[slot][i]);
    bp.elem = f->id;
    if (qf_block_fp8_scale_from_amax(&bp, amax, &p->in_scale[slot], &S) != QF_OK ||
        qf_block_fp8_scale_encode(&bp, p->inval[slot], rows, cols, &p->in_scale[slot], codes) != QF_OK) {
        say(r, QF_VERDICT_MISTRUSTED, "cannot scale input %s", qf_op_slot_name(p->op.op, 0, slot));
        return -1;
    }
    /* The kernel's scale multiplies: the float32 reciprocal of S. */
    p->in_scale[slot] = qf_block_fp8_scale_inv(p->in_scale[slot]);
    sinv = qf_format_decode(f32, p->in_scale[slot]);
    for (i = 0; i < n; i++)
        p->inval[slot][i] = qf_format_decode(f, codes[i]) * sinv;
    qf_tensor_init(&p->in[slot], f->id, ndim, shape);
    p->in[slot].data = codes;
    p->in[slot].bytes = n;
    p->in[slot].scale.kind = QF_SCALE_TENSOR;
    p->in[slot].scale.format = QF_FLOAT32;
    p->in[slot].scale.data = &p->in_scale[slot];
    p->in[slot].scale.count = 1;
    return 0;
}

/* An operand scaled by a recipe beyond per_tensor (runner_scaled.c):
 * rows x cols per batch entry. */
static int gen_recipe(prep *p, qf_result *r, int slot, const qf_dist *d, int ndim, const int64_t *shape,
                      size_t rows, size_t cols)
{
    const qf_op_gemm *g = &p->op.u.gemm;
    _qf_rs_operand o = {NULL, NULL, NULL};
    char why[256];
    int mis = 0, rc;
    rc = _qf_rs_gen(p->recipe, p->group, p->t->in[slot], slot, slot ? g->trans_b : g->trans_a,
                    d, p->seed, ndim, shape, g->batch ? g->batch : 1, rows, cols, &p->in[slot], &o, &mis, why,
                    sizeof why);
    p->inval[slot] = o.val;
    p->incode[slot] = o.codes;
    p->inscale[slot] = o.scales;
    if (rc)
        say(r, mis ? QF_VERDICT_MISTRUSTED : QF_VERDICT_UNSUPPORTED, "%s", why);
    return rc;
}

static int prepare_inputs(prep *p, qf_result *r)
{
    qf_dist d;
    char err[256];
    if (case_dist(p->c->input, &d, err, sizeof err) != QF_OK) {
        say(r, QF_VERDICT_UNSUPPORTED, "unsupported: input distribution: %s", err);
        return -1;
    }
    p->nin = qf_op_slot_count(p->op.op, 0);
    p->nout = qf_op_slot_count(p->op.op, 1);
    if (p->op.op == QF_OP_GEMM) {
        const qf_op_gemm *g = &p->op.u.gemm;
        int nd = g->batch > 1 ? 3 : 2;
        int64_t sa[3], sb[3], sc[3];
        int64_t bt = (int64_t)g->batch, m = (int64_t)g->m, n = (int64_t)g->n, k = (int64_t)g->k;
        int64_t ar = g->trans_a ? k : m, ac = g->trans_a ? m : k, br = g->trans_b ? n : k,
                bc = g->trans_b ? k : n;
        if (nd == 3) {
            sa[0] = sb[0] = sc[0] = bt;
            sa[1] = ar, sa[2] = ac, sb[1] = br, sb[2] = bc, sc[1] = m, sc[2] = n;
        } else {
            sa[0] = ar, sa[1] = ac, sb[0] = br, sb[1] = bc, sc[0] = m, sc[1] = n;
        }
        if (p->recipe == QF_RS_PER_TENSOR) {
            if (gen_scaled(p, r, 0, &d, nd, sa, (size_t)(bt * ar), (size_t)ac) ||
                gen_scaled(p, r, 1, &d, nd, sb, (size_t)(bt * br), (size_t)bc))
                return -1;
        } else if (p->recipe != QF_RS_NONE) {
            if ((p->recipe == QF_RS_GROUP ? gen_input(p, r, 0, &d, nd, sa, (size_t)(bt * ar), (size_t)ac)
                                          : gen_recipe(p, r, 0, &d, nd, sa, (size_t)ar, (size_t)ac)) ||
                gen_recipe(p, r, 1, &d, nd, sb, (size_t)br, (size_t)bc))
                return -1;
        } else if (gen_input(p, r, 0, &d, nd, sa, (size_t)(bt * ar), (size_t)ac) ||
                   gen_input(p, r, 1, &d, nd, sb, (size_t)(bt * br), (size_t)bc))
            return -1;
        if (g->beta != 0 && gen_input(p, r, 2, &d, nd, sc, (size_t)(bt * m), (size_t)n))
            return -1;
        qf_tensor_init(&p->out[0], p->t->out[0], nd, sc);
    } else if (p->op.op == QF_OP_ATTENTION) {
        const qf_op_attention *a = &p->op.u.attention;
        int64_t sq[4] = {(int64_t)a->batch, (int64_t)a->heads, (int64_t)a->seq_q, (int64_t)a->head_dim};
        int64_t sk[4] = {(int64_t)a->batch, (int64_t)a->kv_heads, (int64_t)a->seq_k, (int64_t)a->head_dim};
        int64_t sv[4] = {(int64_t)a->batch, (int64_t)a->kv_heads, (int64_t)a->seq_k, (int64_t)a->head_dim_v};
        int64_t so[4] = {(int64_t)a->batch, (int64_t)a->heads, (int64_t)a->seq_q, (int64_t)a->head_dim_v};
        if (gen_input(p, r, 0, &d, 4, sq, a->batch * a->heads * a->seq_q, a->head_dim) ||
            gen_input(p, r, 1, &d, 4, sk, a->batch * a->kv_heads * a->seq_k, a->head_dim) ||
            gen_input(p, r, 2, &d, 4, sv, a->batch * a->kv_heads * a->seq_k, a->head_dim_v))
            return -1;
        qf_tensor_init(&p->out[0], p->t->out[0], 4, so);
        /* lse [batch][heads][seq_q] in the tuple's second output format. */
        p->outf1 = qf_format_get(p->t->out[1]);
        if (!p->outf1 || p->outf1->storage_bits % 8) {
            say(r, QF_VERDICT_UNSUPPORTED, "unsupported: attention: the lse format is not a byte format");
            return -1;
        }
        qf_tensor_init(&p->out[1], p->t->out[1], 3, so);
        p->out1_n = a->batch * a->heads * a->seq_q;
        p->out1_eb = p->outf1->storage_bits / 8;
    } else if (p->op.op == QF_OP_MOE_ROUTER) {
        const qf_op_moe_router *m = &p->op.u.moe_router;
        int64_t sl[2] = {(int64_t)m->tokens, (int64_t)m->experts},
                sw[2] = {(int64_t)m->tokens, (int64_t)m->top_k};
        if (gen_input(p, r, 0, &d, 2, sl, m->tokens, m->experts))
            return -1;
        qf_tensor_init(&p->out[0], p->t->out[0], 2, sw);
        /* indices [tokens][top_k], int32 */
        qf_tensor_init(&p->out[1], p->t->out[0], 2, sw);
        p->out[1].index_bits = 32;
        p->out1_n = m->tokens * m->top_k;
        p->out1_eb = 4;
    } else {
        int64_t sx[3] = {(int64_t)p->rows, (int64_t)p->cols, 0}, sv[1] = {(int64_t)p->cols};
        int nd = 2;
        if (p->op.op == QF_OP_ROPE) {
            nd = 3;
            sx[0] = (int64_t)p->op.u.rope.tokens;
            sx[1] = (int64_t)p->op.u.rope.heads;
            sx[2] = (int64_t)p->op.u.rope.head_dim;
        }
        if (gen_input(p, r, 0, &d, nd, sx, p->rows, p->cols))
            return -1;
        /* GLU's up projection: same distribution, its own stream. */
        if (p->op.op == QF_OP_ACTIVATION && p->op.u.activation.glu &&
            gen_input(p, r, 1, &d, nd, sx, p->rows, p->cols))
            return -1;
        if (p->op.op == QF_OP_RMSNORM || p->op.op == QF_OP_LAYERNORM) {
            /* Weights near 1 and small biases, as trained norms have them;
             * drawn from their own streams of the case's seed. */
            qf_dist w = qf_dist_default(QF_DIST_NORMAL);
            int want_w = param_real(p->c, "weight", 1) != 0;
            int want_b = p->op.op == QF_OP_LAYERNORM && param_real(p->c, "bias", 1) != 0;
            w.mean = 1;
            w.std = 0.125;
            if (want_w && gen_input(p, r, 1, &w, 1, sv, 1, p->cols))
                return -1;
            w.mean = 0;
            if (want_b && gen_input(p, r, 2, &w, 1, sv, 1, p->cols))
                return -1;
        }
        qf_tensor_init(&p->out[0], p->t->out[0], nd, sx);
        if (p->op.op == QF_OP_QUANTIZE && quantize_scales(p, r))
            return -1;
    }
    p->outf = qf_format_get(p->t->out[0]);
    p->out_n = p->rows * p->cols;
    if (!p->outf || p->outf->storage_bits % 8) {
        say(r, QF_VERDICT_UNSUPPORTED, "unsupported: packed output formats are not driven by the runner yet");
        return -1;
    }
    if (guarded_alloc(&p->g[0], qf_format_array_bytes(p->outf, p->out_n), poison[0]) ||
        guarded_alloc(&p->g[1], qf_format_array_bytes(p->outf, p->out_n), poison[1])) {
        say(r, QF_VERDICT_MISTRUSTED, "cannot map the output buffers: %s", strerror(errno));
        return -1;
    }
    p->out[0].bytes = p->g[0].bytes;
    if (p->out1_n) {
        if (guarded_alloc(&p->g1[0], p->out1_n * (size_t)p->out1_eb, poison[0]) ||
            guarded_alloc(&p->g1[1], p->out1_n * (size_t)p->out1_eb, poison[1])) {
            say(r, QF_VERDICT_MISTRUSTED, "cannot map the output buffers: %s", strerror(errno));
            return -1;
        }
        if (!p->out1_is_scale)
            p->out[1].bytes = p->g1[0].bytes;
    }
    return 0;
}

/* ---- The kernel child ------------------------------------------------------ */

static void child_reset_signals(void)
{
    /* Sanitizer runtimes catch SEGV and turn it into an exit status; the
     * runner wants the signal itself. */
    static const int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM};
    size_t i;
    for (i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        signal(sigs[i], SIG_DFL);
}

static void child_run(prep *p, child_report *rep, int timing, size_t warmup, size_t reps)
{
    qf_kernel_call call;
    qf_device dev;
    void *ctx = p->k->user;
    qf_status s = QF_OK;
    int run;
    child_reset_signals();
    memset(&call, 0, sizeof call);
    memset(&dev, 0, sizeof dev);
    dev.backend = qf_backend_cpu();
    /* GPU kernels: device 0 of their back end, tensors staged per run
     * (runner_device.c) */
    if (_qf_rdev_is_device(p->k) && (s = _qf_rdev_open(p->k, &dev, rep->msg, sizeof rep->msg)) != QF_OK) {
        rep->status = s;
        rep->done = 1;
        _exit(0);
    }
    call.abi_version = QF_KERNEL_ABI_VERSION;
    call.kernel = p->k;
    call.dtype = p->t;
    call.op = &p->op;
    call.in = p->in;
    call.out = p->out;
    call.device = &dev;
    call.seed = p->seed;
    call.threads = 1;
    call.msg = rep->msg;
    call.msg_size = sizeof rep->msg;
    if (p->k->init && (s = p->k->init(p->k, &ctx)) != QF_OK) {
        rep->status = s;
        rep->done = 1;
        _exit(0);
    }
    if (!timing) {
        for (run = 0; run < 2 && s == QF_OK; run++) {
            p->out[0].data = p->g[run].data;
            if (p->out1_n && p->out1_is_scale)
                p->out[0].scale.data = p->g1[run].data;
            else if (p->out1_n)
                p->out[1].data = p->g1[run].data;
            /* A kernel that claims the same bits whatever the thread
             * count gets 2 threads the second time, so the comparison of
             * the two runs checks that claim too. */
            call.threads = run == 1 && p->t->arith.deterministic_threads ? 2 : 1;
            s = dev.state ? _qf_rdev_run(&dev, ctx, &call, NULL) : p->k->run(ctx, &call);
            rep->global_code[run] = p->out[0].scale.global_code;
        }
    } else {
        size_t i;
        p->out[0].data = p->g[0].data;
        if (p->out1_n && p->out1_is_scale)
            p->out[0].scale.data = p->g1[0].data;
        else if (p->out1_n)
            p->out[1].data = p->g1[0].data;
        for (i = 0; i < warmup && s == QF_OK; i++)
            s = dev.state ? _qf_rdev_run(&dev, ctx, &call, NULL) : p->k->run(ctx, &call);
        for (i = 0; i < reps && s == QF_OK && i < sizeof rep->times / sizeof rep->times[0]; i++) {
            double t0 = now_s(), kt = 0;
            s = dev.state ? _qf_rdev_run(&dev, ctx, &call, &kt) : p->k->run(ctx, &call);
            rep->times[i] = dev.state ? kt : now_s() - t0; /* GPU: device events around the run alone */
            rep->ntimes = i + 1;
        }
    }
    if (p->k->fini)
        p->k->fini(ctx);
    if (dev.state)
        qf_device_close(&dev);
    rep->status = s;
    rep->done = 1;
    _exit(0);
}

/* Fork the kernel child and wait for it: 0 when it reported, else the
 * verdict is set in r (CRASHED, TIMEOUT) and -1 returned. */
static int run_child(prep *p, child_report *rep, qf_result *r, double timeout_s, int timing, size_t warmup,
                     size_t reps)
{
    pid_t pid;
    int st = 0;
    double t0 = now_s(), nap = 0.0005;
    memset(rep, 0, sizeof *rep);
    fflush(NULL);
    pid = fork();
    if (pid < 0) {
        say(r, QF_VERDICT_MISTRUSTED, "cannot fork the kernel child: %s", strerror(errno));
        return -1;
    }
    if (pid == 0)
        child_run(p, rep, timing, warmup, reps);
    for (;;) {
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w == pid)
            break;
        if (w < 0 && errno != EINTR) {
            say(r, QF_VERDICT_MISTRUSTED, "lost the kernel child: %s", strerror(errno));
            return -1;
        }
        if (now_s() - t0 > timeout_s) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            say(r, QF_VERDICT_TIMEOUT, "timed out: the kernel ran past the %.3g s limit and was killed",
                timeout_s);
            return -1;
        }
        {
            struct timespec ts = {0, (long)(nap * 1e9)};
            nanosleep(&ts, NULL);
            if (nap < 0.01)
                nap *= 2;
        }
    }
    if (WIFSIGNALED(st)) {
        r->signal = WTERMSIG(st);
        say(r, QF_VERDICT_CRASHED, "crashed: signal %d (%s)", r->signal, strsignal(r->signal));
        return -1;
    }
    if (!rep->done || (WIFEXITED(st) && WEXITSTATUS(st) != 0)) {
        r->exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        say(r, QF_VERDICT_CRASHED, "crashed: the kernel process exited with status %d before finishing",
            r->exit_code);
        return -1;
    }
    return 0;
}

/* ---- Reading outputs ----------------------------------------------------- */

static uint64_t load_code(const unsigned char *base, int bytes, size_t i)
{
    const unsigned char *q = base + i * (size_t)bytes;
    uint8_t u8;
    uint16_t u16;
    uint32_t u32;
    uint64_t u64;
    switch (bytes) {
    case 1: memcpy(&u8, q, 1); return u8;
    case 2: memcpy(&u16, q, 2); return u16;
    case 4: memcpy(&u32, q, 4); return u32;
    default: memcpy(&u64, q, 8); return u64;
    }
}

static void where_rc(const prep *p, size_t i, char *buf, size_t size)
{
    if (p->cols)
        snprintf(buf, size, "(%zu, %zu)", i / p->cols, i % p->cols);
    else
        snprintf(buf, size, "[%zu]", i);
}

/* Canaries and poison of one output slot; 0 when clean, else FAILED. */
static int check_slot(prep *p, qf_result *r, int sl, guarded *g, size_t n, int eb)
{
    int run;
    size_t i, unwritten = 0, first = 0;
    const char *slot = qf_op_slot_name(p->op.op, 1, sl);
    char at[64];
    for (run = 0; run < 2; run++) {
        long off = guarded_check(&g[run]);
        if (off)
            return say(r, QF_VERDICT_FAILED,
                       "canary: output %s written out of bounds, %ld byte(s) %s the buffer (run %d)", slot,
                       off < 0 ? -off : off, off < 0 ? "before" : "past the end of", run + 1),
                   -1;
    }
    for (i = 0; i < n; i++) {
        int b, clean = 1;
        for (run = 0; run < 2 && clean; run++)
            for (b = 0; b < eb; b++)
                if (g[run].data[i * (size_t)eb + (size_t)b] != poison[run]) {
                    clean = 0;
                    break;
                }
        if (clean && unwritten++ == 0)
            first = i;
    }
    if (unwritten) {
        if (sl == 0)
            where_rc(p, first, at, sizeof at);
        else
            snprintf(at, sizeof at, "[%zu]", first);
        say(r, QF_VERDICT_FAILED, "unwritten: %zu of %zu elements of output %s never written (first at %s)",
            unwritten, n, slot, at);
        return -1;
    }
    return 0;
}

static int check_outputs(prep *p, qf_result *r)
{
    if (check_slot(p, r, 0, p->g, p->out_n, p->outf->storage_bits / 8))
        return -1;
    return p->out1_n ? check_slot(p, r, 1, p->g1, p->out1_n, p->out1_eb) : 0;
}

/* ---- Reference, metrics, bound ------------------------------------------- */

typedef struct checked {
    size_t n;
    uint64_t *idx; /* linear output indices */
    double *got, *exact, *rounded, *bound, *absb;
    uint8_t *status;
    int has_bound; /* second outputs: 0 when no bound applies */
} checked;

static void checked_free(checked *ck)
{
    free(ck->idx);
    free(ck->got);
    free(ck->exact);
    free(ck->rounded);
    free(ck->bound);
    free(ck->absb);
    free(ck->status);
}

static int checked_alloc(checked *ck, size_t n)
{
    size_t m = n ? n : 1;
    ck->n = n;
    ck->got = malloc(m * sizeof(double));
    ck->exact = malloc(m * sizeof(double));
    ck->rounded = malloc(m * sizeof(double));
    ck->bound = malloc(m * sizeof(double));
    ck->absb = malloc(m * sizeof(double));
    ck->status = calloc(m, 1);
    return ck->got && ck->exact && ck->rounded && ck->bound && ck->absb && ck->status ? 0 : -1;
}

static void bound_summary(prep *p, checked *ck, qf_result *r)
{
    size_t i, at = 0;
    double mx = -1;
    for (i = 0; i < ck->n; i++)
        if (ck->bound[i] > mx) {
            mx = ck->bound[i];
            at = i;
        }
    if (mx >= 0) {
        double u = qf_format_ulp(p->outf, ck->exact[at]);
        r->bound.max_bound = mx;
        r->bound.max_bound_ulp = u > 0 ? mx / u : NAN;
    }
}

/* Each batch entry is a matrix of its own: its first and last rows and
 * columns and tile edges are sampled, with an equal share of the target. */
static int sample_batched(const qf_op_gemm *g, uint64_t target, uint64_t tile, uint64_t seed, uint64_t **idx,
                          size_t *n)
{
    size_t b, total = 0, i;
    uint64_t *all = NULL;
    if (target == 0 || target >= (uint64_t)(g->batch * g->m * g->n) || g->batch <= 1)
        return qf_runner_sample(g->batch * g->m, g->n, target, tile, seed, idx, n) == QF_OK ? 0 : -1;
    for (b = 0; b < g->batch; b++) {
        uint64_t *one = NULL, *na;
        size_t k = 0;
        if (qf_runner_sample(g->m, g->n, (target + g->batch - 1) / g->batch, tile, seed + b, &one, &k) !=
            QF_OK)
            goto fail;
        na = realloc(all, (total + k + 1) * sizeof *na);
        if (!na) {
            free(one);
            goto fail;
        }
        all = na;
        for (i = 0; i < k; i++)
            all[total + i] = (uint64_t)(b * g->m * g->n) + one[i];
        total += k;
        free(one);
    }
    *idx = all;
    *n = total;
    return 0;
fail:
    free(all);
    return -1;
}

/* A claim that flushes subnormals (qf_arith_claim.flush_subnormals) computes
 * the claimed arithmetic on flushed inputs a', b', c': its result is within
 * the usual bound of the exact a'b' (sum |a'||b'| <= sum |a||b|), and
 * |a'b' - ab| <= F, the sum of |a_l b_l| over the products with a flushed
 * (nonzero subnormal) operand, plus |beta c| when c is flushed.  So each
 * checked element's bound grows by |alpha| F (1 + rel_out) (the output
 * rounding is relative to a result that moved by F too; docs/bounds.md
 * "Flushed subnormals").  F is summed in binary64 over at most K
 * non-negative terms, then enlarged by (K + 2) 2^-52 to cover that sum's
 * own rounding. */
static void flush_lost(const prep *p, checked *ck, const qf_bound_coef *coef)
{
    const qf_op_gemm *g = &p->op.u.gemm;
    const qf_format *fa = qf_format_get(p->t->in[0]), *fb = qf_format_get(p->t->in[1]);
    const qf_format *fc = g->beta != 0 ? qf_format_get(p->t->in[2]) : NULL;
    const double *A = p->inval[0], *B = p->inval[1], *C = p->inval[2];
    size_t i, l, m = g->m, n = g->n, k = g->k;
    double grow = (1 + (double)(k + 2) * 0x1p-52) * (1 + coef->rel_out) * QF_BOUND_SAFETY;
    if (!fa || !fb)
        return;
    for (i = 0; i < ck->n; i++) {
        size_t e = (size_t)ck->idx[i], pb = e / (m * n), rem = e % (m * n), row = rem / n, col = rem % n;
        double f = 0;
        for (l = 0; l < k; l++) {
            double a = A[pb * m * k + (g->trans_a ? l * m + row : row * k + l)];
            double b = B[pb * k * n + (g->trans_b ? col * k + l : l * n + col)];
            int sub_a = a != 0 && fabs(a) < fa->min_normal, sub_b = b != 0 && fabs(b) < fb->min_normal;
            if (sub_a || sub_b)
                f += fabs(a * b);
        }
        f *= fabs(g->alpha);
        if (fc && C) {
            double c = C[pb * m * n + row * n + col];
            if (c != 0 && fabs(c) < fc->min_normal)
                f += fabs(g->beta * c);
        }
        ck->bound[i] += f * grow;
    }
}

static int reference_gemm(prep *p, checked *ck, qf_result *r, uint64_t target, uint64_t tile)
{
    const qf_op_gemm *g = &p->op.u.gemm;
    qf_gemm_desc d = qf_gemm_desc_default();
    qf_bound_coef coef;
    size_t i;
    /* The dequantization scales are one more rounding in the epilogue. */
    int epilogue = (g->alpha != 1) + (g->beta != 0) + _qf_rs_epilogue(p->recipe);
    qf_status s;
    d.layout = QF_ROW_MAJOR;
    d.trans_a = g->trans_a ? QF_TRANS : QF_NO_TRANS;
    d.trans_b = g->trans_b ? QF_TRANS : QF_NO_TRANS;
    d.m = g->m;
    d.n = g->n;
    d.k = g->k;
    d.alpha = g->alpha;
    d.beta = g->beta;
    d.a = p->inval[0];
    d.lda = g->trans_a ? g->m : g->k;
    d.b = p->inval[1];
    d.ldb = g->trans_b ? g->k : g->n;
    d.c = g->beta != 0 ? p->inval[2] : NULL;
    d.ldc = g->n;
    d.batch = g->batch;
    d.stride_a = (ptrdiff_t)(g->m * g->k);
    d.stride_b = (ptrdiff_t)(g->k * g->n);
    d.stride_c = d.stride_d = (ptrdiff_t)(g->m * g->n);
    /* Scaled operands are decode(code) * scale, binary64 values. */
    d.fa = (p->recipe != QF_RS_NONE) ? NULL : qf_format_get(p->t->in[0]);
    d.fb = (p->recipe != QF_RS_NONE) ? NULL : qf_format_get(p->t->in[1]);
    d.ldd = g->n;
    d.threads = 1;
    if (sample_batched(g, target, tile, p->seed, &ck->idx, &ck->n) || checked_alloc(ck, ck->n)) {
        say(r, QF_VERDICT_MISTRUSTED, "out of memory for the reference");
        return -1;
    }
    if (ck->n == p->out_n) {
        /* Every element: the GEMM engine, twice (binary64 and the output
         * format, each rounded once from the exact sum). */
        qf_gemm_desc d2 = d;
        d.out = NULL;
        d.d_value = ck->exact;
        d.d_abs = ck->absb;
        d2.out = p->outf;
        d2.d_value = ck->rounded;
        if ((s = qf_gemm(&d)) != QF_OK || (s = qf_gemm(&d2)) != QF_OK) {
            say(r, QF_VERDICT_MISTRUSTED, "reference failed: %s", qf_status_str(s));
            return -1;
        }
        for (i = 0; i < ck->n; i++) {
            if (ck->rounded[i] == ck->exact[i])
                r->ref_exact++;
            else
                r->ref_rounded++;
        }
    }
    for (i = 0; i < ck->n && ck->n != p->out_n; i++) {
        /* The exact accumulator of each checked element, rounded twice from
         * it: to binary64 (the "exact" value metrics and bounds use, within
         * 2^-53) and once, directly, into the output format. */
        qf_dot_acc acc, abs;
        size_t e = (size_t)ck->idx[i], pb = e / (g->m * g->n), rem = e % (g->m * g->n);
        qf_dot_acc_init(&acc);
        qf_dot_acc_init(&abs);
        s = qf_gemm_acc_element(&d, pb, rem / g->n, rem % g->n, &acc, &abs);
        if (s != QF_OK) {
            say(r, QF_VERDICT_MISTRUSTED, "reference failed: %s", qf_status_str(s));
            return -1;
        }
        ck->exact[i] = qf_dot_acc_get_d(&acc, QF_ROUND_RNE);
        ck->rounded[i] = qf_format_decode(p->outf, qf_dot_acc_round(&acc, p->outf, QF_ROUND_RNE, 0, 0, 0));
        ck->absb[i] = qf_dot_acc_get_d(&abs, QF_ROUND_UP);
        if (ck->rounded[i] == ck->exact[i])
            r->ref_exact++;
        else
            r->ref_rounded++;
    }
    s = qf_bound_gemm_coef(&p->t->arith, g->k, epilogue, p->outf, 3.0, &coef);
    if (s != QF_OK) {
        say(r, QF_VERDICT_MISTRUSTED, "cannot derive the bound from the claim: %s", qf_status_str(s));
        return -1;
    }
    if (p->recipe != QF_RS_NONE) /* underflow inside the scale epilogue (runner_range.c) */
        _qf_rr_scaled_underflow(p->recipe, &p->in[0], &p->in[1], &coef);
    if (p->t->arith.flush_subnormals) {
        /* Flushed accumulator results: each of the at most K + chain + 2
         * additions and epilogue steps loses less than the accumulator's
         * smallest normal, which later roundings enlarge by at most
         * (1 + rel_abs). */
        const qf_format *af = qf_format_get(p->t->arith.acc_format);
        coef.abs_min += ((double)g->k + coef.chain + 2) * af->min_normal * (1 + coef.rel_abs) * QF_BOUND_SAFETY;
    }
    qf_bound_apply(&coef, ck->n, ck->absb, ck->exact, ck->bound);
    if (p->t->arith.flush_subnormals && p->recipe == QF_RS_NONE && !g->groups)
        flush_lost(p, ck, &coef);
    snprintf(r->bound.kind, sizeof r->bound.kind, "gemm");
    r->bound.rel_abs = coef.rel_abs;
    r->bound.rel_out = coef.rel_out;
    r->bound.abs_min = coef.abs_min;
    r->bound.chain = coef.chain;
    r->bound.eta = coef.eta;
    r->bound.prob = coef.prob;
    return 0;
}

/* Rows of a row-wise op to check: edges, then seeded rows up to target
 * elements. */
static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int pick_rows(prep *p, uint64_t target, uint64_t tile, uint64_t **rows, size_t *n)
{
    uint64_t want = target && p->cols ? (target + p->cols - 1) / p->cols : 0, *v, draw = 0;
    size_t k, cap, i, w;
    if (want == 0 || want >= p->rows) {
        if (qf_runner_sample(p->rows, 1, 0, 0, 0, rows, n) != QF_OK)
            return -1;
        return 0;
    }
    k = qf_runner_edges(p->rows, tile, NULL, 0);
    cap = k + (size_t)want + 1;
    v = malloc(cap * sizeof *v);
    if (!v)
        return -1;
    k = qf_runner_edges(p->rows, tile, v, k);
    /* Seeded rows up to the target, then sort and drop repeats. */
    while (k < want && draw < 64 * want) {
        v[k++] = qf_rng_u64(p->seed ^ 0x524f5753ull, draw++) % p->rows;
        if (k == want || k == cap) {
            qsort(v, k, sizeof *v, cmp_u64);
            for (i = 0, w = 0; i < k; i++)
                if (w == 0 || v[w - 1] != v[i])
                    v[w++] = v[i];
            k = w;
        }
    }
    *rows = v;
    *n = k;
    return 0;
}

static int reference_rows(prep *p, checked *ck, qf_result *r, uint64_t target, uint64_t tile)
{
    uint64_t *rows = NULL;
    size_t nr = 0, i, j, C = p->cols;
    double *x = NULL, *up = NULL;
    int64_t *pos = NULL;
    qf_ref_out ex, ro;
    qf_ref_opts o64 = qf_ref_opts_default(), oo = qf_ref_opts_default();
    qf_status s = QF_OK;
    int rc = -1;
    memset(&ex, 0, sizeof ex);
    memset(&ro, 0, sizeof ro);
    if (pick_rows(p, target, tile, &rows, &nr) || checked_alloc(ck, nr * C) ||
        !(ck->idx = malloc((nr * C + 1) * sizeof *ck->idx)) || !(x = malloc((nr * C + 1) * sizeof *x)) ||
        qf_ref_out_alloc(&ex, nr * C) != QF_OK || qf_ref_out_alloc(&ro, nr * C) != QF_OK) {
        say(r, QF_VERDICT_MISTRUSTED, "out of memory for the reference");
        goto done;
    }
    for (i = 0; i < nr; i++)
        for (j = 0; j < C; j++) {
            ck->idx[i * C + j] = rows[i] * C + j;
            x[i * C + j] = p->inval[0][rows[i] * C + j];
        }
    o64.threads = oo.threads = 1;
    oo.format = p->outf;
    if (p->op.op == QF_OP_SOFTMAX) {
        double sc = p->op.u.softmax.scale;
        if (p->op.u.softmax.log) {
            s = qf_ref_log_softmax(&o64, x, nr, C, sc, &ex);
            if (s == QF_OK)
                s = qf_ref_log_softmax(&oo, x, nr, C, sc, &ro);
        } else {
            s = qf_ref_softmax(&o64, x, nr, C, sc, &ex);
            if (s == QF_OK)
                s = qf_ref_softmax(&oo, x, nr, C, sc, &ro);
        }
    } else if (p->op.op == QF_OP_ACTIVATION) {
        const qf_op_activation *a = &p->op.u.activation;
        if (a->glu) {
            up = malloc((nr * C + 1) * sizeof *up);
            if (!up) {
                say(r, QF_VERDICT_MISTRUSTED, "out of memory for the reference");
                goto done;
            }
            for (i = 0; i < nr * C; i++)
                up[i] = p->inval[1][ck->idx[i]];
            s = qf_ref_glu(&o64, a->act, x, up, nr * C, &ex);
            if (s == QF_OK)
                s = qf_ref_glu(&oo, a->act, x, up, nr * C, &ro);
        } else {
            s = qf_ref_activation(&o64, a->act, x, nr * C, &ex);
            if (s == QF_OK)
                s = qf_ref_activation(&oo, a->act, x, nr * C, &ro);
        }
    } else if (p->op.op == QF_OP_ROPE) {
        /* Each checked row is one (token, head): a one-head "token" of its
         * own, at its token's position. */
        const qf_op_rope *o = &p->op.u.rope;
        qf_ref_rope_params rp;
        pos = malloc((nr + 1) * sizeof *pos);
        if (!pos) {
            say(r, QF_VERDICT_MISTRUSTED, "out of memory for the reference");
            goto done;
        }
        for (i = 0; i < nr; i++)
            pos[i] = (o->positions ? o->positions[rows[i] / o->heads] : 0) + o->pos_offset +
                     (o->positions ? 0 : (int64_t)(rows[i] / o->heads));
        qf_ref_rope_params_init(&rp);
        rp.tokens = nr;
        rp.heads = 1;
        rp.head_dim = C;
        rp.rotary_dim = o->rotary_dim;
        rp.layout = o->layout;
        rp.theta = o->theta;
        rp.positions = pos;
        s = qf_ref_rope(&o64, &rp, x, &ex);
        if (s == QF_OK)
            s = qf_ref_rope(&oo, &rp, x, &ro);
    } else {
        qf_ref_norm_params np;
        memset(&np, 0, sizeof np);
        np.rows = nr;
        np.cols = C;
        np.eps = p->op.u.norm.eps;
        np.weight = p->inval[1];
        np.bias = p->inval[2];
        np.weight_offset = p->op.u.norm.weight_offset;
        if (p->op.op == QF_OP_RMSNORM) {
            s = qf_ref_rmsnorm(&o64, &np, x, &ex);
            if (s == QF_OK)
                s = qf_ref_rmsnorm(&oo, &np, x, &ro);
        } else {
            s = qf_ref_layernorm(&o64, &np, x, &ex);
            if (s == QF_OK)
                s = qf_ref_layernorm(&oo, &np, x, &ro);
        }
    }
    if (s != QF_OK) {
        say(r, QF_VERDICT_MISTRUSTED, "reference failed: %s", qf_status_str(s));
        goto done;
    }
    memcpy(ck->exact, ex.value, nr * C * sizeof(double));
    memcpy(ck->rounded, ro.value, nr * C * sizeof(double));
    memcpy(ck->status, ro.status, nr * C);
    r->ref_exact = ro.n_exact;
    r->ref_rounded = ro.n_rounded;
    r->ref_undecided = ro.n_undecided;
    r->ref_undefined = ro.n_undefined;
    /* Bounds per row. */
    for (i = 0; i < nr * C; i++)
        ck->bound[i] = NAN;
    if (p->t->arith.max_ulp > 0) {
        qf_bound_ulp(p->outf, p->t->arith.max_ulp, nr * C, ck->exact, ck->bound);
        snprintf(r->bound.kind, sizeof r->bound.kind, "ulp");
        r->bound.claimed_ulp = p->t->arith.max_ulp;
    } else if (p->op.op == QF_OP_SOFTMAX && !p->op.u.softmax.log) {
        for (i = 0; i < nr && s == QF_OK; i++)
            s = qf_bound_softmax(&p->t->arith, p->outf, C, x + i * C, p->op.u.softmax.scale,
                                 ck->exact + i * C, ck->bound + i * C);
        snprintf(r->bound.kind, sizeof r->bound.kind, "softmax");
    } else if (p->op.op == QF_OP_RMSNORM || p->op.op == QF_OP_LAYERNORM) {
        for (i = 0; i < nr && s == QF_OK; i++)
            s = qf_bound_norm(&p->t->arith, p->outf, C, x + i * C, p->inval[1], p->inval[2], p->op.u.norm.eps,
                              p->op.op == QF_OP_LAYERNORM, ck->exact + i * C, ck->bound + i * C);
        snprintf(r->bound.kind, sizeof r->bound.kind, "norm");
    } else if (p->op.op == QF_OP_ACTIVATION) {
        /* Derived for the cancellation-free forms (docs/bounds.md "Activations"). */
        s = qf_bound_activation(&p->t->arith, p->outf, (int)p->op.u.activation.act, p->op.u.activation.glu,
                                nr * C, x, up, ck->exact, ck->bound);
        snprintf(r->bound.kind, sizeof r->bound.kind, "activation");
    } else if (p->op.op == QF_OP_ROPE) {
        /* Derived from the float32 angle computation (docs/bounds.md "RoPE"). */
        const qf_op_rope *o = &p->op.u.rope;
        for (i = 0; i < nr && s == QF_OK; i++)
            s = qf_bound_rope(&p->t->arith, p->outf, C, o->rotary_dim, o->layout == QF_REF_ROPE_HALF, o->theta,
                              (double)pos[i], x + i * C, ck->exact + i * C, ck->bound + i * C);
        snprintf(r->bound.kind, sizeof r->bound.kind, "rope");
    }
    if (s != QF_OK) {
        say(r, QF_VERDICT_MISTRUSTED, "cannot derive the bound from the claim: %s", qf_status_str(s));
        goto done;
    }
    rc = 0;
done:
    free(rows);
    free(x);
    free(up);
    free(pos);
    qf_ref_out_free(&ex);
    qf_ref_out_free(&ro);
    return rc;
}

/* Every element of an output of n, in order. */
static int checked_all(checked *ck, size_t n)
{
    size_t i;
    if (checked_alloc(ck, n) || !(ck->idx = malloc((n ? n : 1) * sizeof *ck->idx)))
        return -1;
    for (i = 0; i < n; i++)
        ck->idx[i] = i;
    return 0;
}

static void take_ref(checked *ck, const qf_ref_out *ex, const qf_ref_out *ro, qf_result *r)
{
    memcpy(ck->exact, ex->value, ck->n * sizeof(double));
    memcpy(ck->rounded, ro->value, ck->n * sizeof(double));
    memcpy(ck->status, ro->status, ck->n);
    r->ref_exact += ro->n_exact;
    r->ref_rounded += ro->n_rounded;
    r->ref_undecided += ro->n_undecided;
    r->ref_undefined += ro->n_undefined;
}

/* Attention: out (ck) and lse (ck1), every element (the reference works on
 * whole rows of keys; sampling is not applied).  Bound of out: the claimed
 * ulp, else qf_bound_attention per query row from the exact scores (not
 * with a softcap, whose tanh the derivation does not cover: fitness only);
 * lse: the claimed ulp only. */
static int reference_attention(prep *p, checked *ck, checked *ck1, qf_result *r)
{
    const qf_op_attention *a = &p->op.u.attention;
    const double *q = p->inval[0], *k = p->inval[1], *v = p->inval[2];
    const qf_format *fq = qf_format_get(p->t->in[0]), *fk = qf_format_get(p->t->in[1]);
    qf_ref_attn_params ap;
    qf_ref_opts o64 = qf_ref_opts_default(), oo = qf_ref_opts_default();
    qf_ref_out ex, ro, lex, lro;
    size_t row, j, d = a->head_dim, dv = a->head_dim_v, sk = a->seq_k, group = a->heads / a->kv_heads;
    double *sc = NULL, *sabs = NULL, scale = a->scale > 0 ? a->scale : 1 / sqrt((double)d);
    qf_status s = QF_OK;
    int rc = -1;
    memset(&ex, 0, sizeof ex);
    memset(&ro, 0, sizeof ro);
    memset(&lex, 0, sizeof lex);
    memset(&lro, 0, sizeof lro);
    qf_ref_attn_params_init(&ap);
    ap.batch = a->batch;
    ap.heads = a->heads;
    ap.kv_heads = a->kv_heads;
    ap.seq_q = a->seq_q;
    ap.seq_k = a->seq_k;
    ap.head_dim = d;
    ap.head_dim_v = dv;
    ap.scale = a->scale;
    ap.softcap = a->softcap;
    ap.causal = a->mask == QF_MASK_CAUSAL || a->mask == QF_MASK_CAUSAL_BOTTOM_RIGHT ||
                (a->mask == QF_MASK_WINDOW && a->causal);
    ap.align_bottom_right = a->mask == QF_MASK_CAUSAL_BOTTOM_RIGHT;
    ap.window_left = a->mask == QF_MASK_WINDOW ? a->window_left : -1;
    ap.window_right = a->mask == QF_MASK_WINDOW && !a->causal ? a->window_right : -1;
    if (checked_all(ck, p->out_n) || checked_all(ck1, p->out1_n) ||
        qf_ref_out_alloc(&ex, p->out_n) != QF_OK || qf_ref_out_alloc(&ro, p->out_n) != QF_OK ||
        qf_ref_out_alloc(&lex, p->out1_n) != QF_OK || qf_ref_out_alloc(&lro, p->out1_n) != QF_OK ||
        !(sc = malloc((sk + 1) * sizeof *sc)) || !(sabs = malloc((sk + 1) * sizeof *sabs))) {
        say(r, QF_VERDICT_MISTRUSTED, "out of memory for the reference");
        goto done;
    }
    o64.threads = oo.threads = 1;
    oo.format = p->outf;
    s = qf_ref_attention(&o64, &ap, q, k, v, &ex, &lex);
    ap.lse_format = p->outf1;
    if (s == QF_OK)
        s = qf_ref_attention(&oo, &ap, q, k, v, &ro, &lro);
    if (s != QF_OK) {
        say(r, QF_VERDICT_MISTRUSTED, "reference failed: %s", qf_status_str(s));
        goto done;
    }
    take_ref(ck, &ex, &ro, r);
    take_ref(ck1, &lex, &lro, r);
    for (j = 0; j < ck->n; j++)
        ck->bound[j] = NAN;
    for (j = 0; j < ck1->n; j++)
        ck1->bound[j] = NAN;
    if (p->t->arith.max_ulp > 0) {
        qf_bound_ulp(p->outf, p->t->arith.max_ulp, ck->n, ck->exact, ck->bound);
        qf_bound_ulp(p->outf1, p->t->arith.max_ulp, ck1->n, ck1->exact, ck1->bound);
        ck1->has_bound = 1;
        snprintf(r->bound.kind, sizeof r->bound.kind, "ulp");
        r->bound.claimed_ulp = p->t->arith.max_ulp;
    } else if (a->softcap == 0) {
        for (row = 0; row < p->out1_n && s == QF_OK; row++) {
            size_t b = row / (a->heads * a->seq_q), h = (row / a->seq_q) % a->heads, i = row % a->seq_q;
            size_t kvb = (b * a->kv_heads + h / group) * sk;
            long P = (long)i + (ap.align_bottom_right ? (long)sk - (long)a->seq_q : 0);
            long wl = ap.window_left, wr = ap.causal ? 0 : ap.window_right;
            for (j = 0; j < sk; j++) {
                long jj = (long)j;
                if ((wl < 0 || jj >= P - wl) && (wr < 0 || jj <= P + wr)) {
                    qf_dot_acc acc, abs;
                    qf_dot_acc_init(&acc);
                    qf_dot_acc_init(&abs);
                    qf_dot_acc_add_dot(&acc, &abs, d, q + row * d, 1, k + (kvb + j) * d, 1, fq, fk);
                    sc[j] = scale * qf_dot_acc_get_d(&acc, QF_ROUND_RNE);
                    sabs[j] = scale * qf_dot_acc_get_d(&abs, QF_ROUND_UP);
                } else {
                    sc[j] = -INFINITY;
                    sabs[j] = 0;
                }
            }
            /* The claim's KV tile and P format (flash kernels). */
            s = qf_bound_attention(&p->t->arith, p->outf, sk, d, dv, sc, sabs, v + kvb * dv,
                                   qf_arith_claim_p_format(&p->t->arith), (size_t)p->t->arith.attn_kv_tile,
                                   ck->exact + row * dv, ck->bound + row * dv);
        }
        snprintf(r->bound.kind, sizeof r->bound.kind, "attention");
    }
    if (s != QF_OK) {
        say(r, QF_VERDICT_MISTRUSTED, "cannot derive the bound from the claim: %s", qf_status_str(s));
        goto done;
    }
    rc = 0;
done:
    free(sc);
    free(sabs);
    qf_ref_out_free(&ex);
    qf_ref_out_free(&ro);
    qf_ref_out_free(&lex);
    qf_ref_out_free(&lro);
    return rc;
}

/* MoE router: weights (ck, every element) and indices.  An index that
 * differs from the reference's is FAILED unless the reference marked that
 * slot as a legitimate tie (QF_REF_TIE_SET / QF_REF_TIE_ORDER: keys within
 * tie_tol = 0, i.e. exactly equal, or not provably ordered).  Weights: the
 * claimed ulp bound. */
static int reference_moe(prep *p, checked *ck, qf_result *r)
{
    const qf_op_moe_router *m = &p->op.u.moe_router;
    qf_ref_moe_params mp;
    qf_ref_opts o64 = qf_ref_opts_default(), oo = qf_ref_opts_default();
    qf_ref_out ex, ro;
    int32_t *ri = NULL;
    uint8_t *ties = NULL;
    size_t i, n = p->out_n, bad = 0, flips = 0, first = 0;
    qf_status s;
    int rc = -1;
    memset(&ex, 0, sizeof ex);
    memset(&ro, 0, sizeof ro);
    qf_ref_moe_params_init(&mp);
    mp.tokens = m->tokens;
    mp.experts = m->experts;
    mp.top_k = m->top_k;
    mp.score = m->score;
    mp.renormalize = m->renormalize;
    mp.route_scale = m->route_scale;
    if (checked_all(ck, n) || qf_ref_out_alloc(&ex, n) != QF_OK || qf_ref_out_alloc(&ro, n) != QF_OK ||
        !(ri = malloc((n + 1) * sizeof *ri)) || !(ties = calloc(n + 1, 1))) {
        say(r, QF_VERDICT_MISTRUSTED, "out of memory for the reference");
        goto done;
    }
    o64.threads = oo.threads = 1;
    oo.format = p->outf;
    s = qf_ref_moe_router(&o64, &mp, p->inval[0], ri, &ex, ties);
    if (s == QF_OK)
        s = qf_ref_moe_router(&oo, &mp, p->inval[0], ri, &ro, NULL);
    if (s != QF_OK) {
        say(r, QF_VERDICT_MISTRUSTED, "reference failed: %s", qf_status_str(s));
        goto done;
    }
    take_ref(ck, &ex, &ro, r);
    for (i = 0; i < n; i++) {
        int32_t got;
        memcpy(&got, p->g1[0].data + 4 * i, 4);
        if (got == ri[i])
            continue;
        if (ties[i]) {
            flips++;
            continue;
        }
        if (bad++ == 0)
            first = i;
    }
    if (bad) {
        int32_t got;
        memcpy(&got, p->g1[0].data + 4 * first, 4);
        snprintf(
            p->fail1, sizeof p->fail1,
            "indices: %zu of %zu differ from the reference with no tie to allow it (first at (%zu, %zu): "
            "expert %d, the reference selects %d)%s",
            bad, n, first / m->top_k, first % m->top_k, (int)got, (int)ri[first],
            flips ? "; legitimate tie flips elsewhere" : "");
    }
    for (i = 0; i < n; i++)
        ck->bound[i] = NAN;
    if (p->t->arith.max_ulp > 0) {
        qf_bound_ulp(p->outf, p->t->arith.max_ulp, n, ck->exact, ck->bound);
        snprintf(r->bound.kind, sizeof r->bound.kind, "ulp");
        r->bound.claimed_ulp = p->t->arith.max_ulp;
    }
    rc = 0;
done:
    free(ri);
    free(ties);
    qf_ref_out_free(&ex);
    qf_ref_out_free(&ro);
    return rc;
}

/* quantize: an exact expectation.  The block module's element codes,
 * scale codes and (NVFP4) global scale code are what a correct kernel
 * writes, so any difference is FAILED, naming the first one.  Metrics
 * compare the element values (decoded codes, before scaling) with bound 0. */
static int reference_quantize(prep *p, checked *ck, qf_result *r)
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
    if (checked_all(ck, n) || qf_ref_out_alloc(&q, n) != QF_OK ||
        !(sc.codes = calloc(ns + 1, sizeof *sc.codes))) {
        say(r, QF_VERDICT_MISTRUSTED, "out of memory for the reference");
        goto done;
    }
    o.threads = 1;
    s = qf_ref_block_quantize(&o, bp, p->inval[0], p->rows, p->cols, &q, &sc);
    if (s != QF_OK) {
        say(r, QF_VERDICT_MISTRUSTED, "reference failed: %s", qf_status_str(s));
        goto done;
    }
    for (i = 0; i < n; i++) {
        uint64_t got = load_code(p->g[0].data, eb, i);
        ck->exact[i] = ck->rounded[i] = qf_format_decode(p->outf, q.code[i]);
        ck->bound[i] = 0;
        ck->status[i] = QF_REF_EXACT;
        if (got != q.code[i] && bad++ == 0)
            first = i;
    }
    r->ref_exact = n;
    for (i = 0; i < ns; i++)
        if (load_code(p->g1[0].data, p->out1_eb, i) != sc.codes[i] && sbad++ == 0)
            sfirst = i;
    if (bad) {
        snprintf(
            p->fail1, sizeof p->fail1,
            "codes: %zu of %zu element codes differ from the reference (first at (%zu, %zu): got 0x%llx, "
            "expected 0x%llx)%s",
            bad, n, first / p->cols, first % p->cols, (unsigned long long)load_code(p->g[0].data, eb, first),
            (unsigned long long)q.code[first], sbad ? "; scales differ too" : "");
    } else if (sbad) {
        snprintf(p->fail1, sizeof p->fail1,
                 "scales: %zu of %zu scale codes differ from the reference (first at [%zu]: got 0x%llx, "
                 "expected 0x%llx)",
                 sbad, ns, sfirst, (unsigned long long)load_code(p->g1[0].data, p->out1_eb, sfirst),
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
static void remap(size_t *at, const checked *ck)
{
    if (*at < ck->n)
        *at = (size_t)ck->idx[*at];
}

static qf_policy case_policy(const prep *p)
{
    const qf_suite_policy *sp = &p->c->group->policy;
    qf_policy pol = qf_policy_default(p->op.op == QF_OP_GEMM);
    if (sp->set & QF_POLICY_MAX_ULP)
        pol.max_ulp = sp->max_ulp;
    if (sp->set & QF_POLICY_MAX_NORMWISE)
        pol.max_normwise = sp->max_normwise;
    if (sp->set & QF_POLICY_MIN_SQNR_DB)
        pol.min_sqnr_db = sp->min_sqnr_db;
    if (sp->set & QF_POLICY_BASELINE) {
        pol.baseline_factor = sp->baseline_factor;
        pol.baseline_metric = sp->baseline_rms ? QF_BASELINE_RMS : QF_BASELINE_MAX_ABS;
        pol.baseline_tol = sp->baseline_tol;
    }
    /* quantize compares codes with an exact expectation: zero codes are
     * not weak evidence there, so they never make the check doubtful. */
    if (p->op.op == QF_OP_QUANTIZE)
        pol.max_zero_frac = 1;
    return pol;
}

/* The suite's max_componentwise policy (docs/suites.md): the largest
 * |c^_i - c_i| / (|A||B|)_i for gemm (the magnitude term of the exact
 * engine, rounded up), / |c_i| for the other ops, over the checked,
 * decided elements.  A conformant kernel above it is MARGINAL. */
static void componentwise_policy(const prep *p, const checked *ck, qf_result *r)
{
    double worst = 0, lim = p->c->group->policy.max_componentwise;
    size_t i, at = 0;
    for (i = 0; i < ck->n; i++) {
        double err, den, cw;
        if (p->op.op != QF_OP_GEMM && ck->status &&
            (ck->status[i] == QF_REF_UNDECIDED || ck->status[i] == QF_REF_UNDEFINED))
            continue;
        if (!isfinite(ck->got[i]) || !isfinite(ck->exact[i]))
            continue;
        err = fabs(ck->got[i] - ck->exact[i]);
        den = p->op.op == QF_OP_GEMM ? ck->absb[i] : fabs(ck->exact[i]);
        cw = err == 0 ? 0 : den > 0 ? err / den : INFINITY;
        if (cw > worst) {
            worst = cw;
            at = i;
        }
    }
    if (worst > lim)
        say(r, QF_VERDICT_MARGINAL, "componentwise error %.4g > policy max_componentwise %.4g (checked element %zu)",
            worst, lim, at);
}

/* The policy's baseline kernel on the same inputs, with the same isolation
 * (own child process, poisoned and guarded outputs, time limit), compared
 * with the same reference on the same checked elements.  0 with *bm
 * filled; -1 with *bv (MISTRUSTED or UNSUPPORTED) and a reason in why:
 * a baseline that crashes or misbehaves makes the comparison doubtful, it
 * says nothing about the kernel under test. */
static int run_baseline(prep *p, const checked *ck, const qf_metrics_input *mi0, child_report *rep,
                        double timeout_s, qf_metrics *bm, qf_verdict *bv, char *why, size_t why_size)
{
    prep b = *p; /* shares the inputs; only the outputs are its own */
    qf_result *tr = malloc(sizeof *tr);
    qf_metrics_input mi = *mi0;
    double *got = NULL;
    size_t i, bytes = qf_format_array_bytes(p->outf, p->out_n);
    int eb = p->outf->storage_bits / 8, rc = -1;
    qf_status s;
    *bv = QF_VERDICT_MISTRUSTED;
    memset(b.g, 0, sizeof b.g);
    memset(b.g1, 0, sizeof b.g1);
    b.k = p->bk;
    b.t = p->bt;
    if (!tr || guarded_alloc(&b.g[0], bytes, poison[0]) || guarded_alloc(&b.g[1], bytes, poison[1]) ||
        (p->out1_n && (guarded_alloc(&b.g1[0], p->out1_n * (size_t)p->out1_eb, poison[0]) ||
                       guarded_alloc(&b.g1[1], p->out1_n * (size_t)p->out1_eb, poison[1])))) {
        errf(why, why_size, "baseline %s: out of memory for its outputs", p->bk->name);
        goto done;
    }
    b.out[0].bytes = b.g[0].bytes;
    qf_result_init(tr);
    if (run_child(&b, rep, tr, timeout_s, 0, 0, 0)) {
        errf(why, why_size, "baseline %s did not run: %s", p->bk->name, tr->reason);
        goto done;
    }
    if (rep->status == QF_EUNSUPPORTED) {
        *bv = QF_VERDICT_UNSUPPORTED;
        errf(why, why_size, "unsupported: the baseline %s declined: %s", p->bk->name,
             rep->msg[0] ? rep->msg : "(no reason)");
        goto done;
    }
    if (rep->status != QF_OK) {
        errf(why, why_size, "baseline %s returned %s: %s", p->bk->name, qf_status_str((qf_status)rep->status),
             rep->msg[0] ? rep->msg : "(no message)");
        goto done;
    }
    if (check_outputs(&b, tr)) {
        errf(why, why_size, "baseline %s: %s", p->bk->name, tr->reason);
        goto done;
    }
    got = malloc((ck->n ? ck->n : 1) * sizeof *got);
    if (!got) {
        errf(why, why_size, "baseline %s: out of memory", p->bk->name);
        goto done;
    }
    for (i = 0; i < ck->n; i++)
        got[i] = qf_format_decode(p->outf, load_code(b.g[0].data, eb, (size_t)ck->idx[i]));
    /* Its error only: conformance is the baseline's own qualification. */
    mi.got = got;
    mi.bound = NULL;
    s = qf_metrics_compute(&mi, bm, NULL);
    if (s != QF_OK) {
        errf(why, why_size, "baseline %s: metrics failed: %s", p->bk->name, qf_status_str(s));
        goto done;
    }
    rc = 0;
done:
    free(got);
    free(tr);
    guarded_free(&b.g[0]);
    guarded_free(&b.g[1]);
    guarded_free(&b.g1[0]);
    guarded_free(&b.g1[1]);
    return rc;
}

/* Metrics and a conformance-only verdict of the second output (attention
 * lse); the worse of the two verdicts stands, the reason naming the slot. */
static int second_output(prep *p, checked *ck1, qf_result *r)
{
    qf_metrics_input mi;
    qf_metrics m;
    qf_policy pol = qf_policy_default(0);
    qf_verdict_input vi = qf_verdict_input_default();
    qf_verdict v;
    char why[QF_RESULT_TEXT_MAX];
    size_t i;
    qf_status s;
    for (i = 0; i < ck1->n; i++)
        ck1->got[i] = qf_format_decode(p->outf1, load_code(p->g1[0].data, p->out1_eb, (size_t)ck1->idx[i]));
    memset(&mi, 0, sizeof mi);
    mi.out = p->outf1;
    mi.n = ck1->n;
    mi.got = ck1->got;
    mi.exact = ck1->exact;
    mi.rounded = ck1->rounded;
    mi.bound = ck1->has_bound ? ck1->bound : NULL;
    mi.status = ck1->status;
    s = qf_metrics_compute(&mi, &m, NULL);
    vi.metrics = &m;
    if (s == QF_OK)
        s = qf_verdict_decide(&vi, &pol, &v, why, sizeof why);
    if (s != QF_OK) {
        say(r, QF_VERDICT_MISTRUSTED, "metrics of output %s failed: %s", qf_op_slot_name(p->op.op, 1, 1),
            qf_status_str(s));
        return -1;
    }
    if (qf_verdict_severity(v) > qf_verdict_severity(r->verdict))
        say(r, v, "%s: %.*s", qf_op_slot_name(p->op.op, 1, 1), (int)(sizeof r->reason - 16), why);
    return 0;
}

static void evaluate(prep *p, qf_result *r, double timeout_s, int timing, size_t warmup, size_t reps)
{
    const qf_suite_group *gr = p->c->group;
    child_report *rep = shm_alloc(sizeof *rep);
    checked ck;
    qf_metrics_input mi;
    qf_verdict_input vi = qf_verdict_input_default();
    qf_policy pol;
    size_t i, ndiff = 0, first = 0, n_ovf = 0, n_ovf_failed = 0;
    double ovf_reach = 0;
    int eb;
    uint64_t target = gr->sampling.max_elements, tile = gr->sampling.tile;
    qf_status s;
    qf_metrics bmet;
    qf_verdict bverdict = QF_VERDICT_MISTRUSTED;
    char bwhy[QF_RESULT_TEXT_MAX] = "";
    checked ck1;
    memset(&ck, 0, sizeof ck);
    memset(&ck1, 0, sizeof ck1);
    if (!rep) {
        say(r, QF_VERDICT_MISTRUSTED, "cannot map shared memory: %s", strerror(errno));
        return;
    }
    if (run_child(p, rep, r, timeout_s, 0, 0, 0))
        goto done;
    if (rep->status == QF_EUNSUPPORTED) {
        say(r, QF_VERDICT_UNSUPPORTED, "unsupported: the kernel declined: %s",
            rep->msg[0] ? rep->msg : "(no reason)");
        goto done;
    }
    if (rep->status != QF_OK) {
        say(r, QF_VERDICT_FAILED, "the kernel returned %s: %s", qf_status_str((qf_status)rep->status),
            rep->msg[0] ? rep->msg : "(no message)");
        goto done;
    }
    if (check_outputs(p, r))
        goto done;
    p->global_code[0] = rep->global_code[0];
    p->global_code[1] = rep->global_code[1];
    eb = p->outf->storage_bits / 8;
    qf_metrics_bitwise(p->g[0].data, p->g[1].data, p->out_n, (size_t)eb, &ndiff, &first);
    if (!ndiff && p->out1_n) {
        qf_metrics_bitwise(p->g1[0].data, p->g1[1].data, p->out1_n, (size_t)p->out1_eb, &ndiff, &first);
        first += p->out_n; /* past the first output */
    }
    r->det_checked = 1;
    r->det_equal = ndiff == 0;
    r->det_first_diff = ndiff ? first : 0;
    if (p->op.op == QF_OP_GEMM         ? reference_gemm(p, &ck, r, target, tile)
        : p->op.op == QF_OP_ATTENTION  ? reference_attention(p, &ck, &ck1, r)
        : p->op.op == QF_OP_MOE_ROUTER ? reference_moe(p, &ck, r)
        : p->op.op == QF_OP_QUANTIZE   ? reference_quantize(p, &ck, r)
                                       : reference_rows(p, &ck, r, target, tile))
        goto done;
    for (i = 0; i < ck.n; i++)
        ck.got[i] = qf_format_decode(p->outf, load_code(p->g[0].data, eb, (size_t)ck.idx[i]));
    r->n_checked = ck.n;
    r->sampled = ck.n < p->out_n;
    memset(&mi, 0, sizeof mi);
    mi.out = p->outf;
    mi.n = ck.n;
    mi.got = ck.got;
    mi.exact = ck.exact;
    mi.rounded = ck.rounded;
    mi.bound = r->bound.kind[0] ? ck.bound : NULL;
    /* NaN / Inf where the claimed accumulator may overflow: unchecked, and
     * the case MISTRUSTED below (docs/bounds.md, runner_range.c). */
    if (p->op.op == QF_OP_GEMM && r->bound.kind[0])
        n_ovf = _qf_rr_gemm_mark_overflow(r->bound.rel_abs,
                                          _qf_rr_unscale_factor(&p->in[0], &p->in[1], p->op.u.gemm.alpha),
                                          _qf_rr_acc_max(&p->t->arith), ck.n, ck.absb, ck.exact, ck.rounded,
                                          ck.got, ck.status, &ovf_reach, &n_ovf_failed);
    mi.status = p->op.op == QF_OP_GEMM && !n_ovf ? NULL : ck.status;
    mi.cols = r->sampled ? 0 : p->cols;
    s = qf_metrics_compute(&mi, &r->metrics, NULL);
    if (s != QF_OK) {
        say(r, QF_VERDICT_MISTRUSTED, "metrics failed: %s", qf_status_str(s));
        goto done;
    }
    if (r->sampled) {
        remap(&r->metrics.at_ulp, &ck);
        remap(&r->metrics.at_abs, &ck);
        remap(&r->metrics.at_rel, &ck);
        remap(&r->metrics.at_util, &ck);
        remap(&r->metrics.at_nonfinite_bad, &ck);
        remap(&r->metrics.at_finite_bad, &ck);
        remap(&r->metrics.at_violation, &ck);
        r->metrics.cols = p->cols;
    }
    r->has_metrics = 1;
    if (r->bound.kind[0])
        bound_summary(p, &ck, r);
    pol = case_policy(p);
    vi.metrics = &r->metrics;
    vi.det_claimed = p->t->arith.deterministic;
    vi.det_equal = r->det_equal;
    /* The two runs used 1 and 2 threads when the kernel claims the same
     * bits across thread counts (child_run): their comparison is then the
     * thread-count check. */
    vi.det_threads_claimed = p->t->arith.deterministic_threads;
    vi.det_threads_checked = vi.det_threads_claimed;
    vi.det_threads_equal = r->det_equal;
    vi.det_checked = !vi.det_threads_checked;
    vi.det_first_diff = r->det_first_diff;
    if (p->bk) {
        if (run_baseline(p, &ck, &mi, rep, timeout_s, &bmet, &bverdict, bwhy, sizeof bwhy) == 0)
            vi.baseline = &bmet;
        else
            pol.baseline_factor = NAN; /* decide the rest; the baseline's trouble is applied below */
    }
    s = qf_verdict_decide(&vi, &pol, &r->verdict, r->reason, sizeof r->reason);
    if (s != QF_OK) {
        say(r, QF_VERDICT_MISTRUSTED, "verdict failed: %s", qf_status_str(s));
        goto done;
    }
    if (n_ovf && (r->verdict == QF_VERDICT_QUALIFIED || r->verdict == QF_VERDICT_MARGINAL ||
                  r->verdict == QF_VERDICT_MISTRUSTED))
        say(r, QF_VERDICT_MISTRUSTED,
            "%zu element(s) finite where the rounded reference is NaN or Inf (or NaN against Inf) where "
            "the claimed %s accumulator may overflow (intermediates up to %.3g >= its max %.3g) and the "
            "exact result is finite: outside the range the claim defines",
            n_ovf, qf_format_get(p->t->arith.acc_format)->name, ovf_reach, _qf_rr_acc_max(&p->t->arith));
    if (n_ovf_failed && r->verdict == QF_VERDICT_FAILED) {
        size_t len = strlen(r->reason);
        snprintf(r->reason + len, sizeof r->reason - len,
                 "; %zu NaN/Inf element(s) where the claimed %s accumulator may overflow (intermediates up "
                 "to %.3g >= its max %.3g): inputs outside the range the claim can hold",
                 n_ovf_failed, qf_format_get(p->t->arith.acc_format)->name, ovf_reach,
                 _qf_rr_acc_max(&p->t->arith));
    }
    /* A FAILED kernel stays FAILED (certain evidence); a kernel that would
     * pass cannot, since its fitness against the baseline is unknown. */
    if (p->bk && !vi.baseline && r->verdict == QF_VERDICT_QUALIFIED)
        say(r, bverdict, "%s", bwhy);
    if (r->verdict == QF_VERDICT_QUALIFIED && (p->c->group->policy.set & QF_POLICY_MAX_COMPONENTWISE))
        componentwise_policy(p, &ck, r);
    /* The second output: wrong moe indices are FAILED; attention's lse is
     * judged for conformance on its own, and the worse verdict stands. */
    if (p->fail1[0]) /* the root cause: the weights of a wrong expert are wrong too */
        say(r, QF_VERDICT_FAILED, "%s", p->fail1);
    if (ck1.n && second_output(p, &ck1, r))
        goto done;
    if (timing && (r->verdict == QF_VERDICT_QUALIFIED || r->verdict == QF_VERDICT_MARGINAL)) {
        /* Correctness first: only a kernel that computes the right thing is
         * worth timing.  The timing run gets its own limit per run. */
        qf_result tr = *r;
        double limit = timeout_s * (double)(warmup + reps + 1);
        if (run_child(p, rep, &tr, limit, 1, warmup, reps) == 0 && rep->status == QF_OK && rep->ntimes) {
            double *t = rep->times;
            size_t n = rep->ntimes, a, b;
            for (a = 1; a < n; a++) /* insertion sort: n is small */
                for (b = a; b > 0 && t[b - 1] > t[b]; b--) {
                    double x = t[b];
                    t[b] = t[b - 1];
                    t[b - 1] = x;
                }
            r->timing.measured = 1;
            r->timing.warmup = warmup;
            r->timing.reps = n;
            r->timing.min_s = t[0];
            r->timing.max_s = t[n - 1];
            r->timing.median_s = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
            r->timing.spread = r->timing.median_s > 0 ? (t[n - 1] - t[0]) / r->timing.median_s : NAN;
        }
    }
done:
    checked_free(&ck);
    checked_free(&ck1);
    munmap(rep, sizeof *rep);
}

/* ---- One (case, kernel) pair, in the worker process ----------------------- */

typedef struct pair {
    size_t ci;
    const qf_kernel *k;
    size_t kidx;
} pair;

static void shell_quote(char *dst, size_t size, const char *s)
{
    size_t o = 0;
    int plain = *s != '\0';
    const char *q;
    for (q = s; *q; q++)
        if (!(('a' <= *q && *q <= 'z') || ('A' <= *q && *q <= 'Z') || ('0' <= *q && *q <= '9') ||
              strchr("/._-=,:+@%", *q)))
            plain = 0;
    if (plain) {
        snprintf(dst, size, "%s", s);
        return;
    }
    if (size < 3) {
        if (size)
            dst[0] = '\0';
        return;
    }
    dst[o++] = '\'';
    for (q = s; *q && o + 5 < size; q++) {
        if (*q == '\'') {
            memcpy(dst + o, "'\\''", 4);
            o += 4;
        } else
            dst[o++] = *q;
    }
    dst[o++] = '\'';
    dst[o] = '\0';
}

static void append(char *dst, size_t size, const char *s)
{
    size_t n = strlen(dst);
    if (n < size)
        snprintf(dst + n, size - n, "%s", s);
}

static void fill_common(qf_result *r, const qf_suite *suite, const qf_suite_case *c, const pair *pr,
                        const qf_registry *reg, const qf_runner_opts *o)
{
    const char *const *names;
    size_t i, n;
    char q[1024];
    struct tm tm;
    time_t now = time(NULL);
    const char *suite_arg = o->suite_arg ? o->suite_arg : suite->path;
    qf_result_init(r);
    snprintf(r->case_id, sizeof r->case_id, "%s", c->id);
    snprintf(r->suite, sizeof r->suite, "%s", suite_arg ? suite_arg : "");
    snprintf(r->op, sizeof r->op, "%s", qf_suite_op_name(c->op));
    snprintf(r->kernel, sizeof r->kernel, "%s", pr->k->name);
    snprintf(r->kernel_kind, sizeof r->kernel_kind, "%s", qf_kernel_kind_name(pr->k->kind));
    snprintf(r->kernel_origin, sizeof r->kernel_origin, "%s", qf_registry_origin(reg, pr->kidx));
    snprintf(r->dtype, sizeof r->dtype, "%s", c->dtype->label);
    n = qf_suite_op_roles(c->op, &names);
    for (i = 0; i < n && i < QF_RESULT_MAX_ROLES; i++) {
        snprintf(r->roles[i].role, sizeof r->roles[i].role, "%s", names[i]);
        snprintf(r->roles[i].format, sizeof r->roles[i].format, "%s",
                 c->dtype->role[i] ? c->dtype->role[i]->name : "");
    }
    r->nroles = i;
    n = qf_suite_op_dims(c->op, &names);
    for (i = 0; i < n && i < c->ndims && i < QF_RESULT_MAX_DIMS; i++) {
        snprintf(r->dims[i].name, sizeof r->dims[i].name, "%s", names[i]);
        r->dims[i].value = c->dims[i];
    }
    r->ndims = i;
    for (i = 0; i < c->group->nparams && i < QF_RESULT_MAX_PARAMS; i++) {
        const qf_suite_param *pa = &c->group->params[i];
        const qf_suite_value *v = &pa->values[c->param_choice[i]];
        snprintf(r->params[i].key, sizeof r->params[i].key, "%s", pa->key);
        switch (v->type) {
        case QF_PARAM_BOOL:
            snprintf(r->params[i].value, sizeof r->params[i].value, "%s", v->i ? "true" : "false");
            break;
        case QF_PARAM_INT:
            snprintf(r->params[i].value, sizeof r->params[i].value, "%lld", (long long)v->i);
            break;
        case QF_PARAM_REAL: snprintf(r->params[i].value, sizeof r->params[i].value, "%.17g", v->r); break;
        default: snprintf(r->params[i].value, sizeof r->params[i].value, "%s", v->s ? v->s : ""); break;
        }
    }
    r->nparams = i;
    snprintf(r->input, sizeof r->input, "%s", c->input->label ? c->input->label : c->input->name);
    r->seed = c->seed;
    /* A model kernel runs on the CPU but stands for the matrix unit it
     * models: its results are labelled "sim:<arch>" (docs/enable.md). */
    if (pr->k->simulates && strncmp(o->arch ? o->arch : "cpu", "sim:", 4))
        snprintf(r->arch, sizeof r->arch, "sim:%s", pr->k->simulates);
    else
        snprintf(r->arch, sizeof r->arch, "%s", o->arch ? o->arch : "cpu");
    gmtime_r(&now, &tm);
    strftime(r->started, sizeof r->started, "%Y-%m-%dT%H:%M:%SZ", &tm);
    /* The reproducer: the same suite, this case, this kernel. */
    snprintf(r->reproducer, sizeof r->reproducer, "qualify run ");
    shell_quote(q, sizeof q, suite_arg ? suite_arg : "");
    append(r->reproducer, sizeof r->reproducer, q);
    append(r->reproducer, sizeof r->reproducer, " --case ");
    shell_quote(q, sizeof q, c->id);
    append(r->reproducer, sizeof r->reproducer, q);
    append(r->reproducer, sizeof r->reproducer, " --kernel ");
    shell_quote(q, sizeof q, pr->k->name);
    append(r->reproducer, sizeof r->reproducer, q);
    for (i = 0; i < o->nplugins; i++) {
        append(r->reproducer, sizeof r->reproducer, " --plugin ");
        shell_quote(q, sizeof q, o->plugins[i]);
        append(r->reproducer, sizeof r->reproducer, q);
    }
    if (o->reproducer_args)
        append(r->reproducer, sizeof r->reproducer, o->reproducer_args);
}

/* The policy's baseline kernel: registered, on this back end, claiming a
 * tuple for the case's dtypes and the case's shape.  0, or -1 with
 * UNSUPPORTED and the reason in r (nothing to compare with is not a
 * verdict on the kernel). */
static int find_baseline(prep *p, const qf_registry *reg, qf_result *r)
{
    const char *name = p->c->group->policy.baseline;
    char why[256];
    size_t i;
    p->bk = name ? qf_registry_find(reg, name) : NULL;
    if (!p->bk) {
        say(r, QF_VERDICT_UNSUPPORTED, "unsupported: the policy's baseline kernel '%s' is not registered",
            name ? name : "(none)");
        return -1;
    }
    if (p->bk->op != p->k->op || (p->bk->backend && strcmp(p->bk->backend, "cpu"))) {
        say(r, QF_VERDICT_UNSUPPORTED, "unsupported: the baseline %s is not a cpu kernel of op %s", name,
            qf_op_name(p->k->op));
        return -1;
    }
    for (i = 0; i < p->bk->n_dtypes && !p->bt; i++)
        if (tuple_matches(p->opname, p->c, &p->bk->dtypes[i]))
            p->bt = &p->bk->dtypes[i];
    if (!p->bt) {
        say(r, QF_VERDICT_UNSUPPORTED, "unsupported: the baseline %s claims no dtype tuple for %s", name,
            p->c->dtype->label);
        return -1;
    }
    if (qf_kernel_check(p->bk, &p->op, p->bt, why, sizeof why) != QF_OK) {
        say(r, QF_VERDICT_UNSUPPORTED, "unsupported: the baseline %s: %s", name, why);
        return -1;
    }
    return 0;
}

static void run_pair(const qf_suite *suite, const qf_suite_cases *cases, const pair *pr,
                     const qf_registry *reg, const qf_runner_opts *o, qf_result *r)
{
    const qf_suite_case *c = &cases->cases[pr->ci];
    const char *arch = o->arch ? o->arch : "cpu";
    prep p;
    size_t i;
    char why[256], devarch[64];
    double t0 = now_s();
    int ok = 0;
    fill_common(r, suite, c, pr, reg, o);
    memset(&p, 0, sizeof p);
    p.c = c;
    p.k = pr->k;
    p.opname = qf_suite_op_name(c->op);
    p.seed = c->seed;
    /* GPU kernels run on the device found (runner_device.c): its absence or
     * another architecture is UNSUPPORTED with the reason. */
    if (_qf_rdev_is_device(pr->k)) {
        if (_qf_rdev_probe(pr->k, devarch, sizeof devarch, why, sizeof why)) {
            say(r, QF_VERDICT_UNSUPPORTED, "unsupported: %s", why);
            goto out;
        }
        arch = devarch;
        snprintf(r->arch, sizeof r->arch, "%s", arch);
    }
    if (c->group->narch) {
        for (i = 0; i < c->group->narch && !ok; i++)
            ok = qf_suite_glob_match(c->group->arch[i], arch);
        if (!ok) {
            say(r, QF_VERDICT_UNSUPPORTED,
                "unsupported: the suite group is limited to other architectures "
                "than %s",
                arch);
            goto out;
        }
    }
    if (!qf_kernel_arch_ok(pr->k, arch)) {
        say(r, QF_VERDICT_UNSUPPORTED, "unsupported: %s runs on '%s', not on %s", pr->k->name,
            pr->k->archs ? pr->k->archs : "?", arch);
        goto out;
    }
    if (build_op(&p, r))
        goto out;
    for (i = 0; i < pr->k->n_dtypes; i++)
        if (tuple_matches(p.opname, c, &pr->k->dtypes[i])) {
            p.t = &pr->k->dtypes[i];
            break;
        }
    if (!p.t) {
        say(r, QF_VERDICT_UNSUPPORTED, "unsupported: %s claims no dtype tuple for %s", pr->k->name,
            c->dtype->label);
        goto out;
    }
    snprintf(r->dtype_tuple, sizeof r->dtype_tuple, "%s", p.t->name ? p.t->name : "");
    if (qf_kernel_check(pr->k, &p.op, p.t, why, sizeof why) != QF_OK) {
        say(r, QF_VERDICT_UNSUPPORTED, "unsupported: %s", why);
        goto out;
    }
    if ((c->group->policy.set & QF_POLICY_BASELINE) && find_baseline(&p, reg, r))
        goto out;
    if (prepare_inputs(&p, r))
        goto out;
    r->n_elements = p.out_n;
    evaluate(&p, r, o->timeout_s > 0 ? o->timeout_s : 60, o->time, o->warmup ? o->warmup : 3,
             o->reps ? o->reps : 10);
out:
    prep_free(&p);
    r->wall_s = now_s() - t0;
}

/* ---- The sweep --------------------------------------------------------------- */

typedef struct slot {
    pid_t pid;
    size_t item; /* index into the pending list */
} slot;

typedef struct shared_slot {
    volatile int done;
    qf_result r;
} shared_slot;

static int key_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

qf_status qf_runner_run(const qf_suite *suite, const qf_registry *reg, const qf_runner_opts *opts,
                        qf_runner_summary *sum, char *err, size_t err_size)
{
    qf_runner_opts o = opts ? *opts : qf_runner_opts_default();
    qf_suite_cases cases;
    pair *pairs = NULL;
    size_t npairs = 0, cap = 0, ci, gi, ki, i;
    size_t *pending = NULL, npending = 0, done_count = 0;
    qf_result *prev = NULL;
    size_t nprev = 0;
    char **keys = NULL;
    qf_journal *jr = NULL;
    slot *slots = NULL;
    shared_slot *shm = NULL;
    qf_status st = QF_OK;
    int jobs, torn = 0;
    if (!suite || !reg || !sum)
        return QF_EINVAL;
    memset(sum, 0, sizeof *sum);
    memset(&cases, 0, sizeof cases);
    jobs = o.jobs < 1 ? 1 : o.jobs;
    st = qf_suite_expand(suite, &cases, err, err_size);
    if (st != QF_OK)
        return st;
    if (o.case_id && !qf_suite_cases_find(&cases, o.case_id)) {
        errf(err, err_size, "%s: no case with id '%s' (qualify run SUITE --list shows them)",
             suite->path ? suite->path : "suite", o.case_id);
        st = QF_EPARSE;
        goto out;
    }
    /* The plan: each case with every kernel matching one of its group's
     * globs (each kernel once), in registration order. */
    for (ci = 0; ci < cases.n; ci++) {
        const qf_suite_case *c = &cases.cases[ci];
        if (o.case_id && strcmp(c->id, o.case_id))
            continue;
        for (ki = 0; ki < qf_registry_count(reg); ki++) {
            const qf_kernel *k = qf_registry_get(reg, ki);
            int match = 0;
            if (o.kernel_glob && !qf_kernel_glob(o.kernel_glob, k->name))
                continue;
            for (gi = 0; gi < c->group->nkernels && !match; gi++)
                match = qf_kernel_glob(c->group->kernels[gi], k->name);
            if (!match)
                continue;
            if (npairs == cap) {
                size_t nc = cap ? 2 * cap : 64;
                pair *np = realloc(pairs, nc * sizeof *np);
                if (!np) {
                    st = QF_ENOMEM;
                    goto out;
                }
                pairs = np;
                cap = nc;
            }
            pairs[npairs].ci = ci;
            pairs[npairs].k = k;
            pairs[npairs].kidx = ki;
            npairs++;
        }
    }
    if (npairs == 0) {
        errf(err, err_size,
             "no (case, kernel) pair selected: no registered kernel matches the suite's kernel "
             "globs%s%s",
             o.kernel_glob ? " and --kernel " : "", o.kernel_glob ? o.kernel_glob : "");
        st = QF_EINVAL;
        goto out;
    }
    sum->results = calloc(npairs, sizeof *sum->results);
    pending = malloc(npairs * sizeof *pending);
    if (!sum->results || !pending) {
        st = QF_ENOMEM;
        goto out;
    }
    sum->n = npairs;
    /* Resume: finished pairs come from the journal, the rest run. */
    if (o.resume && o.journal_path && access(o.journal_path, F_OK) == 0) {
        st = qf_journal_read(o.journal_path, &prev, &nprev, &torn, NULL, err, err_size);
        if (st != QF_OK)
            goto out;
        keys = malloc((nprev + 1) * sizeof *keys);
        if (!keys) {
            st = QF_ENOMEM;
            goto out;
        }
        for (i = 0; i < nprev; i++) {
            keys[i] = malloc(QF_RESULT_NAME_MAX + QF_RESULT_ID_MAX + 2);
            if (!keys[i]) {
                nprev = i;
                st = QF_ENOMEM;
                goto out;
            }
            qf_result_key(&prev[i], keys[i], QF_RESULT_NAME_MAX + QF_RESULT_ID_MAX + 2);
        }
    }
    for (i = 0; i < npairs; i++) {
        const qf_suite_case *c = &cases.cases[pairs[i].ci];
        char key[QF_RESULT_NAME_MAX + QF_RESULT_ID_MAX + 2];
        size_t j, found = (size_t)-1;
        snprintf(key, sizeof key, "%s %s", pairs[i].k->name, c->id);
        for (j = 0; j < nprev; j++) /* the last record of a key wins */
            if (!strcmp(keys[j], key))
                found = j;
        if (found != (size_t)-1) {
            sum->results[i] = prev[found];
            sum->resumed++;
            done_count++;
            if (o.progress)
                o.progress(o.progress_user, &sum->results[i], done_count, npairs, 1);
        } else {
            pending[npending++] = i;
        }
    }
    (void)key_cmp;
    if (o.journal_path) {
        st = qf_journal_open(o.journal_path, o.resume, o.header, &jr, &torn, err, err_size);
        if (st != QF_OK)
            goto out;
        sum->journal_torn = torn;
    }
    /* GPU back ends: probed once here, before the workers fork. */
    for (i = 0; i < npending; i++)
        _qf_rdev_prepare(pairs[pending[i]].k);
    slots = calloc((size_t)jobs, sizeof *slots);
    shm = shm_alloc((size_t)jobs * sizeof *shm);
    if (!slots || !shm) {
        st = QF_ENOMEM;
        goto out;
    }
    {
        size_t next = 0, running = 0;
        double nap = 0.0005;
        for (i = 0; i < (size_t)jobs; i++)
            slots[i].pid = 0;
        while (next < npending || running) {
            int progressed = 0;
            for (i = 0; i < (size_t)jobs && next < npending; i++) {
                pid_t pid;
                if (slots[i].pid)
                    continue;
                shm[i].done = 0;
                fflush(NULL);
                pid = fork();
                if (pid < 0) {
                    errf(err, err_size, "cannot fork a worker: %s", strerror(errno));
                    st = QF_EIO;
                    break;
                }
                if (pid == 0) {
                    /* The worker: one pair, result into its shared slot;
                     * _exit skips the caller's atexit handlers. */
                    run_pair(suite, &cases, &pairs[pending[next]], reg, &o, &shm[i].r);
                    shm[i].done = 1;
                    _exit(0);
                }
                slots[i].pid = pid;
                slots[i].item = next++;
                running++;
            }
            if (st != QF_OK && running == 0)
                break;
            for (i = 0; i < (size_t)jobs; i++) {
                int ws = 0;
                pid_t w;
                size_t it;
                qf_result *r;
                if (!slots[i].pid)
                    continue;
                w = waitpid(slots[i].pid, &ws, WNOHANG);
                if (w == 0 || (w < 0 && errno == EINTR))
                    continue;
                it = pending[slots[i].item];
                r = &sum->results[it];
                if (w > 0 && shm[i].done && WIFEXITED(ws) && WEXITSTATUS(ws) == 0) {
                    *r = shm[i].r;
                } else {
                    /* The worker itself died: the runner or the reference,
                     * not the kernel (which runs in its own child). */
                    pair *pr = &pairs[it];
                    fill_common(r, suite, &cases.cases[pr->ci], pr, reg, &o);
                    r->signal = w > 0 && WIFSIGNALED(ws) ? WTERMSIG(ws) : 0;
                    say(r, QF_VERDICT_CRASHED,
                        "crashed: the worker process (runner and reference, not the kernel) died%s%s",
                        r->signal ? ": " : "", r->signal ? strsignal(r->signal) : "");
                }
                slots[i].pid = 0;
                running--;
                progressed = 1;
                done_count++;
                if (jr && qf_journal_append(jr, r) != QF_OK && st == QF_OK) {
                    errf(err, err_size, "%s: cannot append to the journal: %s", o.journal_path,
                         strerror(errno));
                    st = QF_EIO;
                }
                if (o.progress)
                    o.progress(o.progress_user, r, done_count, npairs, 0);
            }
            if (!progressed && running) {
                struct timespec ts = {0, (long)(nap * 1e9)};
                nanosleep(&ts, NULL);
                if (nap < 0.005)
                    nap *= 2;
            } else {
                nap = 0.0005;
            }
            if (st != QF_OK && next < npending)
                npending = next; /* stop starting new work after an error */
        }
    }
    for (i = 0; i < npairs; i++)
        if ((unsigned)sum->results[i].verdict < QF_VERDICT_COUNT)
            sum->count[sum->results[i].verdict]++;
out:
    if (jr && qf_journal_close(jr) != QF_OK && st == QF_OK) {
        errf(err, err_size, "%s: cannot close the journal", o.journal_path);
        st = QF_EIO;
    }
    if (shm)
        munmap(shm, (size_t)jobs * sizeof *shm);
    free(slots);
    if (keys)
        for (i = 0; i < nprev; i++)
            free(keys[i]);
    free(keys);
    free(prev);
    free(pending);
    free(pairs);
    qf_suite_cases_free(&cases);
    if (st != QF_OK)
        qf_runner_summary_free(sum);
    return st;
}
