/* inputs.c: seeded input generation (qf_inputs.h). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "_status.h"
#include "qf_dot.h"
#include "qf_format.h"
#include "qf_inputs.h"
#include "qf_npy.h"
#include "qf_refute.h"
#include "qf_safetensors.h"

static const char *const dist_names[QF_DIST_COUNT] = {
    [QF_DIST_NORMAL] = "normal",         [QF_DIST_UNIFORM] = "uniform",
    [QF_DIST_SMALL_INT] = "small_int",   [QF_DIST_OUTLIERS] = "outliers",
    [QF_DIST_HEAVY_TAIL] = "heavy_tail", [QF_DIST_NEAR_SATURATION] = "near_saturation",
    [QF_DIST_SUBNORMAL] = "subnormal",   [QF_DIST_ILL_CONDITIONED] = "ill_conditioned",
    [QF_DIST_SPECIAL] = "special",       [QF_DIST_FILE] = "file",
    [QF_DIST_REFUTE] = "refute",
};

/* Parameters each kind reads (for qf_dist_set and its messages). */
static const char *const dist_params[QF_DIST_COUNT] = {
    [QF_DIST_NORMAL] = "mean std",
    [QF_DIST_UNIFORM] = "lo hi",
    [QF_DIST_SMALL_INT] = "int_max",
    [QF_DIST_OUTLIERS] = "mean std fraction scale per_channel",
    [QF_DIST_HEAVY_TAIL] = "mean std tail dof sigma",
    [QF_DIST_NEAR_SATURATION] = "lo hi",
    [QF_DIST_SUBNORMAL] = "mean std fraction",
    [QF_DIST_ILL_CONDITIONED] = "cond",
    [QF_DIST_SPECIAL] = "mean std rate_nan rate_inf rate_zero sign",
    [QF_DIST_FILE] = "path tensor",
    [QF_DIST_REFUTE] = "family",
};

qf_dist qf_dist_default(qf_dist_kind kind)
{
    qf_dist d;
    memset(&d, 0, sizeof d);
    d.kind = kind;
    d.mean = 0;
    d.std = 1;
    d.lo = kind == QF_DIST_NEAR_SATURATION ? 0.5 : -1;
    d.hi = 1;
    d.int_max = 4;
    d.fraction = kind == QF_DIST_SUBNORMAL ? 0.5 : 0.01;
    d.scale = 100;
    d.tail = QF_TAIL_STUDENT_T;
    d.dof = 3;
    d.sigma = 1;
    d.cond = 1e6;
    d.rate_nan = d.rate_inf = QF_RATE_AUTO;
    d.rate_zero = 0.01;
    return d;
}

const char *qf_dist_name(qf_dist_kind kind)
{
    return (unsigned)kind < QF_DIST_COUNT ? dist_names[kind] : "?";
}

static const char *_dist_name(int i)
{
    return dist_names[i];
}

void qf_dist_list_names(char *buf, size_t size)
{
    _qf_join_names(buf, size, QF_DIST_COUNT, _dist_name);
}

qf_status qf_dist_lookup(const char *name, qf_dist *out, char *err, size_t err_size)
{
    char list[200];
    int i;
    for (i = 0; name && i < QF_DIST_COUNT; i++)
        if (strcmp(name, dist_names[i]) == 0) {
            *out = qf_dist_default((qf_dist_kind)i);
            return QF_OK;
        }
    qf_dist_list_names(list, sizeof list);
    return _qf_fail(err, err_size, QF_EPARSE, NULL, "distribution '%s' unknown (valid: %s)",
                    name ? name : "(null)", list);
}

/* Is key one of the space-separated words of list? */
static int has_word(const char *list, const char *key)
{
    size_t n = strlen(key);
    const char *p = list;
    while (n && (p = strstr(p, key)) != NULL) {
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
            return 1;
        p += n;
    }
    return 0;
}

static int parse_num(const char *s, double *out)
{
    char *end;
    double v;
    if (s == NULL || *s == '\0')
        return 0;
    errno = 0;
    v = strtod(s, &end);
    if (*end != '\0' || errno == ERANGE || v != v)
        return 0;
    *out = v;
    return 1;
}

/* The real-valued parameters, by name. */
/* clang-format off */
static const struct {
    const char *name;
    size_t offset;
} real_params[] = {
    {"mean",      offsetof(qf_dist, mean)},     {"std",       offsetof(qf_dist, std)},
    {"lo",        offsetof(qf_dist, lo)},       {"hi",        offsetof(qf_dist, hi)},
    {"fraction",  offsetof(qf_dist, fraction)}, {"scale",     offsetof(qf_dist, scale)},
    {"dof",       offsetof(qf_dist, dof)},      {"sigma",     offsetof(qf_dist, sigma)},
    {"cond",      offsetof(qf_dist, cond)},     {"rate_nan",  offsetof(qf_dist, rate_nan)},
    {"rate_inf",  offsetof(qf_dist, rate_inf)}, {"rate_zero", offsetof(qf_dist, rate_zero)},
};
/* clang-format on */

qf_status qf_dist_set(qf_dist *d, const char *key, const char *value, char *err, size_t err_size)
{
    const char *kn = qf_dist_name(d->kind);
    double v = 0;
    size_t i;
    if ((unsigned)d->kind >= QF_DIST_COUNT)
        return _qf_fail(err, err_size, QF_EINVAL, NULL, "distribution kind %d invalid", (int)d->kind);
    if (key == NULL || value == NULL || !has_word(dist_params[d->kind], key)) {
        char list[120];
        const char *p = dist_params[d->kind];
        size_t n = 0;
        for (; *p && n + 3 < sizeof list; p++) {
            if (*p == ' ')
                list[n++] = ',';
            list[n++] = *p;
        }
        list[n] = '\0';
        return _qf_fail(err, err_size, QF_EPARSE, NULL,
                        "distribution '%s': parameter '%s' unknown (valid: %s)", kn, key ? key : "(null)",
                        list);
    }
    if (strcmp(key, "path") == 0 || strcmp(key, "tensor") == 0) {
        char *dst = key[0] == 'p' ? d->path : d->tensor;
        size_t cap = key[0] == 'p' ? sizeof d->path : sizeof d->tensor;
        if (strlen(value) >= cap)
            return _qf_fail(err, err_size, QF_EPARSE, NULL,
                            "distribution '%s': parameter '%s' longer than %zu bytes", kn, key, cap - 1);
        memcpy(dst, value, strlen(value) + 1);
        return QF_OK;
    }
    if (strcmp(key, "family") == 0) {
        char list[80];
        int f = qf_refute_family_lookup(value);
        if (f >= 0) {
            d->refute_family = f;
            return QF_OK;
        }
        qf_refute_family_list(list, sizeof list);
        return _qf_fail(err, err_size, QF_EPARSE, NULL, "distribution '%s': family '%s' unknown (valid: %s)", kn,
                        value, list);
    }
    if (strcmp(key, "tail") == 0) {
        if (strcmp(value, "student_t") == 0)
            d->tail = QF_TAIL_STUDENT_T;
        else if (strcmp(value, "lognormal") == 0)
            d->tail = QF_TAIL_LOGNORMAL;
        else
            return _qf_fail(err, err_size, QF_EPARSE, NULL,
                            "distribution '%s': tail '%s' unknown (valid: student_t, lognormal)", kn, value);
        return QF_OK;
    }
    if (!parse_num(value, &v))
        return _qf_fail(err, err_size, QF_EPARSE, NULL,
                        "distribution '%s': parameter '%s' = '%s' is not a number", kn, key, value);
    for (i = 0; i < sizeof real_params / sizeof real_params[0]; i++)
        if (strcmp(key, real_params[i].name) == 0) {
            *(double *)((char *)d + real_params[i].offset) = v;
            return QF_OK;
        }
    if (v != floor(v) || fabs(v) > 0x1p62)
        return _qf_fail(err, err_size, QF_EPARSE, NULL,
                        "distribution '%s': parameter '%s' = '%s' must be an integer", kn, key, value);
    if (strcmp(key, "int_max") == 0)
        d->int_max = (int64_t)v;
    else if (strcmp(key, "per_channel") == 0)
        d->per_channel = v != 0;
    else
        d->sign = v > 0 ? 1 : v < 0 ? -1 : 0;
    return QF_OK;
}

qf_status qf_dist_parse(const char *text, qf_dist *out, char *err, size_t err_size)
{
    char buf[QF_DIST_PATH_MAX + 512], *p, *colon, *item, *save = NULL;
    qf_status s;
    if (text == NULL || strlen(text) >= sizeof buf)
        return _qf_fail(err, err_size, QF_EPARSE, NULL, "distribution text missing or too long");
    strcpy(buf, text);
    colon = strchr(buf, ':');
    if (colon)
        *colon = '\0';
    if ((s = qf_dist_lookup(buf, out, err, err_size)) != QF_OK)
        return s;
    if (colon == NULL)
        return QF_OK;
    for (p = colon + 1; (item = strtok_r(p, ",", &save)) != NULL; p = NULL) {
        char *eq = strchr(item, '=');
        if (eq == NULL)
            return _qf_fail(err, err_size, QF_EPARSE, NULL, "distribution '%s': '%s' is not key=value", buf,
                            item);
        *eq = '\0';
        if ((s = qf_dist_set(out, item, eq + 1, err, err_size)) != QF_OK)
            return s;
    }
    return QF_OK;
}

/* A rate as used: QF_RATE_AUTO is 0.01 where the format has the value. */
static double eff_rate(double r, int has)
{
    return r == QF_RATE_AUTO ? (has ? 0.01 : 0) : r;
}

static int is_unsigned(const qf_format *f)
{
    return !f->is_signed;
}

/* Largest m with every integer in [-m, m] exact in f (0 if f has none). */
static int64_t exact_int_limit(const qf_format *f)
{
    if (f->kind == QF_KIND_INT)
        return f->is_signed && -(f->int_min + 1) < f->int_max ? -(f->int_min + 1) : f->int_max;
    if (f->kind != QF_KIND_FLOAT)
        return 0;
    {
        double m = ldexp(1.0, f->man_bits + 1);
        return (int64_t)(m < f->max ? m : floor(f->max));
    }
}

int64_t qf_inputs_small_int_max(const qf_format *in, int acc_bits, size_t k)
{
    double lim, m;
    int64_t r;
    if (in == NULL)
        in = qf_format_get(QF_FLOAT64);
    if (k == 0)
        k = 1;
    if (acc_bits < 1 || acc_bits > 64)
        return 0;
    lim = ldexp(1.0, acc_bits) / (double)k;
    m = floor(sqrt(lim));
    while (m > 0 && m * m * (double)k > ldexp(1.0, acc_bits))
        m -= 1;
    r = (int64_t)(m < 0x1p62 ? m : 0x1p62);
    if (r > exact_int_limit(in))
        r = exact_int_limit(in);
    return r > 0 ? r : 0;
}

qf_status qf_dist_check(const qf_dist *d, const qf_format *fmt, char *err, size_t err_size)
{
    const char *kn = qf_dist_name(d->kind);
    if (fmt == NULL)
        fmt = qf_format_get(QF_FLOAT64);
    if ((unsigned)d->kind >= QF_DIST_COUNT)
        return _qf_fail(err, err_size, QF_EINVAL, NULL, "distribution kind %d invalid", (int)d->kind);
#define BAD(cond, ...)                                                                                       \
    if (cond)                                                                                                \
    return _qf_fail(err, err_size, QF_EINVAL, NULL, __VA_ARGS__)
    switch (d->kind) {
    case QF_DIST_OUTLIERS:
        BAD(!(d->fraction >= 0 && d->fraction <= 1), "%s: fraction = %g must be in [0, 1]", kn, d->fraction);
        BAD(!isfinite(d->scale), "%s: scale = %g must be finite", kn, d->scale);
        /* fall through */
    case QF_DIST_NORMAL:
        BAD(!isfinite(d->mean) || !(d->std >= 0 && isfinite(d->std)),
            "%s: mean = %g, std = %g: need finite, std >= 0", kn, d->mean, d->std);
        break;
    case QF_DIST_UNIFORM:
        BAD(!(isfinite(d->lo) && isfinite(d->hi) && d->lo <= d->hi && isfinite(d->hi - d->lo)),
            "%s: lo = %g, hi = %g: need finite lo <= hi", kn, d->lo, d->hi);
        break;
    case QF_DIST_SMALL_INT:
        BAD(fmt->kind == QF_KIND_SCALE, "%s: format %s has no integers but powers of two", kn, fmt->name);
        BAD(d->int_max < 1 || d->int_max > exact_int_limit(fmt),
            "%s: int_max = %lld must be in [1, %lld] (integers exact in %s)", kn, (long long)d->int_max,
            (long long)exact_int_limit(fmt), fmt->name);
        break;
    case QF_DIST_HEAVY_TAIL:
        BAD(!isfinite(d->mean) || !(d->std >= 0 && isfinite(d->std)),
            "%s: mean = %g, std = %g: need finite, std >= 0", kn, d->mean, d->std);
        BAD(d->tail == QF_TAIL_STUDENT_T && !(d->dof > 0 && d->dof <= 1e6),
            "%s: dof = %g must be in (0, 1e6]", kn, d->dof);
        BAD(d->tail == QF_TAIL_LOGNORMAL && !(d->sigma >= 0 && d->sigma <= 20),
            "%s: sigma = %g must be in [0, 20]", kn, d->sigma);
        BAD(d->tail != QF_TAIL_STUDENT_T && d->tail != QF_TAIL_LOGNORMAL, "%s: tail %d invalid", kn,
            (int)d->tail);
        break;
    case QF_DIST_NEAR_SATURATION:
        BAD(!(d->lo >= 0 && d->lo <= d->hi && d->hi <= 2), "%s: lo = %g, hi = %g: need 0 <= lo <= hi <= 2",
            kn, d->lo, d->hi);
        break;
    case QF_DIST_SUBNORMAL:
        BAD(!fmt->has_subnormal || fmt->kind != QF_KIND_FLOAT || fmt->man_bits < 1,
            "%s: format %s has no subnormal numbers", kn, fmt->name);
        BAD(!(d->fraction >= 0 && d->fraction <= 1), "%s: fraction = %g must be in [0, 1]", kn, d->fraction);
        BAD(!isfinite(d->mean) || !(d->std >= 0 && isfinite(d->std)),
            "%s: mean = %g, std = %g: need finite, std >= 0", kn, d->mean, d->std);
        break;
    case QF_DIST_ILL_CONDITIONED:
        BAD(!(d->cond >= 1 && d->cond <= 1e300), "%s: cond = %g must be in [1, 1e300]", kn, d->cond);
        BAD(fmt->kind != QF_KIND_FLOAT || !fmt->is_signed,
            "%s: format %s is not a signed floating-point format", kn, fmt->name);
        break;
    case QF_DIST_SPECIAL:
        BAD(!((d->rate_nan >= 0 || d->rate_nan == QF_RATE_AUTO) &&
              (d->rate_inf >= 0 || d->rate_inf == QF_RATE_AUTO) && d->rate_zero >= 0 &&
              eff_rate(d->rate_nan, 1) + eff_rate(d->rate_inf, 1) + d->rate_zero <= 1),
            "%s: rate_nan = %g, rate_inf = %g, rate_zero = %g: need rates >= 0 (or -1: auto) summing to <= 1",
            kn, d->rate_nan, d->rate_inf, d->rate_zero);
        BAD(d->rate_nan > 0 && fmt->nan == QF_NAN_NONE, "%s: rate_nan > 0 but format %s has no NaN", kn,
            fmt->name);
        BAD(d->rate_inf > 0 && !fmt->has_inf, "%s: rate_inf > 0 but format %s has no infinity", kn,
            fmt->name);
        BAD(!isfinite(d->mean) || !(d->std >= 0 && isfinite(d->std)),
            "%s: mean = %g, std = %g: need finite, std >= 0", kn, d->mean, d->std);
        break;
    case QF_DIST_FILE: BAD(d->path[0] == '\0', "%s: parameter 'path' is empty", kn); break;
    case QF_DIST_REFUTE:
        BAD(!qf_refute_family_name((qf_refute_family)d->refute_family), "%s: family %d invalid", kn,
            d->refute_family);
        break;
    default: break;
    }
#undef BAD
    return QF_OK;
}

/* ---- Deterministic elementary functions --------------------------------
 *
 * Only + - * / sqrt, which IEEE 754 rounds correctly, in a fixed order:
 * the C library's log/exp/cos differ across versions in the last bit, and a
 * last-bit difference can move a quantized input across a rounding
 * boundary.  Accuracy is a few ulps, far beyond what a sampler needs. */

static const double LN2_HI = 0x1.62e42fefa3800p-1; /* trailing zeros: k * LN2_HI exact */
static const double LN2_LO = 0x1.ef35793c76730p-45;
static const double TWO_PI = 0x1.921fb54442d18p+2;

/* log(x), x > 0 finite: x = m 2^e, m in [sqrt(1/2), sqrt(2)),
 * log m = 2 atanh(s), s = (m - 1) / (m + 1), |s| < 0.172. */
static double det_log(double x)
{
    /* 1 / (2k + 1), k = 0..10: the series of atanh to s^21, error below
     * 0.172^23 / 23 relative */
    static const double c[11] = {1.0,      1.0 / 3,  1.0 / 5,  1.0 / 7,  1.0 / 9, 1.0 / 11,
                                 1.0 / 13, 1.0 / 15, 1.0 / 17, 1.0 / 19, 1.0 / 21};
    int e, k;
    double m = frexp(x, &e), s, s2, p;
    if (m < 0x1.6a09e667f3bcdp-1) {
        m *= 2;
        e -= 1;
    }
    s = (m - 1) / (m + 1);
    s2 = s * s;
    p = c[10];
    for (k = 9; k >= 0; k--)
        p = p * s2 + c[k];
    return (double)e * LN2_HI + ((double)e * LN2_LO + 2 * s * p);
}

/* 1 / j, j = 0..17 (entry 0 unused) */
static const double inv_int[18] = {0,        1.0,      1.0 / 2,  1.0 / 3,  1.0 / 4,  1.0 / 5,
                                   1.0 / 6,  1.0 / 7,  1.0 / 8,  1.0 / 9,  1.0 / 10, 1.0 / 11,
                                   1.0 / 12, 1.0 / 13, 1.0 / 14, 1.0 / 15, 1.0 / 16, 1.0 / 17};

/* exp(x): x = k ln 2 + r, |r| <= ln 2 / 2, Taylor to r^17 (error below
 * 0.35^18 / 18!). */
static double det_exp(double x)
{
    double k, r, p;
    int j;
    if (x != x)
        return x;
    if (x > 709)
        return HUGE_VAL;
    if (x < -745)
        return 0;
    k = floor(x * 0x1.71547652b82fep0 + 0.5); /* nearest integer to x / ln 2 */
    r = (x - k * LN2_HI) - k * LN2_LO;
    p = 1;
    for (j = 17; j >= 1; j--)
        p = 1 + p * r * inv_int[j];
    return ldexp(p, (int)k);
}

/* 1 / (j (j - 1)) for the nested Taylor series of cos and sin */
static const double inv_jj[20] = {0,         0,         1.0 / 2,   1.0 / 6,   1.0 / 12,  1.0 / 20,  1.0 / 30,
                                  1.0 / 42,  1.0 / 56,  1.0 / 72,  1.0 / 90,  1.0 / 110, 1.0 / 132, 1.0 / 156,
                                  1.0 / 182, 1.0 / 210, 1.0 / 240, 1.0 / 272, 1.0 / 306, 1.0 / 342};

/* Taylor series on |t| <= pi/4, to t^18 (error below 0.79^20 / 20!). */
static double cos_small(double t)
{
    double t2 = t * t, p = 1;
    int j;
    for (j = 18; j >= 2; j -= 2)
        p = 1 - p * t2 * inv_jj[j];
    return p;
}

static double sin_small(double t)
{
    double t2 = t * t, p = 1;
    int j;
    for (j = 19; j >= 3; j -= 2)
        p = 1 - p * t2 * inv_jj[j];
    return t * p;
}

/* cos(2 pi u), u in [0, 1) a multiple of 2^-53: the reductions below are
 * exact (Sterbenz), so only the final argument 2 pi v is rounded. */
static double det_cos2pi(double u)
{
    double sgn = 1;
    if (u > 0.5)
        u = 1 - u;
    if (u > 0.25) {
        u = 0.5 - u;
        sgn = -1;
    }
    if (u <= 0.125)
        return sgn * cos_small(TWO_PI * u);
    return sgn * sin_small(TWO_PI * (0.25 - u));
}

/* ---- Random words ---------------------------------------------------------- */

/* Each element owns SLOTS consecutive counters of its stream's key. */
#define SLOTS 8
enum { S_N0 = 0, S_N1, S_PICK, S_SIGN, S_VAL, S_REJECT, S_EXTRA };

static uint64_t stream_key(uint64_t seed, uint64_t stream)
{
    return qf_rng_u64(qf_rng_u64(seed, stream), 0x51A7E5ull);
}

static uint64_t word(uint64_t key, uint64_t idx, int slot)
{
    return qf_rng_u64(key, idx * SLOTS + (uint64_t)slot);
}

/* [0, 1), a multiple of 2^-53 */
static double u01(uint64_t w)
{
    return (double)(w >> 11) * 0x1p-53;
}

/* N(0, 1) by Box-Muller (one of the pair) from two words. */
static double normal_from(uint64_t w0, uint64_t w1)
{
    double u1 = ((double)(w0 >> 11) + 1) * 0x1p-53; /* (0, 1] */
    return sqrt(-2 * det_log(u1)) * det_cos2pi(u01(w1));
}

static double std_normal(uint64_t key, uint64_t idx)
{
    return normal_from(word(key, idx, S_N0), word(key, idx, S_N1));
}

/* Student t by Bailey's polar method (Bailey 1994): exact for any dof > 0. */
static double student_t(uint64_t key, uint64_t idx, double dof)
{
    uint64_t sub = word(key, idx, S_REJECT), c;
    for (c = 0;; c += 2) {
        double u = 2 * u01(qf_rng_u64(sub, c)) - 1, v = 2 * u01(qf_rng_u64(sub, c + 1)) - 1;
        double w = u * u + v * v;
        if (w < 1 && w > 0) {
            double t = u * sqrt(dof * (det_exp(-2 / dof * det_log(w)) - 1) / w);
            if (t == t) /* u = 0 with an infinite root (dof tiny): draw again */
                return t;
        }
    }
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Columns that carry outliers: the k = max(1, round(fraction * cols))
 * columns of smallest hash, so the count is exact and the choice depends
 * only on (key, cols). */
static qf_status outlier_threshold(uint64_t key, size_t cols, double fraction, uint64_t *thr)
{
    uint64_t *h, ck = qf_rng_u64(key, ~0ull);
    size_t j, k;
    if (fraction <= 0 || cols == 0) {
        *thr = 0;
        return QF_OK;
    }
    k = (size_t)floor(fraction * (double)cols + 0.5);
    if (k < 1)
        k = 1;
    if (k > cols)
        k = cols;
    h = malloc(cols * sizeof *h);
    if (h == NULL)
        return QF_ENOMEM;
    for (j = 0; j < cols; j++)
        h[j] = qf_rng_u64(ck, j);
    qsort(h, cols, sizeof *h, cmp_u64);
    *thr = h[k - 1];
    free(h);
    return QF_OK;
}

/* ---- File inputs ------------------------------------------------------------ */

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static qf_status load_file(const qf_dist *d, const qf_format *fmt, size_t need, double **vals, char *err,
                           size_t es)
{
    qf_status s;
    size_t count = 0;
    char shp[128];
    *vals = NULL;
    if (d->tensor[0] || ends_with(d->path, ".safetensors")) {
        qf_safetensors st;
        size_t idx = 0;
        if ((s = qf_safetensors_open(d->path, &st, err, es)) != QF_OK)
            return s;
        if (d->tensor[0] == '\0' && st.ntensors != 1)
            s = _qf_fail(err, es, QF_EINVAL, NULL, "%s: %zu tensors: name one with the parameter 'tensor'",
                         d->path, st.ntensors);
        else if (d->tensor[0])
            s = qf_safetensors_find(&st, d->tensor, &idx, err, es);
        if (s == QF_OK) {
            count = st.tensors[idx].count;
            if (count != need) {
                qf_npy_shape_str(st.tensors[idx].ndim, st.tensors[idx].shape, shp, sizeof shp);
                s = _qf_fail(err, es, QF_EINVAL, NULL,
                             "%s: tensor '%s': shape %s has %zu elements, the case needs %zu", d->path,
                             st.tensors[idx].name, shp, count, need);
            } else if ((*vals = malloc(count ? count * sizeof **vals : 1)) == NULL) {
                s = QF_ENOMEM;
            } else {
                s = qf_safetensors_get_f64(&st, idx, *vals, err, es);
            }
        }
        qf_safetensors_close(&st);
    } else {
        qf_npy a;
        if ((s = qf_npy_read(d->path, &a, err, es)) != QF_OK)
            return s;
        if (a.count != need) {
            qf_npy_shape_str(a.ndim, a.shape, shp, sizeof shp);
            s = _qf_fail(err, es, QF_EINVAL, NULL, "%s: shape %s has %zu elements, the case needs %zu",
                         d->path, shp, a.count, need);
        } else if ((*vals = malloc(a.count ? a.count * sizeof **vals : 1)) == NULL) {
            s = QF_ENOMEM;
        } else if (qf_npy_dtype_kind(a.dtype) == 'V' || a.dtype >= QF_NPY_RAW8) {
            /* raw elements are codes: of fmt, if the widths agree */
            uint64_t *bits = malloc(a.count ? a.count * sizeof *bits : 1);
            size_t i;
            if (fmt == NULL || (size_t)fmt->storage_bits != 8 * qf_npy_dtype_size(a.dtype)) {
                s = _qf_fail(err, es, QF_EFORMAT, NULL,
                             "%s: descr '%s' holds raw %zu-byte codes, not codes of format %s", d->path,
                             qf_npy_dtype_descr(a.dtype), qf_npy_dtype_size(a.dtype),
                             fmt ? fmt->name : "float64");
            } else if (bits == NULL) {
                s = QF_ENOMEM;
            } else if ((s = qf_npy_get_bits(&a, bits)) == QF_OK) {
                for (i = 0; i < a.count; i++)
                    (*vals)[i] = qf_format_decode(fmt, bits[i]);
            }
            free(bits);
        } else {
            size_t bad = 0;
            s = qf_npy_get_f64(&a, *vals, &bad);
            if (s != QF_OK)
                s = _qf_fail(err, es, s, NULL, "%s: element %zu is not exact in binary64", d->path, bad);
        }
        qf_npy_free(&a);
    }
    if (s != QF_OK) {
        free(*vals);
        *vals = NULL;
    }
    return s;
}

static qf_status make_pair(const qf_dist *d, uint64_t seed, uint64_t stream, const qf_format *fx,
                           const qf_format *fy, const qf_encode_opts *enc, size_t r, size_t n, double *x,
                           double *y);

/* ---- Drawing ---------------------------------------------------------------- */

static double rand_sign(uint64_t w)
{
    return (w >> 63) ? -1.0 : 1.0;
}

/* Rows [row_begin, row_end) of a rows x cols matrix whose size does not
 * overflow. */
static qf_status _rows_check(size_t rows, size_t cols, size_t row_begin, size_t row_end, char *err,
                             size_t err_size)
{
    if (row_begin > row_end || row_end > rows || (cols != 0 && rows > SIZE_MAX / cols))
        return _qf_fail(err, err_size, QF_EINVAL, NULL, "inputs: rows [%zu, %zu) of %zu x %zu out of range",
                        row_begin, row_end, rows, cols);
    return QF_OK;
}

qf_status qf_inputs_draw(const qf_dist *d, uint64_t seed, uint64_t stream, const qf_format *fmt, size_t rows,
                         size_t cols, size_t row_begin, size_t row_end, double *raw, char *err,
                         size_t err_size)
{
    uint64_t key = stream_key(seed, stream), thr = 0, ck = 0;
    size_t i, j, n;
    double rn, ri;
    qf_status s;
    if (fmt == NULL)
        fmt = qf_format_get(QF_FLOAT64);
    if ((s = _rows_check(rows, cols, row_begin, row_end, err, err_size)) != QF_OK)
        return s;
    if ((s = qf_dist_check(d, fmt, err, err_size)) != QF_OK)
        return s;
    n = (row_end - row_begin) * cols;
    if (n == 0)
        return QF_OK;
    if (raw == NULL)
        return _qf_fail(err, err_size, QF_EINVAL, NULL, "inputs: output array is NULL");
    rn = eff_rate(d->rate_nan, fmt->nan != QF_NAN_NONE);
    ri = eff_rate(d->rate_inf, fmt->has_inf);

    if (d->kind == QF_DIST_REFUTE)
        return _qf_fail(err, err_size, QF_EUNSUPPORTED, NULL,
                        "inputs: refute:%s values are designed by the op from the kernel's claim "
                        "(qf_refute.h), not drawn",
                        qf_refute_family_name((qf_refute_family)d->refute_family));
    if (d->kind == QF_DIST_FILE) {
        double *all;
        if ((s = load_file(d, fmt, rows * cols, &all, err, err_size)) != QF_OK)
            return s;
        memcpy(raw, all + row_begin * cols, n * sizeof *raw);
        free(all);
        return QF_OK;
    }
    if (d->kind == QF_DIST_ILL_CONDITIONED) {
        /* Each row is one pair: build it (both halves) and keep our side. */
        double *x = malloc(2 * cols * sizeof *x);
        if (x == NULL)
            return QF_ENOMEM;
        for (i = row_begin; i < row_end && s == QF_OK; i++) {
            /* pair r of stream pair k = row r of dot_pairs(stream k) */
            qf_status t = make_pair(d, seed, stream >> 1, fmt, fmt, NULL, i, cols, x, x + cols);
            if (t != QF_OK) {
                s = t;
                break;
            }
            memcpy(raw + (i - row_begin) * cols, x + ((stream & 1) ? cols : 0), cols * sizeof *raw);
        }
        free(x);
        return s;
    }
    if (d->kind == QF_DIST_OUTLIERS && d->per_channel) {
        ck = qf_rng_u64(key, ~0ull);
        if ((s = outlier_threshold(key, cols, d->fraction, &thr)) != QF_OK)
            return s;
    }

    for (i = row_begin; i < row_end; i++)
        for (j = 0; j < cols; j++) {
            uint64_t idx = (uint64_t)i * cols + j;
            double *o = &raw[(i - row_begin) * cols + j], v;
            switch (d->kind) {
            case QF_DIST_NORMAL: v = d->mean + d->std * std_normal(key, idx); break;
            case QF_DIST_UNIFORM:
                v = d->lo + (d->hi - d->lo) * u01(word(key, idx, S_VAL));
                if (v >= d->hi && d->hi > d->lo) /* rounding can reach hi */
                    v = d->lo;
                break;
            case QF_DIST_SMALL_INT: {
                uint64_t w = word(key, idx, S_VAL);
                if (is_unsigned(fmt))
                    v = (double)(w % (uint64_t)(d->int_max + 1));
                else
                    v = (double)(int64_t)(w % (uint64_t)(2 * d->int_max + 1)) - (double)d->int_max;
                break;
            }
            case QF_DIST_OUTLIERS: {
                int pick = d->per_channel ? (d->fraction > 0 && qf_rng_u64(ck, j) <= thr)
                                          : u01(word(key, idx, S_PICK)) < d->fraction;
                v = d->mean + d->std * std_normal(key, idx);
                if (pick)
                    v *= d->scale;
                break;
            }
            case QF_DIST_HEAVY_TAIL:
                if (d->tail == QF_TAIL_STUDENT_T)
                    v = d->mean + d->std * student_t(key, idx, d->dof);
                else
                    v = d->mean +
                        rand_sign(word(key, idx, S_SIGN)) * d->std * det_exp(d->sigma * std_normal(key, idx));
                break;
            case QF_DIST_NEAR_SATURATION: {
                double mx = fmt->kind == QF_KIND_INT ? (double)fmt->int_max : fmt->max;
                v = mx * (d->lo + (d->hi - d->lo) * u01(word(key, idx, S_VAL)));
                if (fmt->is_signed)
                    v *= rand_sign(word(key, idx, S_SIGN));
                break;
            }
            case QF_DIST_SUBNORMAL:
                if (u01(word(key, idx, S_PICK)) < d->fraction) {
                    /* an exact subnormal k * min_subnormal, k in [1, 2^m - 1] */
                    uint64_t span = (1ull << (fmt->man_bits < 63 ? fmt->man_bits : 63)) - 1;
                    v = (double)(1 + word(key, idx, S_VAL) % span) * fmt->min_subnormal;
                    v *= rand_sign(word(key, idx, S_SIGN));
                } else {
                    v = d->mean + d->std * std_normal(key, idx);
                }
                break;
            case QF_DIST_SPECIAL: {
                double u = u01(word(key, idx, S_PICK));
                double sg = d->sign ? (double)d->sign : rand_sign(word(key, idx, S_SIGN));
                if (u < rn)
                    v = NAN;
                else if (u < rn + ri)
                    v = sg * HUGE_VAL;
                else if (u < rn + ri + d->rate_zero)
                    v = sg * 0.0;
                else
                    v = d->mean + d->std * std_normal(key, idx);
                break;
            }
            default:
                return _qf_fail(err, err_size, QF_EINVAL, NULL, "inputs: distribution kind %d invalid",
                                (int)d->kind);
            }
            *o = v;
        }
    return QF_OK;
}

static void put_code(void *codes, int storage_bits, size_t i, uint64_t c)
{
    switch (storage_bits) {
    case 8: ((uint8_t *)codes)[i] = (uint8_t)c; break;
    case 16: ((uint16_t *)codes)[i] = (uint16_t)c; break;
    case 32: ((uint32_t *)codes)[i] = (uint32_t)c; break;
    default: ((uint64_t *)codes)[i] = c; break;
    }
}

qf_status qf_inputs_quantize(const qf_format *fmt, const qf_encode_opts *enc, const double *raw, size_t n,
                             uint64_t first, double *values, void *codes)
{
    qf_encode_opts o = qf_encode_opts_default();
    void *c = codes;
    qf_status s;
    size_t i;
    if (fmt == NULL)
        fmt = qf_format_get(QF_FLOAT64);
    if (enc)
        o = *enc;
    else
        o.saturate = 1;
    if (n == 0)
        return QF_OK;
    if (c == NULL) {
        c = malloc(qf_format_array_bytes(fmt, n));
        if (c == NULL)
            return QF_ENOMEM;
    }
    s = qf_format_encode_array_at(fmt, raw, n, c, &o, first);
    /* Saturation is for finite overflow: an infinity the distribution asked
     * for (special) stays infinite where the format has one. */
    if (s == QF_OK && o.saturate && fmt->has_inf)
        for (i = 0; i < n; i++)
            if (isinf(raw[i]))
                put_code(c, fmt->storage_bits, i, qf_format_encode(fmt, raw[i], QF_ROUND_RNE, 0, 0, 0));
    if (s == QF_OK && values)
        s = qf_format_decode_array(fmt, c, n, values);
    if (c != codes)
        free(c);
    return s;
}

qf_status qf_inputs_generate_rows(const qf_dist *d, uint64_t seed, uint64_t stream, const qf_format *fmt,
                                  const qf_encode_opts *enc, size_t rows, size_t cols, size_t row_begin,
                                  size_t row_end, double *values, void *codes, char *err, size_t err_size)
{
    size_t n;
    double *raw;
    qf_status s;
    if (fmt == NULL)
        fmt = qf_format_get(QF_FLOAT64);
    if ((s = _rows_check(rows, cols, row_begin, row_end, err, err_size)) != QF_OK)
        return s;
    n = (row_end - row_begin) * cols;
    raw = values ? values : malloc(n ? n * sizeof *raw : 1);
    if (raw == NULL)
        return QF_ENOMEM;
    s = qf_inputs_draw(d, seed, stream, fmt, rows, cols, row_begin, row_end, raw, err, err_size);
    if (s == QF_OK) {
        uint64_t first = (uint64_t)row_begin * cols;
        char *cb = codes;
        s = qf_inputs_quantize(fmt, enc, raw, n, first, values, codes ? cb : NULL);
        if (s != QF_OK)
            _qf_fail(err, err_size, s, NULL, "inputs: quantizing into %s failed", fmt->name);
    }
    if (raw != values)
        free(raw);
    return s;
}

/* Row chunks for threads: at least this many elements each. */
#define CHUNK_ELEMS 16384

qf_status qf_inputs_generate(const qf_dist *d, uint64_t seed, uint64_t stream, const qf_format *fmt,
                             const qf_encode_opts *enc, size_t rows, size_t cols, double *values, void *codes,
                             char *err, size_t err_size)
{
    size_t per, nchunks;
    long c;
    qf_status s = QF_OK;
    size_t esz;
    if (fmt == NULL)
        fmt = qf_format_get(QF_FLOAT64);
    if (cols != 0 && rows > SIZE_MAX / cols)
        return _qf_fail(err, err_size, QF_EINVAL, NULL, "inputs: %zu x %zu elements overflow", rows, cols);
    per = cols ? (CHUNK_ELEMS + cols - 1) / cols : rows;
    if (per == 0)
        per = 1;
    /* A file is read once, not once per chunk. */
    if (d->kind == QF_DIST_FILE || rows <= per)
        return qf_inputs_generate_rows(d, seed, stream, fmt, enc, rows, cols, 0, rows, values, codes, err,
                                       err_size);
    nchunks = (rows + per - 1) / per;
    esz = (size_t)fmt->storage_bits / 8;
    if ((s = qf_dist_check(d, fmt, err, err_size)) != QF_OK)
        return s;
#pragma omp parallel for schedule(dynamic, 1)
    for (c = 0; c < (long)nchunks; c++) {
        size_t b = (size_t)c * per, e = b + per < rows ? b + per : rows;
        char e2[256];
        qf_status t = qf_inputs_generate_rows(d, seed, stream, fmt, enc, rows, cols, b, e,
                                              values ? values + b * cols : NULL,
                                              codes ? (char *)codes + b * cols * esz : NULL, e2, sizeof e2);
        if (t != QF_OK) {
#pragma omp critical(qf_inputs_err)
            if (s == QF_OK) {
                s = t;
                if (err && err_size)
                    snprintf(err, err_size, "%s", e2);
            }
        }
    }
    return s;
}

/* ---- Ill-conditioned pairs (GenDot) ------------------------------------------ */

static double q1(const qf_format *f, const qf_encode_opts *enc, double v, uint64_t *code)
{
    double out;
    uint64_t c = 0;
    qf_encode_opts o = qf_encode_opts_default();
    if (enc)
        o = *enc;
    else
        o.saturate = 1;
    c = qf_format_encode(f, v, o.round == QF_ROUND_STOCHASTIC ? QF_ROUND_RNE : o.round, o.saturate,
                         o.random_bits, 0);
    out = qf_format_decode(f, c);
    if (code)
        *code = c;
    return out;
}

static int ilog2_floor(double v)
{
    int e;
    frexp(v, &e);
    return e - 1;
}

/* sum|x_i y_i| / |sum x_i y_i| of quantized values, exactly summed. */
static double pair_cond(size_t n, const double *x, const double *y, const qf_format *fx, const qf_format *fy)
{
    double v = 0, a = 0;
    qf_dot_round rd = {NULL, QF_ROUND_RNE, 0, 32, 0};
    if (qf_dot(n, x, 1, y, 1, fx, fy, &rd, NULL, &v, &a) != QF_OK)
        return NAN;
    return v == 0 ? HUGE_VAL : a / fabs(v);
}

/* One GenDot construction for log2(cond) = b.  Ogita, Rump, Oishi,
 * "Accurate sum and dot product" (SIAM J. Sci. Comput. 26, 2005),
 * Algorithm 6.1, with the exact qf_dot accumulator in place of Dot2 and
 * each element quantized as soon as it is made, so that the cancellation
 * is built from the values the kernel will see. */
static void gendot_once(uint64_t key, double b, const qf_format *fx, const qf_format *fy,
                        const qf_encode_opts *enc, size_t n, double *x, double *y, qf_dot_acc *acc)
{
    double h = b / 2;
    size_t i, n2 = (n + 1) / 2, m = n - n2;
    int sx, sy, hc = (int)ceil(h);
    uint64_t c = 0;
    qf_dot_acc_init(acc);
    /* Powers of two that put the largest element 2^(hc + 1) just under the
     * format's max (never an upward shift for wide formats). */
    sx = ilog2_floor(fx->max) - hc - 2;
    sy = ilog2_floor(fy->max) - hc - 2;
    if (sx > 0)
        sx = 0;
    if (sy > 0)
        sy = 0;
#define U() u01(qf_rng_u64(key, c++))
    for (i = 0; i < n2; i++) {
        int e = i == 0 ? hc + 1 : (int)floor(U() * h + 0.5);
        if (i == n2 - 1 && n2 > 1)
            e = 0;
        x[i] = q1(fx, enc, ldexp(2 * U() - 1, e + sx), NULL);
        y[i] = q1(fy, enc, ldexp(2 * U() - 1, e + sy), NULL);
        qf_dot_acc_add_product(acc, x[i], y[i]);
    }
    for (i = n2; i < n; i++) {
        int e = (int)floor(h * (double)(n - 1 - i) / (double)(m > 1 ? m - 1 : 1) + 0.5);
        double sdot = qf_dot_acc_get_d(acc, QF_ROUND_RNE), t, u = U();
        x[i] = q1(fx, enc, ldexp(2 * U() - 1, e + sx), NULL);
        if (x[i] == 0)
            x[i] = q1(fx, enc, ldexp(1.0, e + sx), NULL);
        /* the last target is kept away from 0: a tiny final sum would
         * overshoot the condition number by an arbitrary factor */
        t = i == n - 1 ? ldexp((u < 0.5 ? -1 : 1) * (0.5 + u / 2), e + sx + sy)
                       : ldexp(2 * u - 1, e + sx + sy);
        y[i] = x[i] != 0 && isfinite(x[i]) ? q1(fy, enc, (t - sdot) / x[i], NULL) : 0;
        qf_dot_acc_add_product(acc, x[i], y[i]);
    }
#undef U
    /* A random permutation (Fisher-Yates), the same for x and y. */
    for (i = n - 1; i > 0; i--) {
        size_t j = (size_t)(qf_rng_u64(key, c++) % (uint64_t)(i + 1));
        double t = x[i];
        x[i] = x[j];
        x[j] = t;
        t = y[i];
        y[i] = y[j];
        y[j] = t;
    }
}

/* Pair r of (seed, stream).  GenDot's result misses the target by a
 * factor that depends on the draws (typically 2-50); the construction is
 * repeated with the same draws and log2(cond) corrected by the miss
 * (backing off when a correction made it worse, which happens past the
 * format's reach), and the closest of a few attempts is kept. */
#define PAIR_ATTEMPTS 8
static qf_status make_pair(const qf_dist *d, uint64_t seed, uint64_t stream, const qf_format *fx,
                           const qf_format *fy, const qf_encode_opts *enc, size_t r, size_t n, double *x,
                           double *y)
{
    uint64_t key = qf_rng_u64(stream_key(seed, stream ^ 0x111C0DD00ull), r);
    double target = log2(d->cond), b = target, best = HUGE_VAL, best_b = target, *bx, *by;
    qf_dot_acc *acc;
    int k;
    if (n == 0)
        return QF_OK;
    if (n == 1) {
        x[0] = q1(fx, enc, 2 * u01(qf_rng_u64(key, 0)) - 1, NULL);
        y[0] = q1(fy, enc, 2 * u01(qf_rng_u64(key, 1)) - 1, NULL);
        return QF_OK;
    }
    acc = malloc(sizeof *acc);
    bx = malloc(2 * n * sizeof *bx);
    if (acc == NULL || bx == NULL) {
        free(acc);
        free(bx);
        return QF_ENOMEM;
    }
    by = bx + n;
    for (k = 0; k < PAIR_ATTEMPTS; k++) {
        double got, miss;
        gendot_once(key, b, fx, fy, enc, n, x, y, acc);
        got = pair_cond(n, x, y, fx, fy);
        miss = isfinite(got) ? log2(got) - target : 64;
        if (fabs(miss) < best) {
            best = fabs(miss);
            best_b = b;
            memcpy(bx, x, n * sizeof *x);
            memcpy(by, y, n * sizeof *y);
            b -= miss; /* the condition number moves about 1:1 with b */
        } else {
            /* past what the format's range and precision allow, a larger
             * b cancels less: step back towards the best b */
            b = (b + best_b) / 2;
        }
        if (best <= 0.5) /* within a factor sqrt(2) */
            break;
        if (b < 0)
            b = 0;
    }
    memcpy(x, bx, n * sizeof *x);
    memcpy(y, by, n * sizeof *y);
    free(bx);
    free(acc);
    return QF_OK;
}

qf_status qf_inputs_dot_pairs(const qf_dist *d, uint64_t seed, uint64_t stream, const qf_format *fx,
                              const qf_format *fy, const qf_encode_opts *enc, size_t rows, size_t n,
                              double *x, void *xcodes, double *y, void *ycodes, double *cond_out, char *err,
                              size_t err_size)
{
    size_t r;
    qf_status s;
    if (fx == NULL)
        fx = qf_format_get(QF_FLOAT64);
    if (fy == NULL)
        fy = qf_format_get(QF_FLOAT64);
    if (d->kind != QF_DIST_ILL_CONDITIONED)
        return _qf_fail(err, err_size, QF_EINVAL, NULL,
                        "inputs: dot pairs need distribution ill_conditioned, not %s", qf_dist_name(d->kind));
    if ((s = qf_dist_check(d, fx, err, err_size)) != QF_OK ||
        (s = qf_dist_check(d, fy, err, err_size)) != QF_OK)
        return s;
    if (n != 0 && rows > SIZE_MAX / n)
        return _qf_fail(err, err_size, QF_EINVAL, NULL, "inputs: %zu x %zu elements overflow", rows, n);
    if (rows * n != 0 && (x == NULL || y == NULL))
        return _qf_fail(err, err_size, QF_EINVAL, NULL, "inputs: output array is NULL");
    for (r = 0; r < rows; r++) {
        double *xr = x + r * n, *yr = y + r * n;
        if ((s = make_pair(d, seed, stream, fx, fy, enc, r, n, xr, yr)) != QF_OK)
            return s;
        if (cond_out)
            cond_out[r] = pair_cond(n, xr, yr, fx, fy);
    }
    /* The values are exact members of the formats: encoding them again is
     * exact and gives their codes. */
    if (xcodes && (s = qf_inputs_quantize(fx, enc, x, rows * n, 0, NULL, xcodes)) != QF_OK)
        return s;
    if (ycodes && (s = qf_inputs_quantize(fy, enc, y, rows * n, 0, NULL, ycodes)) != QF_OK)
        return s;
    return QF_OK;
}
