/* qf_safetensors.h: reading and writing .safetensors files.
 *
 * The format (huggingface/safetensors): 8 bytes, a little-endian unsigned
 * header length N; N bytes of JSON, an object whose keys are tensor names
 * (plus an optional "__metadata__" object of string values) and whose
 * values are {"dtype": "F32", "shape": [2, 3], "data_offsets": [b, e]};
 * then the data section.  Offsets are bytes [b, e) relative to the start of
 * the data section; elements are little-endian, C order.
 *
 * The reader is strict, as the reference implementation is: the tensors'
 * byte ranges must tile the data section exactly (no overlap, no hole, no
 * trailing byte), each range must hold exactly prod(shape) * itemsize bytes,
 * and duplicate JSON keys are an error.  Every failure leaves a one-line
 * message in err that names the file and the field, for example
 *   "w.safetensors: tensor 'lm_head': dtype 'F4' not supported (supported: F64, ...)".
 *
 * Limits against hostile files: header at most QF_ST_MAX_HEADER bytes, at
 * most QF_ST_MAX_DIMS dimensions, sizes checked for overflow before any
 * allocation; a file is opened with its header read and validated, the
 * data are read only when a tensor is loaded.
 */
#ifndef QF_SAFETENSORS_H
#define QF_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "qf_format.h"
#include "qf_status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define QF_ST_MAX_HEADER (100u << 20) /* 100 MiB, as the reference reader */
#define QF_ST_MAX_DIMS   32

typedef enum qf_st_dtype {
    QF_ST_F64 = 0,
    QF_ST_F32,
    QF_ST_F16,
    QF_ST_BF16,
    QF_ST_F8_E4M3, /* float8_e4m3fn */
    QF_ST_F8_E5M2, /* float8_e5m2 */
    QF_ST_I8,
    QF_ST_U8,
    QF_ST_I16,
    QF_ST_U16,
    QF_ST_I32,
    QF_ST_U32,
    QF_ST_I64,
    QF_ST_U64,
    QF_ST_BOOL,
    QF_ST_DTYPE_COUNT
} qf_st_dtype;

/* "F32" ... as written in the header; its size in bytes; the qualify
 * format of its elements (NULL for I16..U64 and BOOL, which are plain
 * integers); lookup by name (exact spelling, QF_EPARSE if unknown). */
const char *qf_st_dtype_name(qf_st_dtype t);
size_t qf_st_dtype_size(qf_st_dtype t);
const qf_format *qf_st_dtype_format(qf_st_dtype t);
qf_status qf_st_dtype_lookup(const char *name, qf_st_dtype *out);
/* "F64, F32, ..." for 'valid choices' messages. */
void qf_st_dtype_list(char *buf, size_t size);

typedef struct qf_st_tensor {
    char *name;
    qf_st_dtype dtype;
    int ndim;
    size_t shape[QF_ST_MAX_DIMS];
    size_t count;        /* product of shape (1 for a scalar) */
    uint64_t begin, end; /* byte range in the data section */
} qf_st_tensor;

typedef struct qf_safetensors {
    char *name; /* path or the name given for a buffer */
    size_t ntensors;
    qf_st_tensor *tensors; /* in data order (ascending begin) */
    size_t nmeta;          /* "__metadata__" pairs, in file order */
    char **meta_keys, **meta_values;
    uint64_t data_start;      /* 8 + header length */
    uint64_t data_len;        /* bytes of the data section */
    FILE *fp;                 /* file source, or */
    const unsigned char *buf; /* memory source (borrowed, see read_mem) */
} qf_safetensors;

/* Open a file and validate its header (the data are read on demand; the
 * file stays open until qf_safetensors_close).  On failure *st is empty. */
qf_status qf_safetensors_open(const char *path, qf_safetensors *st, char *err, size_t err_size);
/* The same over a buffer of len bytes, which must outlive *st; name is
 * used in messages. */
qf_status qf_safetensors_read_mem(const void *buf, size_t len, const char *name, qf_safetensors *st,
                                  char *err, size_t err_size);
void qf_safetensors_close(qf_safetensors *st);

/* Index of the tensor called name; QF_EINVAL with a message listing (some
 * of) the names present when there is none. */
qf_status qf_safetensors_find(const qf_safetensors *st, const char *name, size_t *index, char *err,
                              size_t err_size);
/* Value of a "__metadata__" key, NULL if absent. */
const char *qf_safetensors_meta(const qf_safetensors *st, const char *key);

/* The raw little-endian bytes of tensor i (count * itemsize bytes). */
qf_status qf_safetensors_get_bytes(const qf_safetensors *st, size_t i, void *out, char *err, size_t err_size);
/* The bits of every element, zero-extended to 64 bits (codes of the dtype's
 * format; signed integers reinterpreted, I8 -1 is 0xFF). */
qf_status qf_safetensors_get_bits(const qf_safetensors *st, size_t i, uint64_t *out, char *err,
                                  size_t err_size);
/* The exact binary64 value of every element (floats through
 * qf_format_decode; integers exactly, QF_EINVAL naming the element when
 * |v| > 2^53; BOOL 0/1). */
qf_status qf_safetensors_get_f64(const qf_safetensors *st, size_t i, double *out, char *err, size_t err_size);
/* Find by name and load as binary64 into a new array (free() it); *count
 * elements; *fmt the elements' format (NULL for plain integers). */
qf_status qf_safetensors_load_f64(const qf_safetensors *st, const char *name, double **values, size_t *count,
                                  const qf_format **fmt, char *err, size_t err_size);

/* ---- Writing ------------------------------------------------------------- */

typedef struct qf_st_write_tensor {
    const char *name;
    qf_st_dtype dtype;
    int ndim;
    const size_t *shape;
    const void *data; /* prod(shape) elements, little-endian, C order */
} qf_st_write_tensor;

/* Write n tensors in the given order (contiguous offsets, header padded
 * with spaces to a multiple of 8 bytes) and nmeta metadata pairs (may be 0).
 * Names must be distinct and not "__metadata__". */
qf_status qf_safetensors_write(const char *path, const qf_st_write_tensor *t, size_t n,
                               const char *const *meta_keys, const char *const *meta_values, size_t nmeta,
                               char *err, size_t err_size);
/* The same into a malloc'ed buffer (*out, *out_len; free() it). */
qf_status qf_safetensors_write_mem(const qf_st_write_tensor *t, size_t n, const char *const *meta_keys,
                                   const char *const *meta_values, size_t nmeta, unsigned char **out,
                                   size_t *out_len, char *err, size_t err_size);

#ifdef __cplusplus
}
#endif

#endif /* QF_SAFETENSORS_H */
