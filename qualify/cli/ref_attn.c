/* cli/ref_attn.c: 'qualify ref' attention, rope and moe-router (_ref.h,
 * docs/refs.md). */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "_ref.h"

/* Keywords in the order of their enum values (NULL-terminated). */
static const char *const aligns[] = {"top-left", "bottom-right", NULL};
static const char *const layouts[] = {"interleaved", "half", NULL}; /* qf_ref_rope_layout */
static const char *const scores[] = {"softmax", "sigmoid", NULL};   /* qf_ref_router_score */

/* ---- attention ---------------------------------------------------------------------- */

/* Leading dims of a mask [.., seq_q, seq_k] against (batch, heads): the
 * mask's strides (0 broadcasts), or an error. */
static int mask_strides(args *a, const tensor *t, size_t B, size_t H, size_t sq, size_t sk, size_t *sb,
                        size_t *sh)
{
    char shp[256];
    size_t mb = 1, mh = 1, plane = sq * sk;
    if (t->ndim < 2 || t->ndim > 4 || t->shape[t->ndim - 2] != sq || t->shape[t->ndim - 1] != sk)
        goto bad;
    if (t->ndim == 4) {
        mb = t->shape[0];
        mh = t->shape[1];
    } else if (t->ndim == 3) { /* [heads or 1, seq_q, seq_k] */
        mh = t->shape[0];
    }
    if ((mb != 1 && mb != B) || (mh != 1 && mh != H))
        goto bad;
    *sh = mh == 1 ? 0 : plane;
    *sb = mb == 1 ? 0 : mh * plane;
    return 0;
bad:
    return _qf_cr_err(
        a,
        "--%s: %s: shape %s does not broadcast to [batch=%zu, heads=%zu, seq_q=%zu, seq_k=%zu] (give "
        "[seq_q, seq_k], [heads or 1, seq_q, seq_k] or [batch or 1, heads or 1, seq_q, seq_k])",
        t->opt, t->path, _qf_cr_shape_str(t, shp, sizeof shp), B, H, sq, sk);
}

/* Copy a broadcast mask into the full [B][H][sq][sk] layout. */
static double *expand_mask(const double *m, size_t B, size_t H, size_t plane, size_t sb, size_t sh)
{
    size_t total = B * H * plane;
    double *o = malloc((total ? total : 1) * sizeof *o);
    size_t b, h;
    if (o == NULL)
        return NULL;
    for (b = 0; b < B; b++)
        for (h = 0; h < H; h++)
            memcpy(o + (b * H + h) * plane, m + b * sb + h * sh, plane * sizeof *o);
    return o;
}

int _qf_cr_run_attention(args *a)
{
    tensor Q = {0}, K = {0}, V = {0}, MA = {0}, MB = {0};
    qf_ref_attn_params p;
    qf_ref_out o = {0}, lse = {0};
    size_t B, H, HK, SQ, SK, D, DV, i, sb_a = 0, sh_a = 0, sb_b = 0, sh_b = 0, shape[4];
    int rc, qn;
    long wl, wr;
    double *ma_full = NULL, *mb_full = NULL;
    uint8_t *mbool = NULL;
    qf_status st;
    char s1[256], s2[256];

    qf_ref_attn_params_init(&p);
    if ((rc = _qf_cr_need(a, O_Q)) || (rc = _qf_cr_need(a, O_K)) || (rc = _qf_cr_need(a, O_V)))
        return rc;
    if ((rc = _qf_cr_get_double(a, O_SCALE, 0.0, 0, &p.scale)) ||
        (rc = _qf_cr_get_double(a, O_SOFTCAP, 0.0, 0, &p.softcap)) ||
        (rc = _qf_cr_get_double(a, O_MASKED_ROW, 0.0, 1, &p.masked_row_value)) ||
        (rc = _qf_cr_get_long(a, O_WIN_L, -1, -1, LONG_MAX, &wl)) ||
        (rc = _qf_cr_get_long(a, O_WIN_R, -1, -1, LONG_MAX, &wr)))
        return rc;
    if (a->seen[O_SCALE] && p.scale == 0)
        return _qf_cr_err(a,
                          "--scale: 0 would make every logit 0; omit --scale for 1/sqrt(head_dim) (exactly)");
    if (p.softcap < 0)
        return _qf_cr_err(a, "--softcap: '%s' must be positive (omit it for no cap)", a->str[O_SOFTCAP]);
    if (a->seen[O_CAUSAL] && a->seen[O_WIN_R] && wr != 0)
        return _qf_cr_err(
            a, "--causal and --window-right %ld contradict each other (--causal is window-right 0)", wr);
    p.window_left = wl;
    p.window_right = wr;
    p.causal = a->seen[O_CAUSAL];
    if (a->seen[O_ALIGN] && (rc = _qf_cr_keyword(a, O_ALIGN, "alignment", aligns, &p.align_bottom_right)))
        return rc;
    p.lse_format = a->lse_fmt;

    if ((rc = _qf_cr_load_main(a, O_Q, &Q)) || (rc = _qf_cr_load_main(a, O_K, &K)) ||
        (rc = _qf_cr_load_main(a, O_V, &V)))
        goto done;
    qn = Q.ndim;
    if (qn < 2 || qn > 4)
        REF_FAIL("--q: %s: shape %s: q must be [batch, heads, seq_q, head_dim], [heads, seq_q, head_dim] or "
                 "[seq_q, head_dim]",
                 Q.path, _qf_cr_shape_str(&Q, s1, 256));
    if (K.ndim != qn)
        REF_FAIL("--k: shape %s has %d dimensions, --q has %d (shape %s)", _qf_cr_shape_str(&K, s1, 256),
                 K.ndim, qn, _qf_cr_shape_str(&Q, s2, 256));
    if (V.ndim != qn)
        REF_FAIL("--v: shape %s has %d dimensions, --q has %d (shape %s)", _qf_cr_shape_str(&V, s1, 256),
                 V.ndim, qn, _qf_cr_shape_str(&Q, s2, 256));
    B = qn == 4 ? Q.shape[0] : 1;
    H = qn >= 3 ? Q.shape[qn - 3] : 1;
    HK = qn >= 3 ? K.shape[qn - 3] : 1;
    SQ = Q.shape[qn - 2];
    D = Q.shape[qn - 1];
    SK = K.shape[qn - 2];
    DV = V.shape[qn - 1];
    if (qn == 4 && K.shape[0] != B)
        REF_FAIL("--k: shape %s: batch %zu does not match batch %zu of --q", _qf_cr_shape_str(&K, s1, 256),
                 K.shape[0], B);
    if (HK == 0 || H % HK != 0)
        REF_FAIL(
            "--k: shape %s: %zu kv heads do not divide the %zu heads of --q (GQA needs heads %% kv_heads "
            "== 0)",
            _qf_cr_shape_str(&K, s1, 256), HK, H);
    if (K.shape[qn - 1] != D)
        REF_FAIL("--k: shape %s: head_dim %zu does not match head_dim %zu of --q",
                 _qf_cr_shape_str(&K, s1, 256), K.shape[qn - 1], D);
    if ((qn == 4 && V.shape[0] != B) || (qn >= 3 && V.shape[qn - 3] != HK) || V.shape[qn - 2] != SK)
        REF_FAIL("--v: shape %s does not match --k %s: want [%s%s%zu, head_dim_v]",
                 _qf_cr_shape_str(&V, s1, 256), _qf_cr_shape_str(&K, s2, 256), qn == 4 ? "batch, " : "",
                 qn >= 3 ? "kv_heads, " : "", SK);
    if (D == 0)
        REF_FAIL("--q: head_dim is 0");
    p.batch = B;
    p.heads = H;
    p.kv_heads = HK;
    p.seq_q = SQ;
    p.seq_k = SK;
    p.head_dim = D;
    p.head_dim_v = DV;
    if (DV == 0)
        REF_FAIL("--v: head_dim_v is 0");
    if (a->seen[O_MASK_ADD]) {
        if ((rc = _qf_cr_load_aux(a, O_MASK_ADD, &MA)) ||
            (rc = mask_strides(a, &MA, B, H, SQ, SK, &sb_a, &sh_a)))
            goto done;
        for (i = 0; i < MA.n; i++)
            if (isnan(MA.v[i]) || MA.v[i] == INFINITY) {
                char idx[256];
                _qf_cr_index_str(&MA, i, idx, sizeof idx);
                REF_FAIL("--mask-add: %s: element %zu (index %s) is %s; an additive mask holds finite values "
                         "or -inf",
                         MA.path, i, idx, isnan(MA.v[i]) ? "nan" : "+inf");
            }
    }
    if (a->seen[O_MASK_BOOL]) {
        if ((rc = _qf_cr_load(a, O_MASK_BOOL, NULL, "aux-dtype", &MB)) ||
            (rc = mask_strides(a, &MB, B, H, SQ, SK, &sb_b, &sh_b)))
            goto done;
    }
    if ((rc = _qf_cr_common_checks(a)) || (rc = _qf_cr_check_writable(a, O_LSE_OUT)))
        goto done;
    /* One pair of strides serves both masks: expand when they differ. */
    if (MA.v && MB.v && (sb_a != sb_b || sh_a != sh_b)) {
        ma_full = expand_mask(MA.v, B, H, SQ * SK, sb_a, sh_a);
        mb_full = expand_mask(MB.v, B, H, SQ * SK, sb_b, sh_b);
        if (!ma_full || !mb_full)
            REF_FAIL("out of memory expanding the masks");
        sb_a = sb_b = H * SQ * SK;
        sh_a = sh_b = SQ * SK;
    }
    if (MA.v) {
        p.mask_add = ma_full ? ma_full : MA.v;
        p.mask_stride_b = sb_a;
        p.mask_stride_h = sh_a;
    }
    if (MB.v) {
        const double *src = mb_full ? mb_full : MB.v;
        size_t nb = mb_full ? B * H * SQ * SK : MB.n;
        mbool = malloc(nb ? nb : 1);
        if (mbool == NULL)
            REF_FAIL("out of memory");
        for (i = 0; i < nb; i++) {
            if (isnan(src[i]))
                REF_FAIL("--mask-bool: %s: element %zu is nan", MB.path, i);
            mbool[i] = src[i] != 0;
        }
        p.mask_bool = mbool;
        p.mask_stride_b = sb_b;
        p.mask_stride_h = sh_b;
    }
    if ((rc = _qf_cr_out_alloc(a, &o, B * H * SQ * DV)) || (rc = _qf_cr_out_alloc(a, &lse, B * H * SQ)))
        goto done;
    if ((st = qf_ref_attention(&a->ro, &p, Q.v, K.v, V.v, &o, &lse)) != QF_OK) {
        rc = _qf_cr_ref_failed(a, st);
        goto done;
    }
    memcpy(shape, Q.shape, sizeof(size_t) * (size_t)qn);
    shape[qn - 1] = DV;
    if ((rc = _qf_cr_write_main(a, &o, B * H * SQ * DV, qn, shape)) ||
        (rc = _qf_cr_write_npy(a, O_LSE_OUT, QF_NPY_FLOAT64, qn - 1, Q.shape, lse.value)))
        goto done;
    rc = _qf_cr_finish(a, &o, &lse, "lse", NULL);
done:
    free(ma_full);
    free(mb_full);
    free(mbool);
    qf_ref_out_free(&o);
    qf_ref_out_free(&lse);
    _qf_cr_tensor_free(&Q);
    _qf_cr_tensor_free(&K);
    _qf_cr_tensor_free(&V);
    _qf_cr_tensor_free(&MA);
    _qf_cr_tensor_free(&MB);
    return rc;
}

/* ---- rope -------------------------------------------------------------------------------- */

int _qf_cr_run_rope(args *a)
{
    tensor X = {0}, P = {0}, F = {0};
    qf_ref_rope_params p;
    qf_ref_out o = {0};
    int rc, kw;
    long off, rd;
    size_t nb = 1, T, i;
    int64_t *pos = NULL;
    char s1[256];
    qf_ref_rope_params_init(&p);
    if ((rc = _qf_cr_need(a, O_X)) || (rc = _qf_cr_need(a, O_LAYOUT)))
        return rc;
    if ((rc = _qf_cr_keyword(a, O_LAYOUT, "layout", layouts, &kw)))
        return rc;
    p.layout = (qf_ref_rope_layout)kw;
    if ((rc = _qf_cr_get_double(a, O_THETA, 10000.0, 0, &p.theta)) ||
        (rc = _qf_cr_get_long(a, O_OFFSET, 0, -(1L << 53), 1L << 53, &off)) ||
        (rc = _qf_cr_get_long(a, O_ROTARY_DIM, 0, 0, LONG_MAX, &rd)))
        return rc;
    if (p.theta <= 0)
        return _qf_cr_err(a, "--theta: '%s' must be positive", a->str[O_THETA]);
    if (a->seen[O_POSITIONS] && a->seen[O_OFFSET])
        return _qf_cr_err(a, "--positions and --offset exclude each other");
    if (a->seen[O_INV_FREQ] && a->seen[O_THETA])
        return _qf_cr_err(a, "--inv-freq and --theta exclude each other");
    if ((rc = _qf_cr_load_main(a, O_X, &X)))
        goto done;
    if (X.ndim < 2 || X.ndim > 4) {
        rc = _qf_cr_err(
            a,
            "--x: %s: shape %s: x must be [tokens, head_dim], [tokens, heads, head_dim] or [batch, "
            "tokens, heads, head_dim]",
            X.path, _qf_cr_shape_str(&X, s1, 256));
        goto done;
    }
    if (X.ndim == 4)
        nb = X.shape[0];
    T = X.shape[X.ndim == 4 ? 1 : 0];
    p.tokens = nb * T;
    p.heads = X.ndim >= 3 ? X.shape[X.ndim - 2] : 1;
    p.head_dim = X.shape[X.ndim - 1];
    p.rotary_dim = rd ? (size_t)rd : p.head_dim;
    if (p.rotary_dim % 2 || p.rotary_dim > p.head_dim)
        REF_FAIL("--rotary-dim %zu must be even and at most head_dim = %zu", p.rotary_dim, p.head_dim);
    p.pos_offset = off;
    if (a->seen[O_POSITIONS]) {
        if ((rc = _qf_cr_load(a, O_POSITIONS, NULL, "aux-dtype", &P)))
            goto done;
        if (!((P.ndim == 1 && P.shape[0] == T) || (P.ndim == 2 && P.shape[0] == nb && P.shape[1] == T)))
            REF_FAIL("--positions: %s: shape %s does not match tokens = %zu of --x%s", P.path,
                     _qf_cr_shape_str(&P, s1, 256), T, X.ndim == 4 ? " (or [batch, tokens])" : "");
    }
    if (a->seen[O_POSITIONS] || nb > 1) {
        pos = malloc((p.tokens ? p.tokens : 1) * sizeof *pos);
        if (pos == NULL)
            REF_FAIL("out of memory");
        for (i = 0; i < p.tokens; i++) {
            if (P.v) {
                double v = P.v[P.ndim == 1 ? i % T : i];
                if (v != floor(v) || fabs(v) > 9007199254740992.0)
                    REF_FAIL("--positions: %s: element %zu = %.17g is not an integer", P.path,
                             P.ndim == 1 ? i % T : i, v);
                pos[i] = (int64_t)v;
            } else {
                pos[i] = off + (int64_t)(i % T);
            }
        }
        p.positions = pos;
    }
    if (a->seen[O_INV_FREQ]) {
        if ((rc = _qf_cr_load_aux(a, O_INV_FREQ, &F)) ||
            (rc = _qf_cr_check_1d(a, &F, p.rotary_dim / 2, "rotary_dim / 2")))
            goto done;
        for (i = 0; i < F.n; i++)
            if (!isfinite(F.v[i]))
                REF_FAIL("--inv-freq: %s: element %zu is not finite", F.path, i);
        p.inv_freq = F.v;
    }
    if ((rc = _qf_cr_prepare(a, &o, X.n)))
        goto done;
    rc = _qf_cr_conclude(a, qf_ref_rope(&a->ro, &p, X.v, &o), &o, X.n, X.ndim, X.shape);
done:
    free(pos);
    qf_ref_out_free(&o);
    _qf_cr_tensor_free(&X);
    _qf_cr_tensor_free(&P);
    _qf_cr_tensor_free(&F);
    return rc;
}

/* ---- moe-router ----------------------------------------------------------------------------- */

int _qf_cr_run_moe(args *a)
{
    tensor L = {0}, SB = {0};
    qf_ref_moe_params p;
    qf_ref_out o = {0};
    qf_status st;
    int rc, kw;
    long topk;
    int32_t *idx = NULL;
    uint8_t *ties = NULL;
    size_t shape[2], i, nties = 0, nslots;
    char s1[256], note[96];
    qf_ref_moe_params_init(&p);
    if ((rc = _qf_cr_need(a, O_LOGITS)) || (rc = _qf_cr_need(a, O_TOP_K)))
        return rc;
    if ((rc = _qf_cr_get_long(a, O_TOP_K, 1, 1, LONG_MAX, &topk)) ||
        (rc = _qf_cr_get_double(a, O_ROUTE_SCALE, 1.0, 0, &p.route_scale)) ||
        (rc = _qf_cr_get_double(a, O_TIE_TOL, 0.0, 0, &p.tie_tol)))
        return rc;
    if (p.tie_tol < 0)
        return _qf_cr_err(a, "--tie-tol: '%s' is negative", a->str[O_TIE_TOL]);
    if (a->seen[O_SCORE]) {
        if ((rc = _qf_cr_keyword(a, O_SCORE, "score", scores, &kw)))
            return rc;
        p.score = (qf_ref_router_score)kw;
    }
    p.renormalize = a->seen[O_RENORM];
    if ((rc = _qf_cr_load_main(a, O_LOGITS, &L)) || (rc = _qf_cr_last_axis(a, &L, &p.tokens, &p.experts)))
        goto done;
    if ((size_t)topk > p.experts)
        REF_FAIL("--top-k %ld exceeds the %zu experts of --logits (shape %s)", topk, p.experts,
                 _qf_cr_shape_str(&L, s1, 256));
    p.top_k = (size_t)topk;
    if (a->seen[O_SEL_BIAS]) {
        if ((rc = _qf_cr_load_aux(a, O_SEL_BIAS, &SB)) ||
            (rc = _qf_cr_check_1d(a, &SB, p.experts, "experts")))
            goto done;
        p.sel_bias = SB.v;
    }
    if ((rc = _qf_cr_common_checks(a)) || (rc = _qf_cr_check_writable(a, O_INDICES)) ||
        (rc = _qf_cr_check_writable(a, O_TIES)))
        goto done;
    if ((rc = _qf_cr_out_alloc(a, &o, p.tokens * p.top_k)))
        goto done;
    nslots = p.tokens * p.top_k;
    idx = malloc((nslots ? nslots : 1) * sizeof *idx);
    ties = calloc(nslots ? nslots : 1, 1);
    if (!idx || !ties)
        REF_FAIL("out of memory");
    if ((st = qf_ref_moe_router(&a->ro, &p, L.v, idx, &o, ties)) != QF_OK) {
        rc = _qf_cr_ref_failed(a, st);
        goto done;
    }
    shape[0] = p.tokens;
    shape[1] = p.top_k;
    if ((rc = _qf_cr_write_main(a, &o, p.tokens * p.top_k, 2, shape)) ||
        (rc = _qf_cr_write_npy(a, O_INDICES, QF_NPY_INT32, 2, shape, idx)) ||
        (rc = _qf_cr_write_npy(a, O_TIES, QF_NPY_UINT8, 2, shape, ties)))
        goto done;
    for (i = 0; i < p.tokens * p.top_k; i++)
        nties += ties[i] != 0;
    snprintf(note, sizeof note, "%zu slot%s with ties, working precision up to %d bits", nties,
             nties == 1 ? "" : "s", o.max_prec);
    rc = _qf_cr_finish(a, &o, NULL, NULL, note);
done:
    free(idx);
    free(ties);
    qf_ref_out_free(&o);
    _qf_cr_tensor_free(&L);
    _qf_cr_tensor_free(&SB);
    return rc;
}
