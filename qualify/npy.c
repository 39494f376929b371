/* npy.c: NumPy .npy reading and writing (qf_npy.h). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "_files.h"
#include "_status.h"
#include "qf_format.h"
#include "qf_npy.h"

/* clang-format off */
static const struct {
    const char *descr; /* as written */
    const char *name;
    char kind;
    unsigned size;
} dtypes[QF_NPY_DTYPE_COUNT] = {
    [QF_NPY_FLOAT64] = { "<f8", "float64", 'f', 8 },
    [QF_NPY_FLOAT32] = { "<f4", "float32", 'f', 4 },
    [QF_NPY_FLOAT16] = { "<f2", "float16", 'f', 2 },
    [QF_NPY_UINT8]   = { "|u1", "uint8",   'u', 1 },
    [QF_NPY_UINT16]  = { "<u2", "uint16",  'u', 2 },
    [QF_NPY_UINT32]  = { "<u4", "uint32",  'u', 4 },
    [QF_NPY_UINT64]  = { "<u8", "uint64",  'u', 8 },
    [QF_NPY_INT8]    = { "|i1", "int8",    'i', 1 },
    [QF_NPY_INT16]   = { "<i2", "int16",   'i', 2 },
    [QF_NPY_INT32]   = { "<i4", "int32",   'i', 4 },
    [QF_NPY_INT64]   = { "<i8", "int64",   'i', 8 },
    [QF_NPY_BOOL]    = { "|b1", "bool",    'b', 1 },
    [QF_NPY_RAW8]    = { "|V1", "void8",   'V', 1 },
    [QF_NPY_RAW16]   = { "|V2", "void16",  'V', 2 },
    [QF_NPY_RAW32]   = { "|V4", "void32",  'V', 4 },
    [QF_NPY_RAW64]   = { "|V8", "void64",  'V', 8 },
};
/* clang-format on */

#define SUPPORTED_DESCRS                                                                                     \
    "<f8 <f4 <f2 |u1 <u2 <u4 <u8 |i1 <i2 <i4 <i8 |b1 |V1 <V2 <V4 <V8 <f1, or '>' big-endian"

static const unsigned char magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

const char *qf_npy_dtype_descr(qf_npy_dtype t)
{
    return (unsigned)t < QF_NPY_DTYPE_COUNT ? dtypes[t].descr : "?";
}

size_t qf_npy_dtype_size(qf_npy_dtype t)
{
    return (unsigned)t < QF_NPY_DTYPE_COUNT ? dtypes[t].size : 0;
}

char qf_npy_dtype_kind(qf_npy_dtype t)
{
    return (unsigned)t < QF_NPY_DTYPE_COUNT ? dtypes[t].kind : '?';
}

const char *qf_npy_dtype_name(qf_npy_dtype t)
{
    return (unsigned)t < QF_NPY_DTYPE_COUNT ? dtypes[t].name : "?";
}

void qf_npy_shape_str(int ndim, const size_t *shape, char *buf, size_t size)
{
    size_t used = 0;
    int i, n;
    if (size == 0)
        return;
    buf[0] = '\0';
#define PUT(...)                                                                                             \
    do {                                                                                                     \
        n = snprintf(buf + used, size - used, __VA_ARGS__);                                                  \
        if (n < 0 || (size_t)n >= size - used)                                                               \
            return;                                                                                          \
        used += (size_t)n;                                                                                   \
    } while (0)
    PUT("(");
    for (i = 0; i < ndim; i++)
        PUT(i ? ", %zu" : "%zu", shape[i]);
    PUT(ndim == 1 ? ",)" : ")");
#undef PUT
}

/* Product of the shape; 0 on overflow of the element count times size. */
static int shape_count(int ndim, const size_t *shape, size_t itemsize, size_t *count)
{
    size_t c = 1;
    int i;
    for (i = 0; i < ndim; i++) {
        if (shape[i] != 0 && c > SIZE_MAX / shape[i])
            return 0;
        c *= shape[i];
    }
    if (itemsize != 0 && c > SIZE_MAX / itemsize)
        return 0;
    *count = c;
    return 1;
}

qf_status qf_npy_alloc(qf_npy *a, qf_npy_dtype t, int ndim, const size_t *shape)
{
    size_t count;
    memset(a, 0, sizeof *a);
    if ((unsigned)t >= QF_NPY_DTYPE_COUNT || ndim < 0 || ndim > QF_NPY_MAX_DIMS ||
        (ndim > 0 && shape == NULL))
        return QF_EINVAL;
    if (!shape_count(ndim, shape, dtypes[t].size, &count))
        return QF_EINVAL;
    a->data = calloc(count ? count : 1, dtypes[t].size);
    if (a->data == NULL)
        return QF_ENOMEM;
    a->dtype = t;
    a->ndim = ndim;
    if (ndim > 0)
        memcpy(a->shape, shape, (size_t)ndim * sizeof *shape);
    a->count = count;
    return QF_OK;
}

void qf_npy_free(qf_npy *a)
{
    if (a == NULL)
        return;
    free(a->data);
    a->data = NULL;
    a->count = 0;
    a->ndim = 0;
}

static int host_is_little(void)
{
    const uint16_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 1;
}

static void byteswap(unsigned char *p, size_t count, size_t size)
{
    size_t i, j;
    if (size < 2)
        return;
    for (i = 0; i < count; i++, p += size)
        for (j = 0; j < size / 2; j++) {
            unsigned char t = p[j];
            p[j] = p[size - 1 - j];
            p[size - 1 - j] = t;
        }
}

/* ---- Reading --------------------------------------------------------------- */

typedef struct reader {
    FILE *fp;                 /* or */
    const unsigned char *buf; /* with len, pos */
    size_t len, pos;
    long long remaining; /* bytes left after the header, -1 if unknown */
} reader;

static size_t rd_read(reader *r, void *dst, size_t n)
{
    if (r->fp)
        return fread(dst, 1, n, r->fp);
    if (n > r->len - r->pos)
        n = r->len - r->pos;
    memcpy(dst, r->buf + r->pos, n);
    r->pos += n;
    return n;
}

/* Is there anything left? */
static int rd_more(reader *r)
{
    if (r->fp)
        return fgetc(r->fp) != EOF;
    return r->pos < r->len;
}

typedef struct hdr_parser {
    const char *s;
    size_t len, pos;
    const char *name; /* file name for messages */
    char *err;
    size_t err_size;
} hdr_parser;

static void skip_ws(hdr_parser *p)
{
    while (p->pos < p->len &&
           (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' || p->s[p->pos] == '\n' || p->s[p->pos] == '\r'))
        p->pos++;
}

static qf_status hdr_error(hdr_parser *p, const char *what)
{
    return _qf_fail(p->err, p->err_size, QF_EPARSE, p->name, "header: %s at header column %zu", what,
                    p->pos + 1);
}

/* A Python string literal in single or double quotes (no escapes needed
 * for the keys and descrs we accept). */
static qf_status parse_string(hdr_parser *p, char *out, size_t out_size)
{
    char q;
    size_t n = 0;
    skip_ws(p);
    if (p->pos >= p->len || (p->s[p->pos] != '\'' && p->s[p->pos] != '"'))
        return hdr_error(p, "expected a quoted string");
    q = p->s[p->pos++];
    while (p->pos < p->len && p->s[p->pos] != q) {
        if (p->s[p->pos] == '\\' || (unsigned char)p->s[p->pos] < 0x20)
            return hdr_error(p, "unexpected character in string");
        if (n + 1 >= out_size)
            return hdr_error(p, "string too long");
        out[n++] = p->s[p->pos++];
    }
    if (p->pos >= p->len)
        return hdr_error(p, "unterminated string");
    p->pos++;
    out[n] = '\0';
    return QF_OK;
}

static int match_word(hdr_parser *p, const char *w)
{
    size_t n = strlen(w);
    if (p->len - p->pos >= n && !memcmp(p->s + p->pos, w, n)) {
        p->pos += n;
        return 1;
    }
    return 0;
}

static qf_status parse_shape(hdr_parser *p, int *ndim, size_t *shape)
{
    int n = 0;
    skip_ws(p);
    if (p->pos >= p->len || p->s[p->pos] != '(')
        return hdr_error(p, "'shape' must be a tuple");
    p->pos++;
    for (;;) {
        size_t v = 0;
        int digits = 0;
        skip_ws(p);
        if (p->pos < p->len && p->s[p->pos] == ')') {
            p->pos++;
            break;
        }
        while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') {
            unsigned d = (unsigned)(p->s[p->pos] - '0');
            if (v > (SIZE_MAX - d) / 10)
                return hdr_error(p, "shape dimension too large");
            v = v * 10 + d;
            digits++;
            p->pos++;
        }
        if (digits == 0)
            return hdr_error(p, "expected a non-negative integer in 'shape'");
        if (p->pos < p->len && (p->s[p->pos] == 'L' || p->s[p->pos] == 'l')) /* Python 2 long */
            p->pos++;
        if (n >= QF_NPY_MAX_DIMS) {
            char msg[80];
            snprintf(msg, sizeof msg, "'shape' has more than %d dimensions", QF_NPY_MAX_DIMS);
            return hdr_error(p, msg);
        }
        shape[n++] = v;
        skip_ws(p);
        if (p->pos < p->len && p->s[p->pos] == ',') {
            p->pos++;
            continue;
        }
        if (p->pos < p->len && p->s[p->pos] == ')') {
            p->pos++;
            if (n == 1) /* (5) is the integer 5, not a tuple */
                return hdr_error(p, "'shape' (N) is not a tuple; a 1-d shape is written (N,)");
            break;
        }
        return hdr_error(p, "expected ',' or ')' in 'shape'");
    }
    *ndim = n;
    return QF_OK;
}

/* Map a descr onto a dtype; *swap set when the file's byte order differs
 * from the host's. */
static int descr_lookup(const char *d, qf_npy_dtype *t, int *swap)
{
    char order = d[0], kind;
    unsigned size;
    int little;
    if (order == '<' || order == '>' || order == '|' || order == '=')
        d++;
    else
        order = '=';
    kind = d[0];
    if (kind == '\0' || d[1] < '1' || d[1] > '9' || d[2] != '\0')
        return 0;
    size = (unsigned)(d[1] - '0');
    little = order == '<' || ((order == '|' || order == '=') && host_is_little());
    *swap = size > 1 && little != host_is_little();
    if (kind == 'f' && size == 1) { /* ml_dtypes float8_e5m2 */
        *t = QF_NPY_RAW8;
        return 1;
    }
    /* Each (kind, size) pair names at most one row of the dtype table. */
    for (unsigned i = 0; i < QF_NPY_DTYPE_COUNT; i++)
        if (dtypes[i].kind == kind && dtypes[i].size == size) {
            *t = (qf_npy_dtype)i;
            return 1;
        }
    return 0;
}

typedef struct header {
    qf_npy_dtype dtype;
    int swap, fortran, ndim;
    size_t shape[QF_NPY_MAX_DIMS];
} header;

static qf_status parse_header(hdr_parser *p, header *h)
{
    int have_descr = 0, have_fortran = 0, have_shape = 0;
    qf_status st;
    skip_ws(p);
    if (p->pos >= p->len || p->s[p->pos] != '{')
        return hdr_error(p, "expected '{' (the header is a Python dict)");
    p->pos++;
    for (;;) {
        char key[32];
        skip_ws(p);
        if (p->pos < p->len && p->s[p->pos] == '}') {
            p->pos++;
            break;
        }
        if ((st = parse_string(p, key, sizeof key)) != QF_OK)
            return st;
        skip_ws(p);
        if (p->pos >= p->len || p->s[p->pos] != ':') {
            char msg[96];
            snprintf(msg, sizeof msg, "expected ':' after key '%s'", key);
            return hdr_error(p, msg);
        }
        p->pos++;
        skip_ws(p);
        if (!strcmp(key, "descr")) {
            char d[64];
            if (have_descr++)
                return hdr_error(p, "duplicate key 'descr'");
            if (p->pos < p->len && p->s[p->pos] == '[')
                return _qf_fail(p->err, p->err_size, QF_EFORMAT, p->name,
                                "header: descr is a structured dtype (a list); only plain element types are "
                                "supported (%s)",
                                SUPPORTED_DESCRS);
            if ((st = parse_string(p, d, sizeof d)) != QF_OK)
                return st;
            if (!descr_lookup(d, &h->dtype, &h->swap))
                return _qf_fail(p->err, p->err_size, QF_EFORMAT, p->name,
                                "header: descr '%s' not supported (%s)", d, SUPPORTED_DESCRS);
        } else if (!strcmp(key, "fortran_order")) {
            if (have_fortran++)
                return hdr_error(p, "duplicate key 'fortran_order'");
            if (match_word(p, "True"))
                h->fortran = 1;
            else if (match_word(p, "False"))
                h->fortran = 0;
            else
                return hdr_error(p, "'fortran_order' must be True or False");
        } else if (!strcmp(key, "shape")) {
            if (have_shape++)
                return hdr_error(p, "duplicate key 'shape'");
            if ((st = parse_shape(p, &h->ndim, h->shape)) != QF_OK)
                return st;
        } else {
            char msg[96];
            snprintf(msg, sizeof msg, "unexpected key '%s' (keys are 'descr', 'fortran_order', 'shape')",
                     key);
            return hdr_error(p, msg);
        }
        skip_ws(p);
        if (p->pos < p->len && p->s[p->pos] == ',') {
            p->pos++;
            continue;
        }
        if (p->pos < p->len && p->s[p->pos] == '}') {
            p->pos++;
            break;
        }
        return hdr_error(p, "expected ',' or '}'");
    }
    skip_ws(p);
    while (p->pos < p->len && p->s[p->pos] == '\0') /* some writers pad with NULs */
        p->pos++;
    if (p->pos != p->len)
        return hdr_error(p, "unexpected text after the dict");
    if (!have_descr || !have_fortran || !have_shape)
        return _qf_fail(p->err, p->err_size, QF_EPARSE, p->name, "header: missing key '%s'",
                        !have_descr     ? "descr"
                        : !have_fortran ? "fortran_order"
                                        : "shape");
    return QF_OK;
}

/* Reorder a Fortran-order array (first index fastest) into C order. */
static qf_status fortran_to_c(qf_npy *a)
{
    size_t size = dtypes[a->dtype].size, idx[QF_NPY_MAX_DIMS] = {0}, stride[QF_NPY_MAX_DIMS], i, off = 0;
    unsigned char *dst;
    const unsigned char *src = a->data;
    int d;
    if (a->ndim < 2 || a->count == 0)
        return QF_OK;
    dst = malloc(a->count * size);
    if (dst == NULL)
        return QF_ENOMEM;
    stride[0] = 1;
    for (d = 1; d < a->ndim; d++)
        stride[d] = stride[d - 1] * a->shape[d - 1];
    /* Walk destination (C) order, carrying the Fortran offset along. */
    for (i = 0; i < a->count; i++) {
        memcpy(dst + i * size, src + off * size, size);
        for (d = a->ndim - 1; d >= 0; d--) {
            if (++idx[d] < a->shape[d]) {
                off += stride[d];
                break;
            }
            off -= (idx[d] - 1) * stride[d];
            idx[d] = 0;
        }
    }
    free(a->data);
    a->data = dst;
    return QF_OK;
}

static qf_status read_any(reader *r, const char *name, qf_npy *a, char *err, size_t err_size)
{
    unsigned char pre[12];
    size_t got, hlen, pre_len, bytes, count;
    char *hbuf;
    hdr_parser p;
    header h;
    qf_status st;
    char shp[256];

    memset(a, 0, sizeof *a);
    memset(&h, 0, sizeof h);
    got = rd_read(r, pre, 8);
    if (got < 6 || memcmp(pre, magic, 6))
        return _qf_fail(err, err_size, QF_EPARSE, name, "not a .npy file (bad magic; expected \\x93NUMPY)");
    if (got < 8)
        return _qf_fail(err, err_size, QF_EPARSE, name,
                        "truncated header: file ends inside the version bytes");
    if ((pre[6] != 1 && pre[6] != 2 && pre[6] != 3) || pre[7] != 0)
        return _qf_fail(err, err_size, QF_EPARSE, name,
                        "unsupported .npy version %u.%u (supported: 1.0, 2.0, 3.0)", pre[6], pre[7]);
    if (pre[6] == 1) {
        if (rd_read(r, pre + 8, 2) != 2)
            return _qf_fail(err, err_size, QF_EPARSE, name,
                            "truncated header: file ends inside the header length");
        hlen = (size_t)pre[8] | (size_t)pre[9] << 8;
        pre_len = 10;
    } else {
        if (rd_read(r, pre + 8, 4) != 4)
            return _qf_fail(err, err_size, QF_EPARSE, name,
                            "truncated header: file ends inside the header length");
        hlen = (size_t)pre[8] | (size_t)pre[9] << 8 | (size_t)pre[10] << 16 | (size_t)pre[11] << 24;
        pre_len = 12;
    }
    if (hlen > QF_NPY_MAX_HEADER)
        return _qf_fail(err, err_size, QF_EPARSE, name, "header length %zu exceeds the limit of %u bytes",
                        hlen, QF_NPY_MAX_HEADER);
    hbuf = malloc(hlen ? hlen : 1);
    if (hbuf == NULL)
        return _qf_fail(err, err_size, QF_ENOMEM, name, "out of memory reading the header");
    got = rd_read(r, hbuf, hlen);
    if (got != hlen) {
        free(hbuf);
        return _qf_fail(err, err_size, QF_EPARSE, name,
                        "truncated header: expected %zu header bytes, found %zu", hlen, got);
    }
    p.s = hbuf;
    p.len = hlen;
    p.pos = 0;
    p.name = name;
    p.err = err;
    p.err_size = err_size;
    st = parse_header(&p, &h);
    free(hbuf);
    if (st != QF_OK)
        return st;

    qf_npy_shape_str(h.ndim, h.shape, shp, sizeof shp);
    if (!shape_count(h.ndim, h.shape, dtypes[h.dtype].size, &count))
        return _qf_fail(err, err_size, QF_EPARSE, name, "shape %s: the size overflows", shp);
    bytes = count * dtypes[h.dtype].size;
    if (r->remaining >= 0) {
        long long have = r->remaining - (long long)(pre_len + hlen);
        if (have < 0)
            have = 0;
        if ((unsigned long long)have < (unsigned long long)bytes)
            return _qf_fail(
                err, err_size, QF_EPARSE, name,
                "truncated data: shape %s of %s needs %zu bytes, the file holds %lld after the header", shp,
                dtypes[h.dtype].name, bytes, have);
        if ((unsigned long long)have > (unsigned long long)bytes)
            return _qf_fail(
                err, err_size, QF_EPARSE, name,
                "size mismatch: shape %s of %s needs %zu bytes, the file holds %lld after the header", shp,
                dtypes[h.dtype].name, bytes, have);
    }
    a->data = malloc(bytes ? bytes : 1);
    if (a->data == NULL)
        return _qf_fail(err, err_size, QF_ENOMEM, name, "out of memory: shape %s needs %zu bytes", shp,
                        bytes);
    got = rd_read(r, a->data, bytes);
    if (got != bytes) {
        qf_npy_free(a);
        return _qf_fail(err, err_size, QF_EPARSE, name,
                        "truncated data: shape %s of %s needs %zu bytes, found %zu", shp,
                        dtypes[h.dtype].name, bytes, got);
    }
    if (rd_more(r)) {
        qf_npy_free(a);
        return _qf_fail(err, err_size, QF_EPARSE, name,
                        "size mismatch: the file holds more than the %zu data bytes of shape %s of %s", bytes,
                        shp, dtypes[h.dtype].name);
    }
    a->dtype = h.dtype;
    a->ndim = h.ndim;
    memcpy(a->shape, h.shape, sizeof a->shape);
    a->count = count;
    if (h.swap)
        byteswap(a->data, count, dtypes[h.dtype].size);
    if (h.fortran && (st = fortran_to_c(a)) != QF_OK) {
        qf_npy_free(a);
        return _qf_fail(err, err_size, st, name, "out of memory reordering a Fortran-order array");
    }
    return QF_OK;
}

qf_status qf_npy_read(const char *path, qf_npy *a, char *err, size_t err_size)
{
    reader r;
    struct stat sb;
    qf_status st;
    memset(&r, 0, sizeof r);
    memset(a, 0, sizeof *a);
    /* Regular files only, refused before a read could block (_files.h). */
    r.fp = _qf_fopen_read(path, err, err_size, &st);
    if (r.fp == NULL)
        return st;
    r.remaining = -1;
    if (fstat(fileno(r.fp), &sb) == 0 && S_ISREG(sb.st_mode))
        r.remaining = (long long)sb.st_size;
    st = read_any(&r, path, a, err, err_size);
    if (st == QF_OK && ferror(r.fp)) {
        qf_npy_free(a);
        st = _qf_fail(err, err_size, QF_EIO, path, "read error");
    }
    fclose(r.fp);
    return st;
}

qf_status qf_npy_read_mem(const void *buf, size_t len, const char *name, qf_npy *a, char *err,
                          size_t err_size)
{
    reader r;
    memset(&r, 0, sizeof r);
    if (buf == NULL && len > 0)
        return _qf_fail(err, err_size, QF_EINVAL, name, "no buffer");
    r.buf = buf;
    r.len = len;
    r.remaining = (long long)len;
    return read_any(&r, name ? name : "<memory>", a, err, err_size);
}

/* ---- Writing --------------------------------------------------------------- */

/* The arguments of a write, checked before anything is created; *count
 * the elements. */
static qf_status write_args(const char *name, qf_npy_dtype t, int ndim, const size_t *shape, const void *data,
                            size_t *count, char *err, size_t err_size)
{
    if ((unsigned)t >= QF_NPY_DTYPE_COUNT || ndim < 0 || ndim > QF_NPY_MAX_DIMS || (ndim > 0 && !shape))
        return _qf_fail(err, err_size, QF_EINVAL, name, "invalid dtype or shape");
    if (!shape_count(ndim, shape, dtypes[t].size, count))
        return _qf_fail(err, err_size, QF_EINVAL, name, "shape too large");
    if (data == NULL && *count > 0)
        return _qf_fail(err, err_size, QF_EINVAL, name, "no data");
    return QF_OK;
}

qf_status qf_npy_write_file(FILE *fp, const char *name, qf_npy_dtype t, int ndim, const size_t *shape,
                            const void *data, char *err, size_t err_size)
{
    char dict[64 + QF_NPY_MAX_DIMS * 24], shp[QF_NPY_MAX_DIMS * 24];
    unsigned char pre[12];
    size_t count, dlen, total, pre_len, hlen, size, bytes;
    int ok;
    qf_status s = write_args(name, t, ndim, shape, data, &count, err, err_size);

    if (s != QF_OK)
        return s;
    size = dtypes[t].size;
    bytes = count * size;
    qf_npy_shape_str(ndim, shape, shp, sizeof shp);
    dlen = (size_t)snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                            dtypes[t].descr, shp);
    /* Version 1.0 when the padded header fits 16 bits. */
    pre_len = 10;
    total = (pre_len + dlen + 1 + 63) / 64 * 64;
    if (total - pre_len > 65535) {
        pre_len = 12;
        total = (pre_len + dlen + 1 + 63) / 64 * 64;
    }
    hlen = total - pre_len;
    memcpy(pre, magic, 6);
    pre[6] = pre_len == 10 ? 1 : 2;
    pre[7] = 0;
    pre[8] = (unsigned char)(hlen & 0xFF);
    pre[9] = (unsigned char)(hlen >> 8 & 0xFF);
    pre[10] = (unsigned char)(hlen >> 16 & 0xFF);
    pre[11] = (unsigned char)(hlen >> 24 & 0xFF);

    ok = fwrite(pre, 1, pre_len, fp) == pre_len && fwrite(dict, 1, dlen, fp) == dlen;
    for (size_t i = dlen; ok && i + 1 < hlen; i++)
        ok = fputc(' ', fp) != EOF;
    ok = ok && fputc('\n', fp) != EOF;
    if (ok && bytes > 0) {
        if (host_is_little() || size == 1) {
            ok = fwrite(data, 1, bytes, fp) == bytes;
        } else {
            /* Swap through a bounded buffer: the descr is little-endian. */
            unsigned char buf[4096];
            const unsigned char *src = data;
            size_t per = sizeof buf / size, done = 0;
            while (ok && done < count) {
                size_t n = count - done < per ? count - done : per;
                memcpy(buf, src + done * size, n * size);
                byteswap(buf, n, size);
                ok = fwrite(buf, size, n, fp) == n;
                done += n;
            }
        }
    }
    ok = ok && fflush(fp) == 0;
    if (!ok)
        return _qf_fail(err, err_size, QF_EIO, name, "write failed: %s", strerror(errno));
    return QF_OK;
}

qf_status qf_npy_write_data(const char *path, qf_npy_dtype t, int ndim, const size_t *shape, const void *data,
                            char *err, size_t err_size)
{
    _qf_out o;
    size_t count;
    /* The arguments first: a bad call creates no file. */
    qf_status s = write_args(path, t, ndim, shape, data, &count, err, err_size);
    if (s != QF_OK)
        return s;
    /* Written beside path and renamed over it: a link or FIFO at path is
     * replaced, not written through (_files.h); a failed write leaves what
     * was there. */
    if (!_qf_out_open(&o, path, 0, err, err_size))
        return QF_EIO;
    s = qf_npy_write_file(o.f, path, t, ndim, shape, data, err, err_size);
    if (s != QF_OK) {
        _qf_out_abort(&o);
        return s;
    }
    return _qf_out_commit(&o, err, err_size);
}

qf_status qf_npy_write(const char *path, const qf_npy *a, char *err, size_t err_size)
{
    return qf_npy_write_data(path, a->dtype, a->ndim, a->shape, a->data, err, err_size);
}

/* ---- Conversions ----------------------------------------------------------- */

/* Copy the n elements of a->data, read as T, into out (converted to out's
 * element type) and return from the conversion. */
#define _WIDEN(T)                                                                                            \
    do {                                                                                                     \
        for (i = 0; i < n; i++)                                                                              \
            out[i] = ((const T *)a->data)[i];                                                                \
        return QF_OK;                                                                                        \
    } while (0)

/* The same for 64-bit integers into doubles, refusing the first value that
 * a double does not hold exactly; LIMIT is 2^(value bits): the largest
 * values round up to it, and casting it back is undefined. */
#define _WIDEN_EXACT(T, LIMIT)                                                                               \
    do {                                                                                                     \
        for (i = 0; i < n; i++) {                                                                            \
            T v = ((const T *)a->data)[i];                                                                   \
            out[i] = (double)v;                                                                              \
            if (out[i] >= (LIMIT) || (T)out[i] != v) {                                                       \
                if (bad)                                                                                     \
                    *bad = i;                                                                                \
                return QF_EINVAL;                                                                            \
            }                                                                                                \
        }                                                                                                    \
        return QF_OK;                                                                                        \
    } while (0)

qf_status qf_npy_get_f64(const qf_npy *a, double *out, size_t *bad)
{
    const qf_format *f16 = qf_format_get(QF_FLOAT16);
    size_t i, n = a->count;
    switch (a->dtype) {
    case QF_NPY_FLOAT64: memcpy(out, a->data, n * sizeof *out); return QF_OK;
    case QF_NPY_FLOAT32: _WIDEN(float);
    case QF_NPY_FLOAT16:
        for (i = 0; i < n; i++)
            out[i] = qf_format_decode(f16, ((const uint16_t *)a->data)[i]);
        return QF_OK;
    case QF_NPY_UINT8:
    case QF_NPY_BOOL: _WIDEN(uint8_t);
    case QF_NPY_UINT16: _WIDEN(uint16_t);
    case QF_NPY_UINT32: _WIDEN(uint32_t);
    case QF_NPY_UINT64: _WIDEN_EXACT(uint64_t, 18446744073709551616.0);
    case QF_NPY_INT8: _WIDEN(int8_t);
    case QF_NPY_INT16: _WIDEN(int16_t);
    case QF_NPY_INT32: _WIDEN(int32_t);
    case QF_NPY_INT64: _WIDEN_EXACT(int64_t, 9223372036854775808.0);
    case QF_NPY_RAW8:
    case QF_NPY_RAW16:
    case QF_NPY_RAW32:
    case QF_NPY_RAW64:
    case QF_NPY_DTYPE_COUNT: break;
    }
    return QF_EFORMAT;
}

qf_status qf_npy_get_bits(const qf_npy *a, uint64_t *out)
{
    size_t i, n = a->count;
    switch (a->dtype) {
    case QF_NPY_UINT8:
    case QF_NPY_INT8:
    case QF_NPY_BOOL:
    case QF_NPY_RAW8: _WIDEN(uint8_t);
    case QF_NPY_UINT16:
    case QF_NPY_INT16:
    case QF_NPY_RAW16: _WIDEN(uint16_t);
    case QF_NPY_UINT32:
    case QF_NPY_INT32:
    case QF_NPY_RAW32: _WIDEN(uint32_t);
    case QF_NPY_UINT64:
    case QF_NPY_INT64:
    case QF_NPY_RAW64: memcpy(out, a->data, n * sizeof *out); return QF_OK;
    case QF_NPY_FLOAT64:
    case QF_NPY_FLOAT32:
    case QF_NPY_FLOAT16:
    case QF_NPY_DTYPE_COUNT: break;
    }
    return QF_EFORMAT;
}

#undef _WIDEN
#undef _WIDEN_EXACT
