/* format.c: the table of formats and the name lookups.
 *
 * Sources (also in docs/precision.md):
 *   IEEE 754-2019 (binary64, binary32, binary16);
 *   bfloat16 and tf32: NVIDIA A100 whitepaper (2020), docs/numerics.md#number-formats;
 *   OCP 8-bit Floating Point Specification (OFP8) rev 1.0 (E4M3, E5M2);
 *   AMD/Graphcore FNUZ variants as in ml_dtypes and LLVM (bias +1, NaN 0x80);
 *   OCP Microscaling Formats (MX) v1.0 (E8M0, FP6 E2M3/E3M2, FP4 E2M1).
 * Every row is checked against MPFR by tests/precision/t-decode.c.
 */
#include <ctype.h>
#include <float.h>
#include <stdio.h>
#include <string.h>

#include "qf_format.h"


/* clang-format off */
static const qf_format formats[QF_FORMAT_COUNT] = {
/*  id                  name                 aliases                 kind           bits stor sgn exp man  bias  emin  emax inf nan           -0 sub max_code             max                    min_normal  min_sub   eps     imin imax source */
  { QF_FLOAT64,         "float64",           "f64 fp64 double binary64", QF_KIND_FLOAT, 64, 64, 1, 11, 52, 1023, -1022, 1023, 1, QF_NAN_IEEE, 1, 1, 0x7FEFFFFFFFFFFFFFull, DBL_MAX,             0x1p-1022, 0x1p-1074, 0x1p-52, 0, 0, "IEEE 754-2019 binary64" },
  { QF_FLOAT32,         "float32",           "f32 fp32 float binary32", QF_KIND_FLOAT, 32, 32, 1, 8, 23, 127, -126, 127, 1, QF_NAN_IEEE, 1, 1, 0x7F7FFFFFull, 0x1.fffffep127,      0x1p-126,  0x1p-149,  0x1p-23, 0, 0, "IEEE 754-2019 binary32" },
  { QF_TF32,            "tf32",              "tensorfloat32",        QF_KIND_FLOAT, 19, 32, 1, 8, 10, 127, -126, 127, 1, QF_NAN_IEEE, 1, 1, 0x7F7FE000ull, 0x1.ffcp127,          0x1p-126,  0x1p-136,  0x1p-10, 0, 0, "NVIDIA A100 whitepaper: 8-bit exponent, 10-bit fraction, float32 container" },
  { QF_BFLOAT16,        "bfloat16",          "bf16",                 QF_KIND_FLOAT, 16, 16, 1, 8, 7, 127, -126, 127, 1, QF_NAN_IEEE, 1, 1, 0x7F7Full, 0x1.fep127,            0x1p-126,  0x1p-133,  0x1p-7, 0, 0, "bfloat16: top half of binary32 (Google Brain)" },
  { QF_FLOAT16,         "float16",           "f16 fp16 half binary16", QF_KIND_FLOAT, 16, 16, 1, 5, 10, 15, -14, 15, 1, QF_NAN_IEEE, 1, 1, 0x7BFFull, 65504.0,              0x1p-14,   0x1p-24,   0x1p-10, 0, 0, "IEEE 754-2019 binary16" },
  { QF_FLOAT8_E4M3FN,   "float8_e4m3fn",     "e4m3 e4m3fn fp8_e4m3", QF_KIND_FLOAT, 8, 8, 1, 4, 3, 7, -6, 8, 0, QF_NAN_FN, 1, 1, 0x7Eull, 448.0,                0x1p-6,    0x1p-9,    0x1p-3, 0, 0, "OCP OFP8 rev 1.0: E4M3, no Inf, NaN S.1111.111" },
  { QF_FLOAT8_E4M3FNUZ, "float8_e4m3fnuz",   "e4m3fnuz fp8_e4m3fnuz", QF_KIND_FLOAT, 8, 8, 1, 4, 3, 8, -7, 7, 0, QF_NAN_FNUZ, 0, 1, 0x7Full, 240.0,                0x1p-7,    0x1p-10,   0x1p-3, 0, 0, "AMD gfx942 FP8 (FNUZ): bias 8, NaN 0x80, no Inf, no -0" },
  { QF_FLOAT8_E5M2,     "float8_e5m2",       "e5m2 fp8_e5m2",        QF_KIND_FLOAT, 8, 8, 1, 5, 2, 15, -14, 15, 1, QF_NAN_IEEE, 1, 1, 0x7Bull, 57344.0,              0x1p-14,   0x1p-16,   0x1p-2, 0, 0, "OCP OFP8 rev 1.0: E5M2, IEEE-like Inf and NaN" },
  { QF_FLOAT8_E5M2FNUZ, "float8_e5m2fnuz",   "e5m2fnuz fp8_e5m2fnuz", QF_KIND_FLOAT, 8, 8, 1, 5, 2, 16, -15, 15, 0, QF_NAN_FNUZ, 0, 1, 0x7Full, 57344.0,              0x1p-15,   0x1p-17,   0x1p-2, 0, 0, "AMD gfx942 BF8 (FNUZ): bias 16, NaN 0x80, no Inf, no -0" },
  { QF_FLOAT8_E8M0FNU,  "float8_e8m0fnu",    "e8m0 e8m0fnu ue8m0",   QF_KIND_SCALE, 8, 8, 0, 8, 0, 127, -127, 127, 0, QF_NAN_E8M0, 0, 0, 0xFEull, 0x1p127,              0x1p-127,  0x1p-127,  1.0, 0, 0, "OCP MX v1.0: E8M0 scale, 2^(code-127), NaN 0xFF, no zero" },
  { QF_FLOAT6_E2M3FN,   "float6_e2m3fn",     "e2m3 fp6_e2m3",        QF_KIND_FLOAT, 6, 8, 1, 2, 3, 1, 0, 2, 0, QF_NAN_NONE, 1, 1, 0x1Full, 7.5,                  1.0,       0.125,     0.125, 0, 0, "OCP MX v1.0: FP6 E2M3, no Inf, no NaN" },
  { QF_FLOAT6_E3M2FN,   "float6_e3m2fn",     "e3m2 fp6_e3m2",        QF_KIND_FLOAT, 6, 8, 1, 3, 2, 3, -2, 4, 0, QF_NAN_NONE, 1, 1, 0x1Full, 28.0,                 0.25,      0.0625,    0.25, 0, 0, "OCP MX v1.0: FP6 E3M2, no Inf, no NaN" },
  { QF_FLOAT4_E2M1FN,   "float4_e2m1fn",     "e2m1 fp4 fp4_e2m1",    QF_KIND_FLOAT, 4, 8, 1, 2, 1, 1, 0, 2, 0, QF_NAN_NONE, 1, 1, 0x7ull, 6.0,                  1.0,       0.5,       0.5, 0, 0, "OCP MX v1.0: FP4 E2M1, no Inf, no NaN" },
  { QF_INT8,            "int8",              "i8 s8",                QF_KIND_INT,   8, 8, 1, 0, 0, 0, 0, 0, 0, QF_NAN_NONE, 0, 0, 0x7Full, 127.0,                1.0,       1.0,       1.0, -128, 127, "two's complement 8-bit integer" },
  { QF_UINT8,           "uint8",             "u8",                   QF_KIND_INT,   8, 8, 0, 0, 0, 0, 0, 0, 0, QF_NAN_NONE, 0, 0, 0xFFull, 255.0,                1.0,       1.0,       1.0, 0, 255, "unsigned 8-bit integer" },
  { QF_INT4,            "int4",              "i4 s4",                QF_KIND_INT,   4, 8, 1, 0, 0, 0, 0, 0, 0, QF_NAN_NONE, 0, 0, 0x7ull, 7.0,                  1.0,       1.0,       1.0, -8, 7, "two's complement 4-bit integer (ml_dtypes int4)" },
  { QF_UINT4,           "uint4",             "u4",                   QF_KIND_INT,   4, 8, 0, 0, 0, 0, 0, 0, 0, QF_NAN_NONE, 0, 0, 0xFull, 15.0,                 1.0,       1.0,       1.0, 0, 15, "unsigned 4-bit integer (ml_dtypes uint4)" },
  { QF_INT32,           "int32",             "i32 s32",              QF_KIND_INT,  32, 32, 1, 0, 0, 0, 0, 0, 0, QF_NAN_NONE, 0, 0, 0x7FFFFFFFull, 2147483647.0,         1.0,       1.0,       1.0, -2147483647 - 1, 2147483647, "two's complement 32-bit integer (int8 GEMM accumulators and outputs)" },
};
/* clang-format on */

static const char *round_names[QF_ROUND_COUNT] = {
    "rne", "rna", "rtz", "up", "down", "stochastic", "floor", "ceil", "even", "rceil",
};

const qf_format *qf_format_get(qf_format_id id)
{
    if ((unsigned)id >= QF_FORMAT_COUNT)
        return NULL;
    return &formats[id];
}

static int _name_eq(const char *a, const char *b, size_t blen)
{
    size_t i;
    for (i = 0; i < blen; i++)
        if (a[i] == '\0' || tolower((unsigned char)a[i]) != tolower((unsigned char)b[i]))
            return 0;
    return a[blen] == '\0';
}

const qf_format *qf_format_lookup(const char *name)
{
    int i;
    if (name == NULL)
        return NULL;
    for (i = 0; i < QF_FORMAT_COUNT; i++) {
        const char *al = formats[i].aliases;
        if (_name_eq(name, formats[i].name, strlen(formats[i].name)))
            return &formats[i];
        while (*al) {
            size_t len = strcspn(al, " ");
            if (_name_eq(name, al, len))
                return &formats[i];
            al += len;
            while (*al == ' ')
                al++;
        }
    }
    return NULL;
}

void qf_format_list_names(char *buf, size_t size)
{
    size_t used = 0;
    int i;
    if (size == 0)
        return;
    buf[0] = '\0';
    for (i = 0; i < QF_FORMAT_COUNT && used < size; i++) {
        int n = snprintf(buf + used, size - used, "%s%s", i ? ", " : "", formats[i].name);
        if (n < 0)
            break;
        used += (size_t)n;
    }
}

const char *qf_round_name(qf_round r)
{
    if ((unsigned)r >= QF_ROUND_COUNT)
        return "?";
    return round_names[r];
}

qf_status qf_round_lookup(const char *name, qf_round *out)
{
    int i;
    if (name == NULL)
        return QF_EPARSE;
    for (i = 0; i < QF_ROUND_COUNT; i++)
        if (_name_eq(name, round_names[i], strlen(round_names[i]))) {
            *out = (qf_round)i;
            return QF_OK;
        }
    return QF_EPARSE;
}

int qf_round_valid(const qf_format *f, qf_round r)
{
    if ((unsigned)r >= QF_ROUND_COUNT)
        return 0;
    if (r >= QF_ROUND_FLOOR)
        return f->kind == QF_KIND_SCALE;
    return 1;
}

qf_encode_opts qf_encode_opts_default(void)
{
    qf_encode_opts o;
    o.round = QF_ROUND_RNE;
    o.saturate = 0;
    o.seed = 0x5eed;
    o.random_bits = 32;
    return o;
}
