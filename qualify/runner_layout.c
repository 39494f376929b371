/* runner_layout.c: operand layouts (docs/runner.md "Operand layouts"):
 * the strides of the op's matrix tensors under the case's layout, inputs
 * copied into strided buffers whose gaps hold a poison code, and, after a
 * run, the gap check and gather of output 0 (_runner.h).
 *
 * The op classes draw dense row-major tensors as always; only here do they
 * become strided, so every op class and reference keeps reading dense data
 * and a dense case never passes through this file (bit-identical results).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "_runner.h"

const qf_suite_layout *_qf_layout_of(const _qf_case *p)
{
    const qf_suite_layout *L = p->c ? p->c->layout : NULL;
    return L && L->needs ? L : NULL;
}

/* The strides of t (ndim 2 or 3, shape set) under L, and the elements its
 * allocation spans; -1 for another rank.  Row-major: ld = cols + pad
 * between rows; column-major: stride 1 down a column, ld = rows + pad
 * between columns (the BLAS's lda >= rows); one matrix is ld x its other
 * extent, and batch entries are that plus batch_pad apart. */
static int strides_of(const qf_suite_layout *L, qf_tensor *t, size_t *span)
{
    int nd = t->ndim;
    int64_t R, C, ld, mat;
    if (nd != 2 && nd != 3)
        return -1;
    R = t->shape[nd - 2] > 0 ? t->shape[nd - 2] : 1;
    C = t->shape[nd - 1] > 0 ? t->shape[nd - 1] : 1;
    ld = (L->col ? R : C) + (int64_t)L->ld_pad;
    mat = ld * (L->col ? C : R);
    t->stride[nd - 2] = L->col ? 1 : ld;
    t->stride[nd - 1] = L->col ? ld : 1;
    if (nd == 3)
        t->stride[0] = mat + (int64_t)L->batch_pad;
    *span = (size_t)((nd == 3 && t->shape[0] > 1 ? (t->shape[0] - 1) * t->stride[0] : 0) + mat);
    return 0;
}

/* Element offset of logical (row-major) index i of t. */
static size_t offset_of(const qf_tensor *t, size_t i)
{
    size_t o = 0;
    int d;
    for (d = t->ndim - 1; d >= 0; d--) {
        size_t ext = t->shape[d] > 0 ? (size_t)t->shape[d] : 1;
        o += (i % ext) * (size_t)t->stride[d];
        i /= ext;
    }
    return o;
}

static void store_code(unsigned char *q, int eb, uint64_t code)
{
    uint8_t u8 = (uint8_t)code;
    uint16_t u16 = (uint16_t)code;
    uint32_t u32 = (uint32_t)code;
    switch (eb) {
    case 1: memcpy(q, &u8, 1); break;
    case 2: memcpy(q, &u16, 2); break;
    case 4: memcpy(q, &u32, 4); break;
    default: memcpy(q, &code, 8); break;
    }
}

/* The code an input's gaps hold: a NaN where the format has one (a kernel
 * that reads it gets NaN, FAILED against a finite reference), else the
 * largest finite code (integers, MX FP4/FP6: a large wrong term). */
static uint64_t gap_code(const qf_format *f)
{
    return f->nan != QF_NAN_NONE ? qf_format_encode(f, NAN, QF_ROUND_RNE, 0, 0, 0) : qf_format_max_code(f, 0);
}

/* An element size the layout can move, or 0 (packed, index or sub-byte). */
static int elem_bytes(const qf_tensor *t)
{
    const qf_format *f = qf_format_get(t->format);
    if (t->packed || t->index_bits || !f || f->storage_bits % 8)
        return 0;
    return f->storage_bits / 8;
}

int _qf_layout_inputs(_qf_case *p, qf_result *r)
{
    const qf_suite_layout *L = _qf_layout_of(p);
    int i;
    if (!L)
        return 0;
    for (i = 0; i < p->nin; i++) {
        qf_tensor *t = &p->in[i];
        const unsigned char *src = t->data;
        unsigned char *buf;
        size_t span, n, j, e;
        uint64_t code;
        int eb;
        if (!(p->cls->layout_in & (1u << i)) || !src)
            continue;
        eb = elem_bytes(t);
        n = qf_tensor_numel(t);
        if (!eb || strides_of(L, t, &span)) {
            _qf_say(r, QF_CAUSE_UNSUPPORTED,
                    "unsupported: layout %s: input %s is packed, sub-byte or not a matrix (dense only)",
                    L->label, qf_op_slot_name(p->op.op, 0, i));
            return -1;
        }
        buf = malloc(span * (size_t)eb + 8);
        if (!buf) {
            _qf_say(r, QF_CAUSE_HARNESS, "out of memory laying out input %s",
                    qf_op_slot_name(p->op.op, 0, i));
            return -1;
        }
        code = gap_code(qf_format_get(t->format));
        for (e = 0; e < span; e++)
            store_code(buf + e * (size_t)eb, eb, code);
        for (j = 0; j < n; j++)
            memcpy(buf + offset_of(t, j) * (size_t)eb, src + j * (size_t)eb, (size_t)eb);
        p->instrided[i] = buf;
        t->data = buf;
        t->bytes = span * (size_t)eb;
    }
    return 0;
}

int _qf_layout_output(_qf_case *p, qf_result *r)
{
    const qf_suite_layout *L = _qf_layout_of(p);
    size_t span;
    int eb = p->outf->storage_bits / 8;
    p->out_bytes = qf_format_array_bytes(p->outf, p->out_n);
    if (!L)
        return 0;
    if (!elem_bytes(&p->out[0]) || strides_of(L, &p->out[0], &span)) {
        _qf_say(r, QF_CAUSE_UNSUPPORTED, "unsupported: layout %s: output %s is not a matrix (dense only)",
                L->label, qf_op_slot_name(p->op.op, 1, 0));
        return -1;
    }
    p->out_bytes = span * (size_t)eb;
    return 0;
}

/* Where gap element o of output t lies, in words. */
static void describe_gap(const qf_suite_layout *L, const qf_tensor *t, size_t o, char *buf, size_t size)
{
    int nd = t->ndim;
    int64_t R = t->shape[nd - 2], C = t->shape[nd - 1], ld = L->col ? t->stride[nd - 1] : t->stride[nd - 2];
    int64_t mat = ld * (L->col ? C : R), rem = (int64_t)o, b = 0;
    char bt[48] = "";
    if (nd == 3) {
        b = rem / t->stride[0];
        rem %= t->stride[0];
        snprintf(bt, sizeof bt, "batch entry %lld, ", (long long)b);
    }
    if (rem >= mat)
        snprintf(buf, size, "in the gap after batch entry %lld (element %lld of %u; batch stride %lld)",
                 (long long)b, (long long)(rem - mat), L->batch_pad, (long long)t->stride[0]);
    else if (!L->col)
        snprintf(buf, size, "at %srow %lld, col %lld (ld %lld, %lld columns)", bt, (long long)(rem / ld),
                 (long long)(rem % ld), (long long)ld, (long long)C);
    else
        snprintf(buf, size, "at %srow %lld, col %lld (column-major, ld %lld, %lld rows)", bt,
                 (long long)(rem % ld), (long long)(rem / ld), (long long)ld, (long long)R);
}

int _qf_layout_gather(const _qf_case *p, _qf_guarded *g, unsigned char fill, char *why, size_t why_size)
{
    const qf_suite_layout *L = _qf_layout_of(p);
    const qf_tensor *t = &p->out[0];
    size_t span, n = p->out_n, j, e, written = 0, first = 0;
    int eb = p->outf->storage_bits / 8, b;
    unsigned char *mark, *dense;
    qf_tensor tt = *t;
    if (!L)
        return 0;
    strides_of(L, &tt, &span);
    mark = calloc(span ? span : 1, 1);
    dense = malloc(n * (size_t)eb + 1);
    if (!mark || !dense) {
        free(mark);
        free(dense);
        snprintf(why, why_size, "out of memory checking the padding of output %s", qf_op_slot_name(p->op.op, 1, 0));
        return -1;
    }
    for (j = 0; j < n; j++) {
        size_t o = offset_of(t, j);
        mark[o] = 1;
        memcpy(dense + j * (size_t)eb, g->data + o * (size_t)eb, (size_t)eb);
    }
    for (e = 0; e < span; e++) {
        if (mark[e])
            continue;
        for (b = 0; b < eb; b++)
            if (g->data[e * (size_t)eb + (size_t)b] != fill) {
                if (written++ == 0)
                    first = e;
                break;
            }
    }
    free(mark);
    if (written) {
        char at[160];
        describe_gap(L, t, first, at, sizeof at);
        snprintf(why, why_size, "padding: output %s written into its padding %s; %zu padding element(s) written",
                 qf_op_slot_name(p->op.op, 1, 0), at, written);
        free(dense);
        return -1;
    }
    memcpy(g->data, dense, n * (size_t)eb);
    free(dense);
    return 0;
}
