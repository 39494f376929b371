/* qf_format.h: number formats, exact decode, correctly rounded encode, ulp.
 *
 * Every format qualify reasons about is described by one qf_format record
 * (the table in precision/format.c, facts in docs/numerics.md#number-formats and the
 * OCP 8-bit and MX v1.0 specifications).  A value of a format is carried as
 * its code: an unsigned integer holding the format's bit pattern in its low
 * bits (two's complement for the integer formats).  tf32 is the exception
 * that matches memory: its code is the 32-bit float32 container with the low
 * 13 bits zero, as tensor cores read it.
 *
 * Decode is exact: every code of every format is a binary64 value.
 * Encode rounds once, from the exact input, in the requested mode; it is
 * validated against MPFR's emulation of each format (tests/precision).
 */
#ifndef QF_FORMAT_H
#define QF_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "qf_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum qf_format_id {
    QF_FLOAT64 = 0,
    QF_FLOAT32,
    QF_TF32,
    QF_BFLOAT16,
    QF_FLOAT16,
    QF_FLOAT8_E4M3FN,
    QF_FLOAT8_E4M3FNUZ,
    QF_FLOAT8_E5M2,
    QF_FLOAT8_E5M2FNUZ,
    QF_FLOAT8_E8M0FNU,
    QF_FLOAT6_E2M3FN,
    QF_FLOAT6_E3M2FN,
    QF_FLOAT4_E2M1FN,
    QF_INT8,
    QF_UINT8,
    QF_INT4,
    QF_UINT4,
    QF_INT32, /* int8 GEMM output (int32 accumulation); ids only grow at the end */
    QF_FORMAT_COUNT
} qf_format_id;

typedef enum qf_format_kind {
    QF_KIND_FLOAT, /* sign (optional), exponent, fraction */
    QF_KIND_SCALE, /* power of two only: float8_e8m0fnu */
    QF_KIND_INT    /* integers, two's complement when signed */
} qf_format_kind;

/* Where a format keeps its NaNs: it decides what overflow and NaN inputs
 * encode to when the format has no infinity. */
typedef enum qf_nan_kind {
    QF_NAN_NONE, /* no NaN (MX FP6/FP4, integers) */
    QF_NAN_IEEE, /* all-ones exponent, nonzero fraction */
    QF_NAN_FN,   /* only S.1111.111 (float8_e4m3fn) */
    QF_NAN_FNUZ, /* only 0x80, the would-be negative zero */
    QF_NAN_E8M0  /* only 0xFF */
} qf_nan_kind;

typedef struct qf_format {
    qf_format_id id;
    const char *name;    /* canonical, as ml_dtypes / PyTorch spell it */
    const char *aliases; /* short names, space separated */
    qf_format_kind kind;
    int bits;         /* bits of the code (tf32: 19 significant of 32) */
    int storage_bits; /* bits of one element in an unpacked array */
    int is_signed;
    int exp_bits;
    int man_bits; /* stored fraction bits; precision p = man_bits + 1 */
    int bias;
    int emin; /* exponent of the smallest normal: 2^emin */
    int emax; /* exponent of the largest finite value's binade */
    int has_inf;
    qf_nan_kind nan;
    int has_negzero;
    int has_subnormal;
    uint64_t max_code; /* code of the largest finite value (+max) */
    double max;        /* largest finite value */
    double min_normal;
    double min_subnormal; /* smallest positive value (min_normal if none) */
    double epsilon;       /* distance from 1 to the next larger value */
    int64_t int_min, int_max; /* integer formats: the representable range */
    const char *source;       /* where the definition comes from */
} qf_format;

/* Rounding modes.  The first five are deterministic; QF_ROUND_STOCHASTIC
 * draws its random bits from a caller-supplied word.  The last four are the
 * MX scale rules and apply to float8_e8m0fnu only (docs/precision.md). */
typedef enum qf_round {
    QF_ROUND_RNE = 0,    /* nearest, ties to even */
    QF_ROUND_RNA,        /* nearest, ties away from zero */
    QF_ROUND_RTZ,        /* toward zero */
    QF_ROUND_UP,         /* toward +inf */
    QF_ROUND_DOWN,       /* toward -inf */
    QF_ROUND_STOCHASTIC, /* up with probability = discarded fraction */
    QF_ROUND_FLOOR,      /* e8m0: 2^floor(log2 x) */
    QF_ROUND_CEIL,       /* e8m0: 2^ceil(log2 x) */
    QF_ROUND_EVEN,       /* e8m0: nearest power of two, ties up */
    QF_ROUND_RCEIL,      /* e8m0: ceil, but never above 2^127 (satfinite) */
    QF_ROUND_COUNT
} qf_round;

/* How to encode.  A zeroed struct is not the default: use
 * qf_encode_opts_default(), which matches ml_dtypes (nearest-even, not
 * saturating). */
typedef struct qf_encode_opts {
    qf_round round;
    int saturate;    /* 1: overflow and +-Inf give +-max */
    uint64_t seed;   /* stochastic rounding: element i draws from (seed, i) */
    int random_bits; /* stochastic rounding: bits of randomness, 1..32 */
} qf_encode_opts;

/* ---- The table ---------------------------------------------------------- */

const qf_format *qf_format_get(qf_format_id id);
/* Canonical name or alias, case-insensitive; NULL if unknown. */
const qf_format *qf_format_lookup(const char *name);
/* Writes "float64, float32, ..." into buf (for 'valid choices' messages). */
void qf_format_list_names(char *buf, size_t size);

const char *qf_round_name(qf_round r);
/* "rne", "rna", "rtz", "up", "down", "stochastic", "floor", "ceil", "even",
 * "rceil"; QF_EPARSE if unknown. */
qf_status qf_round_lookup(const char *name, qf_round *out);
/* Is this rounding mode meaningful for the format? (the scale rules are
 * e8m0 only) */
int qf_round_valid(const qf_format *f, qf_round r);
qf_encode_opts qf_encode_opts_default(void);

/* ---- Scalars ------------------------------------------------------------ */

/* The exact value of a code (NaN for NaN codes, +-Inf for infinities).
 * Bits above the format's width are ignored. */
double qf_format_decode(const qf_format *f, uint64_t code);

/* Round x once into the format.  rnd_word supplies the random bits of
 * QF_ROUND_STOCHASTIC (its low random_bits bits are used) and is ignored by
 * the other modes. */
uint64_t qf_format_encode(const qf_format *f, double x, qf_round round,
                          int saturate, int random_bits, uint64_t rnd_word);

/* Round an exact value given by parts, for callers that hold more bits than
 * binary64 (the exact dot-product accumulator):
 *   value = (-1)^sign * sig * 2^(exp - 63), with bit 63 of sig set,
 *   and `sticky` nonzero when further nonzero bits lie below sig.
 * sig == 0 encodes a zero of that sign.  Same rules as qf_format_encode. */
uint64_t qf_format_encode_parts(const qf_format *f, int sign, int exp,
                                uint64_t sig, int sticky, qf_round round,
                                int saturate, int random_bits,
                                uint64_t rnd_word);

int qf_format_is_nan(const qf_format *f, uint64_t code);
int qf_format_is_inf(const qf_format *f, uint64_t code);
/* The code of +max or -max, the largest finite magnitude of that sign
 * (what saturation gives); integers: int_max / int_min; e8m0 (unsigned):
 * 0xFE for both.  The overflow value (Inf, NaN) is not this. */
uint64_t qf_format_max_code(const qf_format *f, int negative);

/* Split codes: one code, two separate sets of numbers.  On each half of
 * the real line (the numbers <= 0, the numbers > 0) rounding is monotone,
 * so the numbers of one half that round to a code form an interval.  A
 * code can still be reached from both halves without being reached near
 * 0: the NaN 0x80 of float8_e4m3fnuz and float8_e5m2fnuz, which both
 * +overflow and -overflow give (rne, rna, not saturating), and 0xFF of
 * float8_e8m0fnu, which every number <= 0 gives and so does the overflow
 * (not saturating; rne, rna, up, ceil, even).  Such a code is split: two
 * numbers that round to it say nothing of the numbers between them unless
 * both lie on the same half (docs/precision.md "Deciding from an
 * interval").  qf_format_split_codes writes the split codes of f under
 * (round, saturate) into split[0..n) and returns n: 0 for every format and
 * mode but those above, where it is 1; at most 2 (one per end of the
 * positive half), and split[1] = split[0] when n is 1, so a caller tests a
 * code against both entries without looking at n again.
 * Deterministic modes (stochastic rounding decides no interval). */
int qf_format_split_codes(const qf_format *f, qf_round round, int saturate, uint64_t split[2]);
int qf_format_code_split(const qf_format *f, uint64_t code, qf_round round, int saturate);

/* ---- Arrays ------------------------------------------------------------- */

/* Bytes of an unpacked array of n codes (storage_bits per element; 4-bit and
 * 6-bit formats take one byte per element unpacked). */
size_t qf_format_array_bytes(const qf_format *f, size_t n);

/* Encode n values into an unpacked code array (uint8/16/32/64 elements by
 * storage_bits).  Stochastic rounding draws element i's bits from
 * qf_rng_u64(opts->seed, i): the result does not depend on threading. */
qf_status qf_format_encode_array(const qf_format *f, const double *x,
                                 size_t n, void *codes,
                                 const qf_encode_opts *opts);
/* The same for a chunk that starts at element `first` of a longer array:
 * element i of the chunk draws from qf_rng_u64(opts->seed, first + i), so
 * encoding an array in chunks (threads, streams) gives the codes of one
 * qf_format_encode_array call over the whole array. */
qf_status qf_format_encode_array_at(const qf_format *f, const double *x,
                                    size_t n, void *codes,
                                    const qf_encode_opts *opts,
                                    uint64_t first);
qf_status qf_format_decode_array(const qf_format *f, const void *codes,
                                 size_t n, double *out);

/* Sub-byte packing, two 4-bit codes per byte: element 2i in the low nibble,
 * 2i+1 in the high nibble (PyTorch float4_e2m1fn_x2 and ml_dtypes int4).
 * An odd n leaves the last high nibble zero. */
qf_status qf_format_pack4(const uint8_t *codes, size_t n, uint8_t *packed);
qf_status qf_format_unpack4(const uint8_t *packed, size_t n, uint8_t *codes);

/* A counter-based generator (splitmix64 of seed and counter): the same
 * (seed, i) gives the same word on any machine and thread count. */
uint64_t qf_rng_u64(uint64_t seed, uint64_t i);

/* ---- ulp ---------------------------------------------------------------- */

/* ulp of the format at x: 2^(max(e, emin) - man_bits) with e the exponent
 * of |x| (x = 1.f * 2^e), so it is clamped at the subnormal step
 * (Zimmermann et al., "Accuracy of mathematical functions").  Integer
 * formats: 1.  NaN for NaN or Inf. */
double qf_format_ulp(const qf_format *f, double x);

/* (approx - exact) in ulps of exact, one rounding from the exact
 * difference. */
double qf_format_ulp_error(const qf_format *f, double approx, double exact);

#ifdef __cplusplus
}
#endif

#endif /* QF_FORMAT_H */
