/* cli/ref_ops.c: 'qualify ref' gemm, softmax, log-softmax, sum, amax,
 * rmsnorm, layernorm, the activations and GLUs, quantize and dequantize
 * (_ref.h, docs/refs.md). */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "_ref.h"
#include "qf_dot.h"

/* ---- gemm ------------------------------------------------------------------------- */

int _qf_cr_run_gemm(args *a)
{
    tensor A, B, C = {0};
    int rc, ta = a->seen[O_TRANS_A], tb = a->seen[O_TRANS_B], have_c = a->seen[O_C], ndim;
    size_t batch = 1, m, k, kb, n, total, i, shape[3];
    double alpha, beta;
    qf_gemm_desc d;
    qf_ref_out o = {0};
    qf_status st;
    char s1[256], s2[256];

    if ((rc = _qf_cr_need(a, O_A)) || (rc = _qf_cr_need(a, O_B)))
        return rc;
    if ((rc = _qf_cr_get_double(a, O_ALPHA, 1.0, 0, &alpha)) ||
        (rc = _qf_cr_get_double(a, O_BETA, have_c ? 1.0 : 0.0, 0, &beta)))
        return rc;
    if (a->seen[O_BETA] && !have_c)
        return _qf_cr_err(a, "--beta needs --c");
    if ((rc = _qf_cr_load_main(a, O_A, &A)))
        return rc;
    if ((rc = _qf_cr_load_main(a, O_B, &B))) {
        _qf_cr_tensor_free(&A);
        return rc;
    }
    if (A.ndim < 2 || A.ndim > 3)
        REF_FAIL("--a: %s: shape %s: A must be 2-d [M, K] or 3-d [batch, M, K]", A.path,
                 _qf_cr_shape_str(&A, s1, 256));
    if (B.ndim < 2 || B.ndim > 3)
        REF_FAIL("--b: %s: shape %s: B must be 2-d [K, N] or 3-d [batch, K, N]", B.path,
                 _qf_cr_shape_str(&B, s1, 256));
    m = A.shape[A.ndim - (ta ? 1 : 2)];
    k = A.shape[A.ndim - (ta ? 2 : 1)];
    kb = B.shape[B.ndim - (tb ? 1 : 2)];
    n = B.shape[B.ndim - (tb ? 2 : 1)];
    if (kb != k)
        REF_FAIL("--b: shape %s does not match K=%zu of --a%s (shape %s)%s", _qf_cr_shape_str(&B, s1, 256), k,
                 ta ? " (transposed)" : "", _qf_cr_shape_str(&A, s2, 256),
                 tb ? "; with --trans-b, B is [N, K]" : "; B is [K, N] (or [N, K] with --trans-b)");
    if (A.ndim == 3)
        batch = A.shape[0];
    if (B.ndim == 3) {
        if (A.ndim == 3 && B.shape[0] != batch)
            REF_FAIL("--b: shape %s: batch %zu does not match batch %zu of --a",
                     _qf_cr_shape_str(&B, s1, 256), B.shape[0], batch);
        batch = B.shape[0];
    }
    if (have_c) {
        if ((rc = _qf_cr_load_aux(a, O_C, &C)))
            goto done;
        if (!((C.ndim == 2 && C.shape[0] == m && C.shape[1] == n) ||
              (C.ndim == 3 && C.shape[0] == batch && C.shape[1] == m && C.shape[2] == n)))
            REF_FAIL("--c: shape %s does not match the result [%s%zu, %zu] (M=%zu from --a, N=%zu from --b)",
                     _qf_cr_shape_str(&C, s1, 256), A.ndim == 3 || B.ndim == 3 ? "batch, " : "", m, n, m, n);
    }
    if ((rc = _qf_cr_check_writable(a, O_OUT)) || (rc = _qf_cr_check_writable(a, O_STATUS)) ||
        (rc = _qf_cr_check_writable(a, O_CODES)))
        goto done;
    if (m != 0 && n != 0 && batch > SIZE_MAX / m / n)
        REF_FAIL("the result [%zu, %zu, %zu] is too large", batch, m, n);
    total = batch * m * n;
    if ((rc = _qf_cr_out_alloc(a, &o, total)))
        goto done;

    d = qf_gemm_desc_default();
    d.layout = QF_ROW_MAJOR;
    d.trans_a = ta ? QF_TRANS : QF_NO_TRANS;
    d.trans_b = tb ? QF_TRANS : QF_NO_TRANS;
    d.m = m;
    d.n = n;
    d.k = k;
    d.alpha = alpha;
    d.a = A.v;
    d.lda = A.shape[A.ndim - 1] ? A.shape[A.ndim - 1] : 1; /* K = 0: nothing is read */
    d.b = B.v;
    d.ldb = B.shape[B.ndim - 1] ? B.shape[B.ndim - 1] : 1;
    d.beta = have_c ? beta : 0.0;
    d.c = have_c ? C.v : NULL;
    d.ldc = n;
    d.batch = batch;
    d.stride_a = A.ndim == 3 ? (ptrdiff_t)(m * k) : 0;
    d.stride_b = B.ndim == 3 ? (ptrdiff_t)(k * n) : 0;
    d.stride_c = have_c && C.ndim == 3 ? (ptrdiff_t)(m * n) : 0;
    d.fa = a->in_fmt;
    d.fb = a->in_fmt;
    d.out = a->out_fmt;
    d.round = a->ro.round;
    d.saturate = a->ro.saturate;
    d.ldd = n;
    d.stride_d = (ptrdiff_t)(m * n);
    d.d_code = o.code;
    d.d_value = o.value;
    d.d_status = o.status; /* decided on the exact sums: never undecided */
    d.threads = a->ro.threads;
    if (total > 0 && (st = qf_gemm(&d)) != QF_OK) {
        rc = _qf_cr_ref_failed(a, st);
        goto done;
    }
    for (i = 0; i < total; i++) {
        if (o.status[i] == QF_REF_EXACT)
            o.n_exact++;
        else if (o.status[i] == QF_REF_ROUNDED)
            o.n_rounded++;
        else
            o.n_undefined++;
    }
    ndim = A.ndim == 3 || B.ndim == 3 ? 3 : 2;
    shape[0] = batch;
    shape[ndim - 2] = m;
    shape[ndim - 1] = n;
    if ((rc = _qf_cr_write_main(a, &o, total, ndim, shape)) != 0)
        goto done;
    rc = _qf_cr_finish(a, &o, NULL, NULL, "exact dot products, rounded once");
done:
    qf_ref_out_free(&o);
    _qf_cr_tensor_free(&A);
    _qf_cr_tensor_free(&B);
    _qf_cr_tensor_free(&C);
    return rc;
}

/* ---- Row ops: softmax, log-softmax, sum, amax -------------------------------------- */

int _qf_cr_run_rows(args *a)
{
    int kind = a->op->kind;
    tensor X;
    size_t rows = 0, cols = 0, nout;
    double scale = 1.0;
    qf_ref_out o = {0};
    qf_status st;
    int rc;
    if ((rc = _qf_cr_need(a, O_X)))
        return rc;
    if ((rc = _qf_cr_get_double(a, O_SCALE, 1.0, 0, &scale)))
        return rc;
    if ((rc = _qf_cr_load_main(a, O_X, &X)))
        return rc;
    if ((rc = _qf_cr_last_axis(a, &X, &rows, &cols)))
        goto done;
    nout = kind >= 2 ? rows : X.n; /* sum and amax drop the last axis */
    if ((rc = _qf_cr_prepare(a, &o, nout)))
        goto done;
    switch (kind) {
    case 0: st = qf_ref_softmax(&a->ro, X.v, rows, cols, scale, &o); break;
    case 1: st = qf_ref_log_softmax(&a->ro, X.v, rows, cols, scale, &o); break;
    case 2: st = qf_ref_sum(&a->ro, X.v, rows, cols, &o); break;
    default: st = qf_ref_amax(&a->ro, X.v, rows, cols, &o); break;
    }
    rc = _qf_cr_conclude(a, st, &o, nout, kind >= 2 ? X.ndim - 1 : X.ndim, X.shape);
done:
    qf_ref_out_free(&o);
    _qf_cr_tensor_free(&X);
    return rc;
}

/* ---- rmsnorm, layernorm ------------------------------------------------------------- */

int _qf_cr_run_norm(args *a)
{
    int layer = a->op->kind;
    tensor X = {0}, W = {0}, Bi = {0};
    qf_ref_norm_params p = {0};
    qf_ref_out o = {0};
    qf_status st;
    int rc;
    if ((rc = _qf_cr_need(a, O_X)))
        return rc;
    if ((rc = _qf_cr_get_double(a, O_EPS, layer ? 1e-5 : 1e-6, 0, &p.eps)) ||
        (rc = _qf_cr_get_double(a, O_WEIGHT_OFFSET, 0.0, 0, &p.weight_offset)))
        return rc;
    if (p.eps < 0)
        return _qf_cr_err(a, "--eps: '%s' is negative", a->str[O_EPS]);
    if (a->seen[O_WEIGHT_OFFSET] && !a->seen[O_WEIGHT])
        return _qf_cr_err(a, "--weight-offset needs --weight");
    if ((rc = _qf_cr_load_main(a, O_X, &X)) || (rc = _qf_cr_last_axis(a, &X, &p.rows, &p.cols)))
        goto done;
    if (a->seen[O_WEIGHT] && ((rc = _qf_cr_load_aux(a, O_WEIGHT, &W)) ||
                              (rc = _qf_cr_check_1d(a, &W, p.cols, "the last dimension of --x"))))
        goto done;
    if (a->seen[O_BIAS] && ((rc = _qf_cr_load_aux(a, O_BIAS, &Bi)) ||
                            (rc = _qf_cr_check_1d(a, &Bi, p.cols, "the last dimension of --x"))))
        goto done;
    if ((rc = _qf_cr_prepare(a, &o, X.n)))
        goto done;
    p.weight = W.v;
    p.bias = Bi.v;
    st = layer ? qf_ref_layernorm(&a->ro, &p, X.v, &o) : qf_ref_rmsnorm(&a->ro, &p, X.v, &o);
    rc = _qf_cr_conclude(a, st, &o, X.n, X.ndim, X.shape);
done:
    qf_ref_out_free(&o);
    _qf_cr_tensor_free(&X);
    _qf_cr_tensor_free(&W);
    _qf_cr_tensor_free(&Bi);
    return rc;
}

/* ---- activations ------------------------------------------------------------------- */

static int gelu_kind(args *a, qf_ref_act *act)
{
    *act = QF_REF_ACT_GELU_ERF;
    if (!a->seen[O_APPROX] || !strcmp(a->str[O_APPROX], "erf") || !strcmp(a->str[O_APPROX], "none"))
        return 0;
    if (!strcmp(a->str[O_APPROX], "tanh")) {
        *act = QF_REF_ACT_GELU_TANH;
        return 0;
    }
    return _qf_cr_err(a, "--approx: unknown GELU form '%s'; valid: erf tanh", a->str[O_APPROX]);
}

int _qf_cr_run_act(args *a)
{
    qf_ref_act act = (qf_ref_act)a->op->kind;
    tensor X;
    qf_ref_out o = {0};
    int rc;
    if (act == QF_REF_ACT_GELU_ERF && (rc = gelu_kind(a, &act)))
        return rc;
    if ((rc = _qf_cr_need(a, O_X)))
        return rc;
    if ((rc = _qf_cr_load_main(a, O_X, &X)))
        return rc;
    if ((rc = _qf_cr_prepare(a, &o, X.n)))
        goto done;
    rc = _qf_cr_conclude(a, qf_ref_activation(&a->ro, act, X.v, X.n, &o), &o, X.n, X.ndim, X.shape);
done:
    qf_ref_out_free(&o);
    _qf_cr_tensor_free(&X);
    return rc;
}

int _qf_cr_run_glu(args *a)
{
    qf_ref_act act = (qf_ref_act)a->op->kind;
    tensor X = {0}, G = {0}, U = {0};
    qf_ref_out o = {0};
    int rc, ndim;
    size_t n, shape[QF_NPY_MAX_DIMS];
    char s1[256], s2[256];
    if (act == QF_REF_ACT_GELU_ERF && (rc = gelu_kind(a, &act)))
        return rc;
    if (a->seen[O_X] == (a->seen[O_GATE] || a->seen[O_UP]))
        return _qf_cr_err(a,
                          "give either --gate and --up, or --x (fused: gate = x[..., :d], up = x[..., d:])");
    if (a->seen[O_X]) {
        size_t rows = 0, cols = 0, r;
        if ((rc = _qf_cr_load_main(a, O_X, &X)) || (rc = _qf_cr_last_axis(a, &X, &rows, &cols)))
            goto done;
        if (cols % 2)
            REF_FAIL("--x: %s: shape %s: the last dimension must be even (gate and up halves)", X.path,
                     _qf_cr_shape_str(&X, s1, 256));
        n = rows * (cols / 2);
        G.v = malloc((n ? n : 1) * sizeof(double));
        U.v = malloc((n ? n : 1) * sizeof(double));
        if (!G.v || !U.v)
            REF_FAIL("out of memory");
        for (r = 0; r < rows; r++) {
            memcpy(G.v + r * (cols / 2), X.v + r * cols, cols / 2 * sizeof(double));
            memcpy(U.v + r * (cols / 2), X.v + r * cols + cols / 2, cols / 2 * sizeof(double));
        }
        ndim = X.ndim;
        memcpy(shape, X.shape, sizeof shape);
        shape[ndim - 1] = cols / 2;
    } else {
        if ((rc = _qf_cr_need(a, O_GATE)) || (rc = _qf_cr_need(a, O_UP)))
            goto done;
        if ((rc = _qf_cr_load_main(a, O_GATE, &G)) || (rc = _qf_cr_load_main(a, O_UP, &U)))
            goto done;
        if (G.ndim != U.ndim || memcmp(G.shape, U.shape, (size_t)G.ndim * sizeof(size_t)))
            REF_FAIL("--up: shape %s does not match shape %s of --gate", _qf_cr_shape_str(&U, s1, 256),
                     _qf_cr_shape_str(&G, s2, 256));
        n = G.n;
        ndim = G.ndim;
        memcpy(shape, G.shape, sizeof shape);
    }
    if ((rc = _qf_cr_prepare(a, &o, n)))
        goto done;
    rc = _qf_cr_conclude(a, qf_ref_glu(&a->ro, act, G.v, U.v, n, &o), &o, n, ndim, shape);
done:
    qf_ref_out_free(&o);
    _qf_cr_tensor_free(&X);
    _qf_cr_tensor_free(&G);
    _qf_cr_tensor_free(&U);
    return rc;
}

/* ---- quantize, dequantize ----------------------------------------------------------------------- */

int _qf_cr_run_quant(args *a)
{
    int deq = a->op->kind;
    tensor X = {0}, S = {0};
    qf_ref_out o = {0};
    qf_status st;
    int rc;
    long group;
    size_t ngroups;
    uint64_t *codes = NULL;
    char s1[256];
    if ((rc = _qf_cr_need(a, O_X)))
        return rc;
    if (deq && !a->in_fmt)
        return _qf_cr_err(a, "--in-dtype NAME is required: the format of the codes to dequantize");
    if (!deq && !a->seen[O_OUT_DTYPE])
        return _qf_cr_err(a, "--out-dtype NAME is required: the format to quantize into");
    if ((rc = _qf_cr_get_long(a, O_GROUP, 0, 0, LONG_MAX, &group)))
        return rc;
    if (a->seen[O_GROUP] && !a->seen[O_SCALES])
        return _qf_cr_err(a, "--group needs --scales");
    if ((rc = _qf_cr_load_main(a, O_X, &X)))
        goto done;
    if (a->seen[O_SCALES]) {
        if ((rc = _qf_cr_load_aux(a, O_SCALES, &S)))
            goto done;
        ngroups = group == 0 ? 1 : (X.n + (size_t)group - 1) / (size_t)group;
        if (S.n != ngroups) {
            rc = _qf_cr_err(a,
                            "--scales: %s: shape %s holds %zu scales; %zu elements in groups of %ld need %zu",
                            S.path, _qf_cr_shape_str(&S, s1, 256), S.n, X.n, group, ngroups);
            goto done;
        }
    }
    if ((rc = _qf_cr_prepare(a, &o, X.n)))
        goto done;
    if (deq) {
        size_t i;
        codes = malloc((X.n ? X.n : 1) * sizeof *codes);
        if (codes == NULL)
            REF_FAIL("out of memory");
        /* The values were checked (or decoded): encoding them is exact. */
        for (i = 0; i < X.n; i++)
            codes[i] = qf_format_encode(a->in_fmt, X.v[i], QF_ROUND_RNE, 0, 32, 0);
        st = qf_ref_dequantize(&a->ro, a->in_fmt, codes, X.n, S.v, (size_t)group, &o);
    } else {
        st = qf_ref_quantize(&a->ro, X.v, X.n, S.v, (size_t)group, &o);
    }
    rc = _qf_cr_conclude(a, st, &o, X.n, X.ndim, X.shape);
done:
    free(codes);
    qf_ref_out_free(&o);
    _qf_cr_tensor_free(&X);
    _qf_cr_tensor_free(&S);
    return rc;
}
