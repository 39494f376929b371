/* gemm_refute.c: the gemm class's refuting inputs (qf_refute.h,
 * docs/refute.md): the suite inputs it adds to every gemm case, which
 * (case, kernel) pairs run them, their values, and the diagnosis of a
 * violation. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "_gemm_refute.h"
#include "qf_refute.h"

/* One suite input per family, as the expansion adds them ("refute:width"). */
static const char *const fam_key[] = {"family"};
static const double fam_val[] = {NAN};
static const char *const fam_text[QF_REFUTE_COUNT][1] = {{"stagnation"}, {"cancel"}, {"width"}, {"ties"}};
#define REFUTE_INPUT(F, L) {"refute", 1, (const char **)fam_key, (double *)fam_val, NULL, L, (const char **)fam_text[F], NULL, 0, NULL, NULL}
const qf_suite_input _qf_gemm_refute_inputs[QF_REFUTE_COUNT] = {
    REFUTE_INPUT(QF_REFUTE_STAGNATION, "refute:stagnation"),
    REFUTE_INPUT(QF_REFUTE_CANCEL, "refute:cancel"),
    REFUTE_INPUT(QF_REFUTE_WIDTH, "refute:width"),
    REFUTE_INPUT(QF_REFUTE_TIES, "refute:ties"),
};

/* The family for the pair's claim and tuple; 0 with why when the pair
 * cannot take refuting inputs. */
static int spec_of(const qf_suite_case *c, const qf_dtype_tuple *t, int fam, qf_refute_spec *s, char *why,
                   size_t ws)
{
    memset(s, 0, sizeof *s);
    if (fam < 0 || !t)
        return 0;
    if (t->in_scale[0] || t->in_scale[1] || (c->dtype->scale && strcmp(c->dtype->scale, "none"))) {
        if (why && ws)
            snprintf(why, ws, "scaled operands are not refuted yet");
        return 0;
    }
    if (_qf_param_real(c, "alpha", 1) != 1 || _qf_param_real(c, "beta", 0) != 0) {
        if (why && ws)
            snprintf(why, ws, "the designs are for alpha = 1, beta = 0");
        return 0;
    }
    s->claim = &t->arith;
    s->fa = qf_format_get(t->in[0]);
    s->fb = qf_format_get(t->in[1]);
    s->fo = qf_format_get(t->out[0]);
    s->k = c->dims[2];
    s->family = (qf_refute_family)fam;
    return 1;
}

int _qf_gemm_refute_applies(const qf_suite_case *c, const qf_kernel *k, char *why, size_t why_size)
{
    const qf_dtype_tuple *t = NULL;
    qf_refute_spec s;
    size_t i;
    for (i = 0; k && i < k->n_dtypes && !t; i++)
        if (_qf_tuple_serves(c, &_qf_op_gemm, &k->dtypes[i]))
            t = &k->dtypes[i];
    if (!spec_of(c, t, _qf_case_refute(c), &s, why, why_size))
        return 0;
    return qf_refute_power(&s, why, why_size) > 0;
}

/* Operand slot of the logical matrix x (rows x cols) stored as the case
 * stores it (transposed when tr), batch entries alike. */
static int store(_qf_case *p, qf_result *r, int slot, const double *x, size_t rows, size_t cols, int tr,
                 int ndim, const int64_t *shape, size_t batch)
{
    const qf_format *f = qf_format_get(p->t->in[slot]);
    size_t n = batch * rows * cols, b, i, j;
    p->inval[slot] = malloc((n ? n : 1) * sizeof(double));
    p->incode[slot] = malloc(qf_format_array_bytes(f, n ? n : 1) + 8);
    if (!p->inval[slot] || !p->incode[slot]) {
        _qf_say(r, QF_CAUSE_HARNESS, "out of memory generating inputs");
        return -1;
    }
    for (b = 0; b < batch; b++)
        for (i = 0; i < rows; i++)
            for (j = 0; j < cols; j++)
                p->inval[slot][b * rows * cols + (tr ? j * rows + i : i * cols + j)] = x[i * cols + j];
    /* The values are members of the format: encoding is exact. */
    if (qf_inputs_quantize(f, NULL, p->inval[slot], n, 0, p->inval[slot], p->incode[slot]) != QF_OK) {
        _qf_say(r, QF_CAUSE_HARNESS, "cannot encode the refuting input %s", qf_op_slot_name(p->op.op, 0, slot));
        return -1;
    }
    qf_tensor_init(&p->in[slot], f->id, ndim, shape);
    p->in[slot].data = p->incode[slot];
    p->in[slot].bytes = qf_format_array_bytes(f, n);
    return 0;
}

int _qf_gemm_refute_gen(_qf_case *p, qf_result *r, int ndim, const int64_t *sa, const int64_t *sb)
{
    const qf_op_gemm *g = &p->op.u.gemm;
    qf_refute_spec s;
    char why[256] = "";
    double *a, *b;
    int rc = -1;
    if (!spec_of(p->c, p->t, _qf_case_refute(p->c), &s, why, sizeof why)) {
        _qf_say(r, QF_CAUSE_UNSUPPORTED, "unsupported: refuting inputs: %s", why);
        return -1;
    }
    a = malloc((g->m * g->k + g->k * g->n + 1) * sizeof *a);
    if (!a) {
        _qf_say(r, QF_CAUSE_HARNESS, "out of memory generating inputs");
        return -1;
    }
    b = a + g->m * g->k;
    if (qf_refute_gemm(&s, g->m, g->n, a, b, why, sizeof why) != QF_OK)
        _qf_say(r, QF_CAUSE_UNSUPPORTED, "unsupported: refute:%s: %s", qf_refute_family_name(s.family), why);
    else
        rc = store(p, r, 0, a, g->m, g->k, g->trans_a, ndim, sa, g->batch) ||
                     store(p, r, 1, b, g->k, g->n, g->trans_b, ndim, sb, g->batch)
                 ? -1
                 : 0;
    free(a);
    return rc;
}

/* At most this many violating elements are replayed per candidate. */
#define EXPLAIN_MAX 16

void _qf_gemm_refute_explain(const _qf_case *p, const _qf_checked *ck, qf_result *r)
{
    const qf_op_gemm *g = &p->op.u.gemm;
    qf_refute_spec s;
    char diag[600], old[QF_RESULT_TEXT_MAX - 320];
    size_t i, l, ne = 0, k = g->k;
    double *x, *y, got[EXPLAIN_MAX];
    if (!spec_of(p->c, p->t, _qf_case_refute(p->c), &s, NULL, 0) || !ck->n)
        return;
    x = malloc(2 * EXPLAIN_MAX * (k ? k : 1) * sizeof *x);
    if (!x)
        return;
    y = x + EXPLAIN_MAX * k;
    /* Half the replayed elements over their bound, then the others (those
     * inside tell which narrower arithmetics the kernel is not). */
    for (int pass = 0; pass < 2 && ne < EXPLAIN_MAX; pass++)
        for (i = 0; i < ck->n && ne < (pass ? EXPLAIN_MAX : EXPLAIN_MAX / 2); i++) {
            size_t e = _qf_ck_at(ck, i), pb = e / (g->m * g->n), rem = e % (g->m * g->n);
            size_t row = rem / g->n, col = rem % g->n;
            double gi = _qf_ck_got(p, ck, i);
            int over = fabs(gi - ck->exact[i]) > ck->bound[i] || isnan(gi);
            if (over != (pass == 0))
                continue;
            for (l = 0; l < k; l++) {
                x[ne * k + l] = p->inval[0][pb * g->m * k + (g->trans_a ? l * g->m + row : row * k + l)];
                y[ne * k + l] = p->inval[1][pb * k * g->n + (g->trans_b ? col * k + l : l * g->n + col)];
            }
            got[ne++] = gi;
        }
    qf_refute_diagnose(&s, ne, x, y, got, diag, sizeof diag);
    free(x);
    snprintf(old, sizeof old, "%.*s", (int)sizeof old - 1, r->reason);
    /* the diagnosis first (the property), then as much of the violation as fits */
    snprintf(r->reason, sizeof r->reason, "refute:%s: %.300s; %s", qf_refute_family_name(s.family), diag, old);
}
