/* qf_npy.h: reading and writing NumPy .npy files.
 *
 * The format (numpy.lib.format, versions 1.0, 2.0 and 3.0): the magic
 * "\x93NUMPY", a major and minor version byte, the header length (2 bytes
 * little-endian in 1.0, 4 bytes in 2.0 and 3.0), then the header, a Python
 * dict literal with exactly the keys 'descr', 'fortran_order' and 'shape',
 * padded with spaces and ended by '\n', then the raw elements.
 *
 * In memory an array is always C order (last index fastest) and host byte
 * order: big-endian files are byte-swapped and Fortran-order files are
 * reordered on reading, so callers never see either.  The file must hold
 * exactly the bytes the shape needs: fewer is "truncated data", more is a
 * size mismatch (numpy would ignore trailing bytes; a qualification tool
 * treats them as a sign of a corrupt or mislabelled file).
 *
 * Element types (descr, with '<' little-endian, '>' big-endian, '|' or '='
 * host order):
 *   f8 f4 f2          float64/32/16 values (f2 decoded exactly)
 *   u1 u2 u4 u8       unsigned integers (values, or codes of a format)
 *   i1 i2 i4 i8       signed integers (values, or codes reinterpreted)
 *   b1                booleans (masks)
 *   V1 V2 V4 V8, f1   raw elements: what np.save writes for ml_dtypes
 *                     (bfloat16 as '<V2', float8_e5m2 as '<f1'); only
 *                     meaningful as codes of a named format
 *
 * Every function returns a status; on failure err (when not NULL) holds a
 * one-line message that names the file and the problem, e.g.
 * "a.npy: header: descr '<c16' not supported (supported: ...)".
 */
#ifndef QF_NPY_H
#define QF_NPY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "qf_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Hard limits against corrupt files (numpy itself allows 64 dimensions and
 * reads at most 10000 header bytes by default). */
#define QF_NPY_MAX_DIMS   32
#define QF_NPY_MAX_HEADER (1u << 20)

typedef enum qf_npy_dtype {
    QF_NPY_FLOAT64 = 0,
    QF_NPY_FLOAT32,
    QF_NPY_FLOAT16,
    QF_NPY_UINT8,
    QF_NPY_UINT16,
    QF_NPY_UINT32,
    QF_NPY_UINT64,
    QF_NPY_INT8,
    QF_NPY_INT16,
    QF_NPY_INT32,
    QF_NPY_INT64,
    QF_NPY_BOOL,
    QF_NPY_RAW8, /* V1 or f1 */
    QF_NPY_RAW16,
    QF_NPY_RAW32,
    QF_NPY_RAW64,
    QF_NPY_DTYPE_COUNT
} qf_npy_dtype;

typedef struct qf_npy {
    qf_npy_dtype dtype;
    int ndim; /* 0 for a scalar */
    size_t shape[QF_NPY_MAX_DIMS];
    size_t count; /* product of shape (1 for a scalar) */
    void *data;   /* count elements, C order, host byte order; never NULL
                     after a successful read or alloc */
} qf_npy;

/* The descr written for a dtype ("<f8", "|u1", "|V1"), its element size in
 * bytes, and its numpy kind ('f', 'u', 'i', 'b', 'V'). */
const char *qf_npy_dtype_descr(qf_npy_dtype t);
size_t qf_npy_dtype_size(qf_npy_dtype t);
char qf_npy_dtype_kind(qf_npy_dtype t);
/* numpy's name: "float64", "uint8", "bool", "void16" ... */
const char *qf_npy_dtype_name(qf_npy_dtype t);

/* Allocate a zeroed array of the given shape (ndim <= QF_NPY_MAX_DIMS);
 * QF_EINVAL for a bad shape or a size that overflows, QF_ENOMEM. */
qf_status qf_npy_alloc(qf_npy *a, qf_npy_dtype t, int ndim, const size_t *shape);
void qf_npy_free(qf_npy *a);

/* Read a file.  On failure *a is left empty (data NULL). */
qf_status qf_npy_read(const char *path, qf_npy *a, char *err, size_t err_size);
/* The same from a buffer; name is used in messages. */
qf_status qf_npy_read_mem(const void *buf, size_t len, const char *name, qf_npy *a, char *err,
                          size_t err_size);

/* Write a (little-endian descr, C order, version 1.0; 2.0 only if the
 * header would not fit 1.0).  The header is padded so that the data start
 * at a multiple of 64 bytes, as numpy does. */
qf_status qf_npy_write(const char *path, const qf_npy *a, char *err, size_t err_size);
/* Write count = prod(shape) elements of type t from data. */
qf_status qf_npy_write_data(const char *path, qf_npy_dtype t, int ndim, const size_t *shape, const void *data,
                            char *err, size_t err_size);
/* The same into an open stream (flushed, not closed), for callers that
 * open the file themselves (qualify run --save-failing creates its files
 * without following links); name is used in messages. */
qf_status qf_npy_write_file(FILE *fp, const char *name, qf_npy_dtype t, int ndim, const size_t *shape,
                            const void *data, char *err, size_t err_size);

/* The exact binary64 value of every element (float16 exactly, integers and
 * booleans as numbers).  An integer of magnitude above 2^53 that binary64
 * cannot hold gives QF_EINVAL with *bad (when not NULL) its index; raw
 * elements give QF_EFORMAT (they are codes, see qf_npy_get_codes). */
qf_status qf_npy_get_f64(const qf_npy *a, double *out, size_t *bad);

/* The bits of every element of an integer, boolean or raw array,
 * zero-extended to 64 bits (a signed element is reinterpreted: int8 -1 is
 * 0xFF).  Float arrays give QF_EFORMAT. */
qf_status qf_npy_get_bits(const qf_npy *a, uint64_t *out);

/* "(64, 32)", "(5,)", "()" as Python prints a shape; truncated to size. */
void qf_npy_shape_str(int ndim, const size_t *shape, char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* QF_NPY_H */
