/* cblas_wrong.c: a tiny "BLAS" for tests/kernels/t-adapter.c, loaded with
 * `qualify run --adapter cblas:libqf_test_cblas_wrong.so:SYMBOL`.
 *
 *   cblas_sgemm   known wrong: ignores beta (C = alpha op(A) op(B), as a
 *                 kernel that forgot the accumulate-into-C epilogue), so
 *                 every case with beta != 0 must be FAILED.
 *   cblas_sbgemm  right: bfloat16 products exact in float, one float
 *                 running sum per element, alpha and beta applied once
 *                 each, so the adapter's bf16 path is QUALIFIED.
 * No cblas_dgemm: the spec without SYMBOL must be refused, naming it.
 * Row-major only, as the adapter calls it (CblasRowMajor = 101,
 * CblasTrans = 112: the BLAS Technical Forum standard's values).
 */
#include <stdint.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

static float bf16_to_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Element (i, l) of op(X) for a row-major X with leading dimension ld. */
#define AT(X, trans, ld, i, l)                                                                               \
    ((trans) ? (X)[(size_t)(l) * (size_t)(ld) + (size_t)(i)] : (X)[(size_t)(i) * (size_t)(ld) + (size_t)(l)])

EXPORT void cblas_sgemm(int order, int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                        const float *b, int ldb, float beta, float *c, int ldc)
{
    int i, j, l;
    (void)order;
    (void)beta; /* the defect */
    for (i = 0; i < m; i++)
        for (j = 0; j < n; j++) {
            float acc = 0;
            for (l = 0; l < k; l++)
                acc += AT(a, ta == 112, lda, i, l) * AT(b, tb == 112, ldb, l, j);
            c[(size_t)i * (size_t)ldc + (size_t)j] = alpha * acc;
        }
}

EXPORT void cblas_sbgemm(int order, int ta, int tb, int m, int n, int k, float alpha, const uint16_t *a,
                         int lda, const uint16_t *b, int ldb, float beta, float *c, int ldc)
{
    int i, j, l;
    (void)order;
    for (i = 0; i < m; i++)
        for (j = 0; j < n; j++) {
            float acc = 0, *d = &c[(size_t)i * (size_t)ldc + (size_t)j];
            for (l = 0; l < k; l++)
                acc += bf16_to_f32(AT(a, ta == 112, lda, i, l)) * bf16_to_f32(AT(b, tb == 112, ldb, l, j));
            /* beta = 0: C is not read (the standard: "need not be set"). */
            *d = beta == 0 ? alpha * acc : alpha * acc + beta * *d;
        }
}
