/* block_mx.c: OCP Microscaling (MX v1.0) blocks with an E8M0 scale.
 *
 * Scale (OCP MX v1.0 section 6.3, docs/numerics.md#block-scaled-formats): a
 * block of values v shares X = floor(log2(max |v|)) - emax_elem, stored as
 * the E8M0 code X + 127; the elements are v / 2^X rounded into the element
 * format, values past its largest magnitude clamped to +-max.  X is
 * clamped to the E8M0 range [-127, 127].  A NaN or infinite block maximum
 * gives the NaN scale 0xFF.  Other rules (CEIL, EVEN, RCEIL) are a
 * parameter: docs/block.md has their formulas and sources.
 *
 * Dividing by 2^X is exact, so each element is rounded once, from the
 * exact v / 2^X, by qf_format_encode_parts.
 */
#include <math.h>
#include <string.h>

#include "_block.h"
#include "qf_block.h"

static const char *const rule_names[QF_BLOCK_MX_RULE_COUNT] = {"floor", "ceil", "even", "rceil"};

qf_block_mx_params qf_block_mx_params_default(void)
{
    qf_block_mx_params p;
    memset(&p, 0, sizeof p);
    p.elem = QF_FLOAT8_E4M3FN;
    p.rule = QF_BLOCK_MX_FLOOR;
    p.block = 32;
    p.axis = 1;
    p.round = QF_ROUND_RNE;
    p.seed = 0x5eed;
    p.random_bits = 32;
    return p;
}

const char *qf_block_mx_rule_name(qf_block_mx_rule r)
{
    return (unsigned)r < QF_BLOCK_MX_RULE_COUNT ? rule_names[r] : "?";
}

qf_status qf_block_mx_rule_lookup(const char *name, qf_block_mx_rule *out)
{
    int i;
    if (name == NULL || out == NULL)
        return QF_EPARSE;
    for (i = 0; i < QF_BLOCK_MX_RULE_COUNT; i++) {
        const char *a = name, *b = rule_names[i];
        while (*a && *b && (*a | 0x20) == *b)
            a++, b++;
        if (*a == '\0' && *b == '\0') {
            *out = (qf_block_mx_rule)i;
            return QF_OK;
        }
    }
    return QF_EPARSE;
}

/* emax_elem of OCP MX v1.0 table 1, docs/numerics.md#block-scaled-formats; MXINT8 (8-bit two's
 * complement, implicit scale 2^-6, |value| <= 1.984375) has emax 0. */
int qf_block_mx_emax(qf_format_id elem)
{
    switch (elem) {
    case QF_FLOAT8_E4M3FN: return 8;
    case QF_FLOAT8_E5M2: return 15;
    case QF_FLOAT6_E2M3FN: return 2;
    case QF_FLOAT6_E3M2FN: return 4;
    case QF_FLOAT4_E2M1FN: return 2;
    case QF_INT8: return 0;
    default: return -1000;
    }
}

double qf_block_mx_elem_max(qf_format_id elem)
{
    if (qf_block_mx_emax(elem) == -1000)
        return NAN;
    if (elem == QF_INT8)
        return 127.0 / 64.0;
    return qf_format_get(elem)->max;
}

/* Fraction bits the EVEN rule rounds amax's significand to: the element's
 * (MXINT8 counts as 1.6 fixed point: 1.111111b is its largest value). */
static int _qf_mx_mbits(qf_format_id elem)
{
    return elem == QF_INT8 ? 6 : qf_format_get(elem)->man_bits;
}

static int _qf_mx_params_ok(const qf_block_mx_params *p)
{
    return p != NULL && qf_block_mx_emax(p->elem) != -1000 && (unsigned)p->rule < QF_BLOCK_MX_RULE_COUNT &&
           p->block > 0 && (p->axis == 0 || p->axis == 1) && _qf_block_round_ok(p->round);
}

/* The unclamped-then-clamped exponent X of a finite amax > 0. */
static int _qf_mx_exponent(const qf_block_mx_params *p, double amax)
{
    int e, E, emax = qf_block_mx_emax(p->elem), k;
    double m = frexp(amax, &e), mx = qf_block_mx_elem_max(p->elem);
    E = e - 1; /* amax = (2m) * 2^E, 2m in [1, 2): E = floor(log2 amax) exactly */
    switch (p->rule) {
    case QF_BLOCK_MX_FLOOR: k = E - emax; break;
    case QF_BLOCK_MX_EVEN:
        /* torchao ScaleCalculationMode.EVEN: add half an ulp of the element's
         * precision to amax's bits and clear the fraction: the exponent
         * moves up when 2m >= 2 - 2^-(mbits+1). */
        if (m >= 1.0 - ldexp(1.0, -(_qf_mx_mbits(p->elem) + 2)))
            E += 1;
        k = E - emax;
        break;
    case QF_BLOCK_MX_CEIL:
    case QF_BLOCK_MX_RCEIL:
        /* The smallest k with amax <= T(k).  CEIL: T(k) = max_elem * 2^k,
         * i.e. k = ceil(log2(amax / max_elem)) exactly.  RCEIL: the float32
         * quotient q = RN32(amax / max_elem) is <= 2^k exactly when
         * amax / max_elem <= 2^k + half the float32 ulp above 2^k (a tie
         * goes to 2^k, whose significand is even), the ulp being
         * 2^(max(k, -126) - 23); q then goes up to 2^ceil(log2 q) as
         * cvt.rp.satfinite.ue8m0 does.  max_elem has at most 7 significant
         * bits, so T(k) is exact.  amax / max_elem lies in
         * (2^(E - emax - 1), 2^(E - emax + 1)): start below, step up. */
        k = E - emax - 2;
        if (k < -127)
            k = -127;
        while (k < 127) {
            double t = ldexp(mx, k);
            if (p->rule == QF_BLOCK_MX_RCEIL)
                t += ldexp(mx, (k > -126 ? k : -126) - 24);
            if (amax <= t)
                break;
            k++;
        }
        break;
    default: k = 0;
    }
    if (k < -127)
        k = -127;
    if (k > 127)
        k = 127;
    return k;
}

qf_status qf_block_mx_scale(const qf_block_mx_params *p, double amax, uint8_t *scale_code)
{
    if (!_qf_mx_params_ok(p) || scale_code == NULL)
        return QF_EINVAL;
    amax = fabs(amax);
    if (!isfinite(amax))
        *scale_code = 0xFF;
    else if (amax == 0)
        /* All-zero block: 2^-127, the smallest scale.  torchao and the
         * RCEIL conversion give the same; the OCP reference library
         * (microxcaling) takes log2 of FP32_MIN_NORMAL instead, which is
         * also 0x00 except for MXINT8 (0x01). */
        *scale_code = 0x00;
    else
        *scale_code = (uint8_t)(_qf_mx_exponent(p, amax) + 127);
    return QF_OK;
}

qf_status qf_block_mx_quantize(const qf_block_mx_params *p, const double *x, size_t rows, size_t cols,
                               uint8_t *codes, uint8_t *scale_codes, double *scales)
{
    const qf_format *ef;
    size_t ns, si, i;
    int is_int;
    if (!_qf_mx_params_ok(p) || !_qf_block_dims_ok(rows, cols))
        return QF_EINVAL;
    ns = qf_block_scale_count(rows, cols, p->axis, p->block);
    if (ns == 0)
        return QF_OK;
    if (x == NULL || codes == NULL || scale_codes == NULL)
        return QF_EINVAL;
    ef = qf_format_get(p->elem);
    is_int = p->elem == QF_INT8;
    for (si = 0; si < ns; si++) {
        _qf_blk b;
        double amax;
        int X;
        uint8_t sc;
        _qf_block_locate(rows, cols, p->axis, p->block, si, &b);
        amax = _qf_block_amax(x, &b);
        if (isnan(amax)) {
            _qf_block_set_nan(&b, si, 0xFF, codes, scale_codes, scales);
            continue;
        }
        qf_block_mx_scale(p, amax, &sc);
        scale_codes[si] = sc;
        if (scales)
            scales[si] = ldexp(1.0, (int)sc - 127);
        X = (int)sc - 127;
        for (i = 0; i < b.len; i++) {
            size_t idx = b.first + i * b.stride;
            uint64_t rnd = p->round == QF_ROUND_STOCHASTIC ? qf_rng_u64(p->seed, idx) : 0;
            _qf_parts t;
            uint64_t c;
            /* v / 2^X exactly; MXINT8 codes count units of 2^-6 */
            _qf_parts_of_double(x[idx], is_int ? 6 - X : -X, &t);
            c = _qf_parts_encode(ef, &t, p->round, 1, p->random_bits, rnd);
            /* MXINT8 clamps symmetrically to +-127 (the OCP reference
             * library's max_norm 127/64); -128 is never produced. */
            if (is_int && c == 0x80)
                c = 0x81;
            codes[idx] = (uint8_t)c;
        }
    }
    return QF_OK;
}

qf_status qf_block_mx_dequantize(const qf_block_mx_params *p, const uint8_t *codes,
                                 const uint8_t *scale_codes, size_t rows, size_t cols, double *out)
{
    const qf_format *ef;
    size_t ns, si, i;
    double val[256]; /* element values by code */
    int is_int;
    if (!_qf_mx_params_ok(p) || !_qf_block_dims_ok(rows, cols))
        return QF_EINVAL;
    ns = qf_block_scale_count(rows, cols, p->axis, p->block);
    if (ns == 0)
        return QF_OK;
    if (out == NULL || codes == NULL || scale_codes == NULL)
        return QF_EINVAL;
    ef = qf_format_get(p->elem);
    is_int = p->elem == QF_INT8;
    for (i = 0; i < 256; i++)
        val[i] = qf_format_decode(ef, i) * (is_int ? 0x1p-6 : 1.0);
    for (si = 0; si < ns; si++) {
        _qf_blk b;
        /* 2^X; times an element value (at most 8 significant bits, within
         * 2^[-16, 16]) it stays a normal double: exact */
        double s = scale_codes[si] == 0xFF ? NAN : ldexp(1.0, (int)scale_codes[si] - 127);
        _qf_block_locate(rows, cols, p->axis, p->block, si, &b);
        for (i = 0; i < b.len; i++) {
            size_t idx = b.first + i * b.stride;
            out[idx] = val[codes[idx]] * s;
        }
    }
    return QF_OK;
}
