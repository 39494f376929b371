/* safetensors.c: .safetensors reading and writing (qf_safetensors.h). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "_files.h"
#include "_status.h"
#include "qf_format.h"
#include "qf_safetensors.h"

/* clang-format off */
static const struct {
    const char *name;
    unsigned size;
    qf_format_id fmt; /* QF_FORMAT_COUNT: plain integer or bool */
    char kind;        /* 'f' float, 'i' signed, 'u' unsigned, 'b' bool */
} dtypes[QF_ST_DTYPE_COUNT] = {
    [QF_ST_F64]     = { "F64",     8, QF_FLOAT64,       'f' },
    [QF_ST_F32]     = { "F32",     4, QF_FLOAT32,       'f' },
    [QF_ST_F16]     = { "F16",     2, QF_FLOAT16,       'f' },
    [QF_ST_BF16]    = { "BF16",    2, QF_BFLOAT16,      'f' },
    [QF_ST_F8_E4M3] = { "F8_E4M3", 1, QF_FLOAT8_E4M3FN, 'f' },
    [QF_ST_F8_E5M2] = { "F8_E5M2", 1, QF_FLOAT8_E5M2,   'f' },
    [QF_ST_I8]      = { "I8",      1, QF_INT8,          'i' },
    [QF_ST_U8]      = { "U8",      1, QF_UINT8,         'u' },
    [QF_ST_I16]     = { "I16",     2, QF_FORMAT_COUNT,  'i' },
    [QF_ST_U16]     = { "U16",     2, QF_FORMAT_COUNT,  'u' },
    [QF_ST_I32]     = { "I32",     4, QF_FORMAT_COUNT,  'i' },
    [QF_ST_U32]     = { "U32",     4, QF_FORMAT_COUNT,  'u' },
    [QF_ST_I64]     = { "I64",     8, QF_FORMAT_COUNT,  'i' },
    [QF_ST_U64]     = { "U64",     8, QF_FORMAT_COUNT,  'u' },
    [QF_ST_BOOL]    = { "BOOL",    1, QF_FORMAT_COUNT,  'b' },
};
/* clang-format on */

const char *qf_st_dtype_name(qf_st_dtype t)
{
    return (unsigned)t < QF_ST_DTYPE_COUNT ? dtypes[t].name : "?";
}

size_t qf_st_dtype_size(qf_st_dtype t)
{
    return (unsigned)t < QF_ST_DTYPE_COUNT ? dtypes[t].size : 0;
}

const qf_format *qf_st_dtype_format(qf_st_dtype t)
{
    if ((unsigned)t >= QF_ST_DTYPE_COUNT || dtypes[t].fmt == QF_FORMAT_COUNT)
        return NULL;
    return qf_format_get(dtypes[t].fmt);
}

qf_status qf_st_dtype_lookup(const char *name, qf_st_dtype *out)
{
    int i;
    for (i = 0; name && i < QF_ST_DTYPE_COUNT; i++)
        if (strcmp(name, dtypes[i].name) == 0) {
            *out = (qf_st_dtype)i;
            return QF_OK;
        }
    return QF_EPARSE;
}

static const char *_dtype_name(int i)
{
    return dtypes[i].name;
}

void qf_st_dtype_list(char *buf, size_t size)
{
    _qf_join_names(buf, size, QF_ST_DTYPE_COUNT, _dtype_name);
}

static char *dupstr(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

static void shape_str(int ndim, const size_t *shape, char *buf, size_t size)
{
    size_t used = 0;
    int i, n;
    if (size == 0)
        return;
    buf[0] = '\0';
    for (i = -1; i <= ndim; i++) {
        if (i == -1)
            n = snprintf(buf + used, size - used, "[");
        else if (i == ndim)
            n = snprintf(buf + used, size - used, "]");
        else
            n = snprintf(buf + used, size - used, i ? ", %zu" : "%zu", shape[i]);
        if (n < 0 || (size_t)n >= size - used)
            return;
        used += (size_t)n;
    }
}

void qf_safetensors_close(qf_safetensors *st)
{
    size_t i;
    if (st == NULL)
        return;
    for (i = 0; i < st->ntensors; i++)
        free(st->tensors[i].name);
    for (i = 0; i < st->nmeta; i++) {
        free(st->meta_keys[i]);
        free(st->meta_values[i]);
    }
    free(st->tensors);
    free(st->meta_keys);
    free(st->meta_values);
    free(st->name);
    if (st->fp)
        fclose(st->fp);
    memset(st, 0, sizeof *st);
}

/* Tensor names can hold anything JSON allows; quote them shortened and
 * without control characters so that messages stay one line. */
static const char *printable(const char *s, char *buf, size_t size)
{
    size_t i, n = 0;
    for (i = 0; s[i] && n + 4 < size; i++)
        buf[n++] = ((unsigned char)s[i] < 0x20 || s[i] == 0x7f) ? '?' : s[i];
    if (s[i] && size >= 4) {
        n = n < size - 4 ? n : size - 4;
        memcpy(buf + n, "...", 3);
        n += 3;
    }
    buf[n] = '\0';
    return buf;
}

static int cmp_begin(const void *a, const void *b)
{
    const qf_st_tensor *x = a, *y = b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}

/* A nonnegative JSON integer (Jansson keeps json_int_t = long long and
 * rejects larger literals as a parse error). */
static int get_u64(json_t *v, uint64_t *out)
{
    json_int_t x;
    if (!json_is_integer(v))
        return 0;
    x = json_integer_value(v);
    if (x < 0)
        return 0;
    *out = (uint64_t)x;
    return 1;
}

static qf_status parse_tensor(qf_safetensors *st, const char *key, json_t *v, qf_st_tensor *t, char *err,
                              size_t es)
{
    char nm[80], list[160], sh[64];
    json_t *dt, *shape, *offs, *x;
    const char *field;
    size_t i, bytes;
    uint64_t u;
    printable(key, nm, sizeof nm);
    if (!json_is_object(v))
        return _qf_fail(err, es, QF_EPARSE, st->name, "tensor '%s': entry must be a JSON object", nm);
    /* Unknown fields are ignored, as the reference reader does. */
    dt = json_object_get(v, "dtype");
    shape = json_object_get(v, "shape");
    offs = json_object_get(v, "data_offsets");
    field = !dt ? "dtype" : !shape ? "shape" : !offs ? "data_offsets" : NULL;
    if (field)
        return _qf_fail(err, es, QF_EPARSE, st->name, "tensor '%s': missing field '%s'", nm, field);
    if (!json_is_string(dt))
        return _qf_fail(err, es, QF_EPARSE, st->name, "tensor '%s': 'dtype' must be a string", nm);
    if (qf_st_dtype_lookup(json_string_value(dt), &t->dtype) != QF_OK) {
        char d[40];
        qf_st_dtype_list(list, sizeof list);
        return _qf_fail(err, es, QF_EPARSE, st->name, "tensor '%s': dtype '%s' not supported (supported: %s)",
                        nm, printable(json_string_value(dt), d, sizeof d), list);
    }
    if (!json_is_array(shape))
        return _qf_fail(err, es, QF_EPARSE, st->name, "tensor '%s': 'shape' must be an array", nm);
    if (json_array_size(shape) > QF_ST_MAX_DIMS)
        return _qf_fail(err, es, QF_EPARSE, st->name, "tensor '%s': 'shape' has %zu dimensions (at most %d)",
                        nm, json_array_size(shape), QF_ST_MAX_DIMS);
    t->ndim = (int)json_array_size(shape);
    t->count = 1;
    json_array_foreach(shape, i, x)
    {
        if (!get_u64(x, &u) || u > SIZE_MAX)
            return _qf_fail(err, es, QF_EPARSE, st->name,
                            "tensor '%s': 'shape'[%zu] must be a nonnegative integer", nm, i);
        t->shape[i] = (size_t)u;
    }
    for (i = 0; i < (size_t)t->ndim; i++) {
        if (t->shape[i] != 0 && t->count > SIZE_MAX / t->shape[i]) {
            shape_str(t->ndim, t->shape, sh, sizeof sh);
            return _qf_fail(err, es, QF_EPARSE, st->name, "tensor '%s': 'shape' %s: element count overflows",
                            nm, sh);
        }
        t->count *= t->shape[i];
    }
    if (t->count > SIZE_MAX / dtypes[t->dtype].size) {
        shape_str(t->ndim, t->shape, sh, sizeof sh);
        return _qf_fail(err, es, QF_EPARSE, st->name, "tensor '%s': 'shape' %s: byte size overflows", nm, sh);
    }
    bytes = t->count * dtypes[t->dtype].size;
    if (!json_is_array(offs) || json_array_size(offs) != 2 || !get_u64(json_array_get(offs, 0), &t->begin) ||
        !get_u64(json_array_get(offs, 1), &t->end))
        return _qf_fail(err, es, QF_EPARSE, st->name,
                        "tensor '%s': 'data_offsets' must be two nonnegative integers [begin, end]", nm);
    if (t->end < t->begin)
        return _qf_fail(err, es, QF_EPARSE, st->name,
                        "tensor '%s': 'data_offsets' [%llu, %llu]: end before begin", nm,
                        (unsigned long long)t->begin, (unsigned long long)t->end);
    if (t->end > st->data_len)
        return _qf_fail(
            err, es, QF_EPARSE, st->name,
            "tensor '%s': 'data_offsets' [%llu, %llu] beyond the data section (%llu bytes): truncated "
            "file?",
            nm, (unsigned long long)t->begin, (unsigned long long)t->end, (unsigned long long)st->data_len);
    if (t->end - t->begin != (uint64_t)bytes) {
        shape_str(t->ndim, t->shape, sh, sizeof sh);
        return _qf_fail(err, es, QF_EPARSE, st->name,
                        "tensor '%s': 'data_offsets' [%llu, %llu] hold %llu bytes, shape %s of %s needs %zu",
                        nm, (unsigned long long)t->begin, (unsigned long long)t->end,
                        (unsigned long long)(t->end - t->begin), sh, dtypes[t->dtype].name, bytes);
    }
    t->name = dupstr(key);
    return t->name ? QF_OK : QF_ENOMEM;
}

static qf_status parse_meta(qf_safetensors *st, json_t *v, char *err, size_t es)
{
    const char *k;
    json_t *x;
    size_t n = json_object_size(v);
    char nm[80];
    if (!json_is_object(v))
        return _qf_fail(err, es, QF_EPARSE, st->name, "'__metadata__' must be an object of strings");
    st->meta_keys = calloc(n ? n : 1, sizeof *st->meta_keys);
    st->meta_values = calloc(n ? n : 1, sizeof *st->meta_values);
    if (!st->meta_keys || !st->meta_values)
        return QF_ENOMEM;
    json_object_foreach(v, k, x)
    {
        if (!json_is_string(x))
            return _qf_fail(err, es, QF_EPARSE, st->name, "'__metadata__': value of '%s' must be a string",
                            printable(k, nm, sizeof nm));
        st->meta_keys[st->nmeta] = dupstr(k);
        st->meta_values[st->nmeta] = dupstr(json_string_value(x));
        st->nmeta++;
        if (!st->meta_keys[st->nmeta - 1] || !st->meta_values[st->nmeta - 1])
            return QF_ENOMEM;
    }
    return QF_OK;
}

/* Parse and validate the header held in hdr (hlen bytes). */
static qf_status parse_header(qf_safetensors *st, const char *hdr, size_t hlen, char *err, size_t es)
{
    json_error_t je;
    json_t *root, *v;
    const char *k;
    qf_status s = QF_OK;
    size_t n, i;
    uint64_t at;
    char nm[80], nm2[80];

    root = json_loadb(hdr, hlen, JSON_REJECT_DUPLICATES, &je);
    if (root == NULL)
        return _qf_fail(err, es, QF_EPARSE, st->name,
                        "header: invalid JSON at line %d, column %d (file byte %llu): %s", je.line, je.column,
                        (unsigned long long)(8 + (je.position > 0 ? je.position : 0)), je.text);
    if (!json_is_object(root)) {
        json_decref(root);
        return _qf_fail(err, es, QF_EPARSE, st->name, "header: must be a JSON object");
    }
    n = json_object_size(root);
    st->tensors = calloc(n ? n : 1, sizeof *st->tensors);
    if (st->tensors == NULL) {
        json_decref(root);
        return QF_ENOMEM;
    }
    json_object_foreach(root, k, v)
    {
        if (strcmp(k, "__metadata__") == 0)
            s = parse_meta(st, v, err, es);
        else if ((s = parse_tensor(st, k, v, &st->tensors[st->ntensors], err, es)) == QF_OK)
            st->ntensors++;
        if (s != QF_OK)
            break;
    }
    json_decref(root);
    if (s != QF_OK)
        return s;
    /* The ranges must tile the data section, as the reference reader
     * requires: sorted by begin, each starts where the previous ended. */
    qsort(st->tensors, st->ntensors, sizeof *st->tensors, cmp_begin);
    for (i = 0, at = 0; i < st->ntensors; i++) {
        const qf_st_tensor *t = &st->tensors[i];
        if (t->begin < at)
            return _qf_fail(err, es, QF_EPARSE, st->name,
                            "tensor '%s': 'data_offsets' [%llu, %llu] overlap tensor '%s' [%llu, %llu]",
                            printable(t->name, nm, sizeof nm), (unsigned long long)t->begin,
                            (unsigned long long)t->end, printable(st->tensors[i - 1].name, nm2, sizeof nm2),
                            (unsigned long long)st->tensors[i - 1].begin,
                            (unsigned long long)st->tensors[i - 1].end);
        if (t->begin > at)
            return _qf_fail(err, es, QF_EPARSE, st->name,
                            "tensor '%s': 'data_offsets' [%llu, %llu] leave a hole of %llu bytes before them",
                            printable(t->name, nm, sizeof nm), (unsigned long long)t->begin,
                            (unsigned long long)t->end, (unsigned long long)(t->begin - at));
        at = t->end;
    }
    if (at != st->data_len)
        return _qf_fail(err, es, QF_EPARSE, st->name,
                        "data section has %llu bytes, the tensors cover %llu (trailing bytes)",
                        (unsigned long long)st->data_len, (unsigned long long)at);
    return QF_OK;
}

static uint64_t le64(const unsigned char *p)
{
    uint64_t v = 0;
    int i;
    for (i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static qf_status check_hlen(qf_safetensors *st, uint64_t hlen, uint64_t total, char *err, size_t es)
{
    if (hlen > QF_ST_MAX_HEADER)
        return _qf_fail(err, es, QF_EPARSE, st->name, "header length %llu exceeds the limit of %u bytes",
                        (unsigned long long)hlen, QF_ST_MAX_HEADER);
    if (hlen > total - 8)
        return _qf_fail(err, es, QF_EPARSE, st->name,
                        "header length %llu beyond the end of the file (%llu bytes): truncated file?",
                        (unsigned long long)hlen, (unsigned long long)total);
    if (hlen < 2)
        return _qf_fail(err, es, QF_EPARSE, st->name, "header length %llu: too short for a JSON object",
                        (unsigned long long)hlen);
    st->data_start = 8 + hlen;
    st->data_len = total - 8 - hlen;
    return QF_OK;
}

qf_status qf_safetensors_read_mem(const void *buf, size_t len, const char *name, qf_safetensors *st,
                                  char *err, size_t err_size)
{
    const unsigned char *p = buf;
    qf_status s;
    memset(st, 0, sizeof *st);
    st->name = dupstr(name ? name : "<memory>");
    if (st->name == NULL)
        return QF_ENOMEM;
    if (buf == NULL || len < 8) {
        s = _qf_fail(err, err_size, QF_EPARSE, st->name, "%zu bytes: too short for the 8-byte header length",
                     buf ? len : 0);
        goto out;
    }
    if ((s = check_hlen(st, le64(p), len, err, err_size)) != QF_OK)
        goto out;
    st->buf = p;
    s = parse_header(st, (const char *)p + 8, (size_t)(st->data_start - 8), err, err_size);
out:
    if (s != QF_OK)
        qf_safetensors_close(st);
    return s;
}

qf_status qf_safetensors_open(const char *path, qf_safetensors *st, char *err, size_t err_size)
{
    unsigned char lenb[8];
    struct stat sb;
    char *hdr = NULL;
    qf_status s;
    memset(st, 0, sizeof *st);
    st->name = dupstr(path ? path : "(null)");
    if (st->name == NULL)
        return QF_ENOMEM;
    /* Regular files only, refused before a read could block (_files.h). */
    st->fp = path ? _qf_fopen_read(path, err, err_size, &s) : NULL;
    if (st->fp == NULL) {
        if (!path)
            s = _qf_fail(err, err_size, QF_EIO, st->name, "cannot open: %s", strerror(EINVAL));
        goto out;
    }
    if (fstat(fileno(st->fp), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        s = _qf_fail(err, err_size, QF_EIO, st->name, "not a regular file");
        goto out;
    }
    if (sb.st_size < 8 || fread(lenb, 1, 8, st->fp) != 8) {
        s = _qf_fail(err, err_size, QF_EPARSE, st->name, "%lld bytes: too short for the 8-byte header length",
                     (long long)sb.st_size);
        goto out;
    }
    if ((s = check_hlen(st, le64(lenb), (uint64_t)sb.st_size, err, err_size)) != QF_OK)
        goto out;
    hdr = malloc((size_t)(st->data_start - 8));
    if (hdr == NULL) {
        s = QF_ENOMEM;
        goto out;
    }
    if (fread(hdr, 1, (size_t)(st->data_start - 8), st->fp) != st->data_start - 8) {
        s = _qf_fail(err, err_size, QF_EIO, st->name, "header: read error (truncated file?)");
        goto out;
    }
    s = parse_header(st, hdr, (size_t)(st->data_start - 8), err, err_size);
out:
    free(hdr);
    if (s != QF_OK)
        qf_safetensors_close(st);
    return s;
}

qf_status qf_safetensors_find(const qf_safetensors *st, const char *name, size_t *index, char *err,
                              size_t err_size)
{
    char list[256], nm[80], nm2[80];
    size_t i, used = 0;
    int n;
    for (i = 0; name && i < st->ntensors; i++)
        if (strcmp(st->tensors[i].name, name) == 0) {
            *index = i;
            return QF_OK;
        }
    list[0] = '\0';
    for (i = 0; i < st->ntensors && used < sizeof list; i++) {
        n = snprintf(list + used, sizeof list - used, i ? ", %s" : "%s",
                     printable(st->tensors[i].name, nm, sizeof nm));
        if (n < 0 || (size_t)n >= sizeof list - used) {
            if (used + 5 < sizeof list)
                memcpy(list + used, ", ...", 6);
            break;
        }
        used += (size_t)n;
    }
    return _qf_fail(err, err_size, QF_EINVAL, st->name, "no tensor '%s' (tensors: %s)",
                    printable(name ? name : "(null)", nm2, sizeof nm2), st->ntensors ? list : "none");
}

const char *qf_safetensors_meta(const qf_safetensors *st, const char *key)
{
    size_t i;
    for (i = 0; key && i < st->nmeta; i++)
        if (strcmp(st->meta_keys[i], key) == 0)
            return st->meta_values[i];
    return NULL;
}

qf_status qf_safetensors_get_bytes(const qf_safetensors *st, size_t i, void *out, char *err, size_t err_size)
{
    const qf_st_tensor *t;
    size_t n;
    char nm[80];
    if (i >= st->ntensors)
        return _qf_fail(err, err_size, QF_EINVAL, st->name, "tensor index %zu out of range (%zu tensors)", i,
                        st->ntensors);
    t = &st->tensors[i];
    n = (size_t)(t->end - t->begin);
    if (n == 0)
        return QF_OK;
    if (st->buf) {
        memcpy(out, st->buf + st->data_start + t->begin, n);
        return QF_OK;
    }
    /* The file may have changed since it was opened: a short read is an
     * error, not zeros. */
    if (st->data_start + t->begin > (uint64_t)INT64_MAX ||
        fseeko(st->fp, (off_t)(st->data_start + t->begin), SEEK_SET) != 0 || fread(out, 1, n, st->fp) != n)
        return _qf_fail(err, err_size, QF_EIO, st->name,
                        "tensor '%s': data could not be read (truncated file?)",
                        printable(t->name, nm, sizeof nm));
    return QF_OK;
}

qf_status qf_safetensors_get_bits(const qf_safetensors *st, size_t i, uint64_t *out, char *err,
                                  size_t err_size)
{
    const qf_st_tensor *t;
    unsigned char *raw;
    size_t k, sz;
    int b;
    qf_status s;
    if (i >= st->ntensors)
        return qf_safetensors_get_bytes(st, i, NULL, err, err_size);
    t = &st->tensors[i];
    sz = dtypes[t->dtype].size;
    raw = malloc(t->count ? t->count * sz : 1);
    if (raw == NULL)
        return QF_ENOMEM;
    if ((s = qf_safetensors_get_bytes(st, i, raw, err, err_size)) == QF_OK)
        for (k = 0; k < t->count; k++) {
            uint64_t v = 0;
            for (b = (int)sz - 1; b >= 0; b--)
                v = v << 8 | raw[k * sz + (size_t)b];
            out[k] = v;
        }
    free(raw);
    return s;
}

qf_status qf_safetensors_get_f64(const qf_safetensors *st, size_t i, double *out, char *err, size_t err_size)
{
    const qf_st_tensor *t;
    uint64_t *bits;
    size_t k, sz;
    qf_status s;
    char nm[80];
    if (i >= st->ntensors)
        return qf_safetensors_get_bytes(st, i, NULL, err, err_size);
    t = &st->tensors[i];
    sz = dtypes[t->dtype].size;
    bits = malloc(t->count ? t->count * sizeof *bits : 1);
    if (bits == NULL)
        return QF_ENOMEM;
    if ((s = qf_safetensors_get_bits(st, i, bits, err, err_size)) != QF_OK)
        goto out;
    for (k = 0; k < t->count; k++) {
        uint64_t v = bits[k];
        const qf_format *f = qf_st_dtype_format(t->dtype);
        if (f) {
            out[k] = qf_format_decode(f, v);
        } else if (dtypes[t->dtype].kind == 'b') {
            out[k] = v != 0;
        } else if (dtypes[t->dtype].kind == 'u') {
            if (v > (1ull << 53)) {
                s = _qf_fail(err, err_size, QF_EINVAL, st->name,
                             "tensor '%s': element %zu = %llu is not exact in binary64",
                             printable(t->name, nm, sizeof nm), k, (unsigned long long)v);
                goto out;
            }
            out[k] = (double)v;
        } else {
            /* sign-extend from sz bytes */
            int64_t x;
            if (sz < 8 && (v >> (8 * sz - 1)) & 1)
                v |= ~0ull << (8 * sz);
            memcpy(&x, &v, sizeof x);
            if (x > (1ll << 53) || x < -(1ll << 53)) {
                s = _qf_fail(err, err_size, QF_EINVAL, st->name,
                             "tensor '%s': element %zu = %lld is not exact in binary64",
                             printable(t->name, nm, sizeof nm), k, (long long)x);
                goto out;
            }
            out[k] = (double)x;
        }
    }
out:
    free(bits);
    return s;
}

qf_status qf_safetensors_load_f64(const qf_safetensors *st, const char *name, double **values, size_t *count,
                                  const qf_format **fmt, char *err, size_t err_size)
{
    size_t i;
    qf_status s;
    *values = NULL;
    *count = 0;
    if ((s = qf_safetensors_find(st, name, &i, err, err_size)) != QF_OK)
        return s;
    *values = malloc(st->tensors[i].count ? st->tensors[i].count * sizeof **values : 1);
    if (*values == NULL)
        return QF_ENOMEM;
    if ((s = qf_safetensors_get_f64(st, i, *values, err, err_size)) != QF_OK) {
        free(*values);
        *values = NULL;
        return s;
    }
    *count = st->tensors[i].count;
    if (fmt)
        *fmt = qf_st_dtype_format(st->tensors[i].dtype);
    return QF_OK;
}

/* ---- Writing ------------------------------------------------------------ */

qf_status qf_safetensors_write_mem(const qf_st_write_tensor *t, size_t n, const char *const *meta_keys,
                                   const char *const *meta_values, size_t nmeta, unsigned char **out,
                                   size_t *out_len, char *err, size_t err_size)
{
    json_t *root = json_object(), *meta = NULL;
    char *hdr = NULL;
    size_t i, hlen, padded, total;
    uint64_t at = 0;
    int d;
    unsigned char *buf = NULL;
    qf_status s = QF_OK;
    *out = NULL;
    *out_len = 0;
    if (root == NULL)
        return QF_ENOMEM;
    if (nmeta) {
        meta = json_object();
        if (meta == NULL || json_object_set_new(root, "__metadata__", meta) != 0) {
            s = QF_ENOMEM;
            goto out;
        }
        for (i = 0; i < nmeta; i++)
            if (json_object_set_new(meta, meta_keys[i], json_string(meta_values[i])) != 0) {
                s = _qf_fail(err, err_size, QF_EINVAL, "safetensors writer",
                             "metadata key %zu is not valid UTF-8", i);
                goto out;
            }
    }
    for (i = 0; i < n; i++) {
        json_t *e, *shape;
        size_t count = 1;
        if ((unsigned)t[i].dtype >= QF_ST_DTYPE_COUNT || t[i].ndim < 0 || t[i].ndim > QF_ST_MAX_DIMS ||
            t[i].name == NULL || strcmp(t[i].name, "__metadata__") == 0 ||
            json_object_get(root, t[i].name) != NULL) {
            s = _qf_fail(err, err_size, QF_EINVAL, "safetensors writer",
                         "tensor %zu: bad or duplicate name, dtype or ndim", i);
            goto out;
        }
        for (d = 0; d < t[i].ndim; d++) {
            if (t[i].shape[d] != 0 && count > SIZE_MAX / t[i].shape[d]) {
                s = _qf_fail(err, err_size, QF_EINVAL, "safetensors writer", "tensor '%s': size overflows",
                             t[i].name);
                goto out;
            }
            count *= t[i].shape[d];
        }
        if (count > (SIZE_MAX - at) / dtypes[t[i].dtype].size) {
            s = _qf_fail(err, err_size, QF_EINVAL, "safetensors writer", "tensor '%s': size overflows",
                         t[i].name);
            goto out;
        }
        shape = json_array();
        e = json_object();
        if (!shape || !e) {
            json_decref(shape);
            json_decref(e);
            s = QF_ENOMEM;
            goto out;
        }
        for (d = 0; d < t[i].ndim; d++)
            json_array_append_new(shape, json_integer((json_int_t)t[i].shape[d]));
        json_object_set_new(e, "dtype", json_string(dtypes[t[i].dtype].name));
        json_object_set_new(e, "shape", shape);
        json_object_set_new(
            e, "data_offsets",
            json_pack("[II]", (json_int_t)at, (json_int_t)(at + count * dtypes[t[i].dtype].size)));
        if (json_object_set_new(root, t[i].name, e) != 0) {
            s = _qf_fail(err, err_size, QF_EINVAL, "safetensors writer",
                         "tensor %zu: name is not valid UTF-8", i);
            goto out;
        }
        at += count * dtypes[t[i].dtype].size;
    }
    hdr = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (hdr == NULL) {
        s = QF_ENOMEM;
        goto out;
    }
    hlen = strlen(hdr);
    /* The reference writer pads the header with spaces so that the data
     * start 8-byte aligned. */
    padded = (hlen + 7) / 8 * 8;
    total = 8 + padded + (size_t)at;
    buf = malloc(total ? total : 1);
    if (buf == NULL) {
        s = QF_ENOMEM;
        goto out;
    }
    for (d = 0; d < 8; d++)
        buf[d] = (unsigned char)((uint64_t)padded >> (8 * d));
    memcpy(buf + 8, hdr, hlen);
    memset(buf + 8 + hlen, ' ', padded - hlen);
    for (i = 0, at = 0; i < n; i++) {
        size_t count = 1, bytes;
        for (d = 0; d < t[i].ndim; d++)
            count *= t[i].shape[d];
        bytes = count * dtypes[t[i].dtype].size;
        if (bytes)
            memcpy(buf + 8 + padded + at, t[i].data, bytes);
        at += bytes;
    }
    *out = buf;
    *out_len = total;
    buf = NULL;
out:
    free(buf);
    free(hdr);
    json_decref(root);
    return s;
}

qf_status qf_safetensors_write(const char *path, const qf_st_write_tensor *t, size_t n,
                               const char *const *meta_keys, const char *const *meta_values, size_t nmeta,
                               char *err, size_t err_size)
{
    unsigned char *buf;
    size_t len;
    _qf_out o;
    qf_status s = qf_safetensors_write_mem(t, n, meta_keys, meta_values, nmeta, &buf, &len, err, err_size);
    if (s != QF_OK)
        return s;
    /* beside path, then renamed over it (_files.h) */
    if (!_qf_out_open(&o, path, 0, err, err_size)) {
        s = QF_EIO;
    } else if (fwrite(buf, 1, len, o.f) != len) {
        s = _qf_fail(err, err_size, QF_EIO, path, "write error: %s", strerror(errno));
        _qf_out_abort(&o);
    } else {
        s = _qf_out_commit(&o, err, err_size);
    }
    free(buf);
    return s;
}
