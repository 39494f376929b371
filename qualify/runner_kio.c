/* runner_kio.c: what the pair's process hands a kernel (_runner.h):
 * shared copies of the case's inputs, checked after the kernel ran ("input
 * a modified by the kernel"), the capture file of the kernel's standard
 * output and error, and the kernel child's entry, which drops everything
 * else of qualify's before any kernel code runs (docs/security.md). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "_isolate.h"
#include "_runner.h"
#include "_runner_device.h"
#include "_worker.h"
#include "qf_worker.h"

/* What the pair's process hands its kernel calls (one pair per process):
 * the inputs in one shared mapping per input tensor (data, then scale
 * codes, then zero points, each part at a 64-byte boundary as a kernel
 * may load a part in its element type: 3 bytes of int4 codes must not
 * leave the bfloat16 scales misaligned), copies of the case's, so that bytes a kernel
 * writes into them are seen here after it ran ("input a modified by the
 * kernel") while the reference keeps reading the case's own; and the
 * capture file of the kernel's standard output and error. */
static struct {
    qf_tensor in[QF_KERNEL_MAX_IN];
    unsigned char *map[QF_KERNEL_MAX_IN];
    size_t bytes[QF_KERNEL_MAX_IN];
    int ready, capfd;
} kio = {.capfd = -1};

static size_t scale_bytes(const qf_tensor_scale *s)
{
    const qf_format *f = s->data ? qf_format_get(s->format) : NULL;
    return f ? qf_format_array_bytes(f, s->count) : 0;
}

/* The input copies are read back once, by _qf_kio_check after the
 * kernel's run: released then, so that they are not resident beside the
 * reference and the metrics (docs/runner.md "Memory"); a later call (the
 * baseline's, the timing run) maps fresh copies (_qf_kio_restore). */
void _qf_kio_release_inputs(void)
{
    int i;
    for (i = 0; i < QF_KERNEL_MAX_IN; i++)
        if (kio.map[i])
            munmap(kio.map[i], kio.bytes[i]);
    memset(kio.map, 0, sizeof kio.map);
    memset(kio.bytes, 0, sizeof kio.bytes);
    if (kio.ready)
        kio.ready = 2; /* released: restored before the next call */
}

void _qf_kio_free(void)
{
    _qf_kio_release_inputs();
    memset(kio.in, 0, sizeof kio.in);
    kio.ready = 0;
    if (kio.capfd >= 0)
        close(kio.capfd);
    kio.capfd = -1;
}

/* The parts of t (data, scale codes, zero points: NULL where absent), their
 * sizes and offsets in its copy; returns the copy's size. */
static size_t parts_of(const qf_tensor *t, const unsigned char *part[3], size_t size[3], size_t off[3])
{
    size_t k, end = 0;
    part[0] = t->data;
    part[1] = t->scale.data;
    part[2] = (const void *)t->scale.zero_point;
    size[0] = t->bytes;
    size[1] = scale_bytes(&t->scale);
    size[2] = t->scale.zero_point ? t->scale.count * sizeof(int16_t) : 0;
    for (k = 0; k < 3; k++) {
        if (!part[k])
            size[k] = 0;
        off[k] = (end + 63) & ~(size_t)63;
        end = off[k] + size[k];
    }
    return end;
}

static int map_inputs(const _qf_case *p)
{
    int i;
    for (i = 0; i < QF_KERNEL_MAX_IN; i++) {
        const qf_tensor *t = &p->in[i];
        const unsigned char *part[3];
        size_t size[3], off[3];
        unsigned char *m;
        kio.in[i] = *t;
        if (!t->data)
            continue;
        kio.bytes[i] = parts_of(t, part, size, off);
        if (!(m = kio.map[i] = _qf_rp_shm_alloc(kio.bytes[i])))
            return -1;
        memcpy(m, t->data, t->bytes);
        kio.in[i].data = m;
        if (size[1]) {
            memcpy(m + off[1], part[1], size[1]);
            kio.in[i].scale.data = m + off[1];
        }
        if (size[2]) {
            memcpy(m + off[2], part[2], size[2]);
            kio.in[i].scale.zero_point = (void *)(m + off[2]);
        }
    }
    kio.ready = 1;
    return 0;
}

int _qf_kio_setup(const _qf_case *p)
{
    _qf_kio_free();
    kio.capfd = _qf_iso_capture_open();
    return map_inputs(p);
}

int _qf_kio_restore(const _qf_case *p)
{
    return kio.ready == 2 ? map_inputs(p) : 0;
}

int _qf_kio_check(const _qf_case *p, qf_result *r, const char *who)
{
    int i;
    for (i = 0; i < QF_KERNEL_MAX_IN; i++) {
        const qf_tensor *t = &p->in[i];
        const unsigned char *part[3];
        size_t size[3], off[3], k, b, nbad = 0, first = 0, kfirst = 0;
        static const char *const where[3] = {"", ", in its scales", ", in its zero points"};
        if (!kio.map[i])
            continue;
        parts_of(t, part, size, off);
        for (k = 0; k < 3; k++)
            for (b = 0; b < size[k]; b++)
                if (kio.map[i][off[k] + b] != part[k][b] && nbad++ == 0) {
                    first = b;
                    kfirst = k;
                }
        if (nbad)
            return _qf_say(r, QF_VERDICT_FAILED,
                           "input %s modified by %s: %zu byte(s) differ from what it was given (first at byte %zu%s)",
                           qf_op_slot_name(p->op.op, 0, i), who, nbad, first, where[kfirst]),
                   -1;
    }
    return 0;
}

/* The kernel child, before any kernel code: a session of its own, its
 * standard output and error into the pair's capture file, and nothing
 * else of qualify's: no descriptor beyond 0-2, no shared mapping but its
 * report, its outputs and its inputs (not the records of other pairs, not
 * the worker slots' state), and the kernel limits (docs/security.md). */
void _qf_kio_child_enter(const _qf_case *p, void *rep, size_t rep_bytes)
{
    void *keep[4 + 2 * QF_KERNEL_MAX_IN];
    size_t len[4 + 2 * QF_KERNEL_MAX_IN], n = 0;
    int i, nul, capfd = kio.capfd;
    _qf_iso_own_session();
    nul = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (nul >= 0)
        dup2(nul, 0);
    if (capfd >= 0 || nul >= 0) {
        dup2(capfd >= 0 ? capfd : nul, 1);
        dup2(capfd >= 0 ? capfd : nul, 2);
    }
    _qf_iso_close_fds(NULL, 0);
    keep[n] = rep;
    len[n++] = rep_bytes;
    for (i = 0; i < 2; i++) {
        keep[n] = p->g[i].map;
        len[n++] = p->g[i].map_bytes;
        keep[n] = p->g1[i].map;
        len[n++] = p->g1[i].map_bytes;
    }
    for (i = 0; i < QF_KERNEL_MAX_IN; i++) {
        keep[n] = kio.map[i];
        len[n++] = kio.bytes[i];
    }
    _qf_iso_unmap_shared(keep, len, n);
    _qf_iso_apply_limits(_qf_rdev_is_device(p->k));
}

const qf_tensor *_qf_kio_inputs(const _qf_case *p)
{
    return kio.ready ? kio.in : p->in;
}

void _qf_kio_take_output(const _qf_case *p, qf_result *r)
{
    /* A worker or kernel server sent it in its done lines; a kernel child
     * wrote it into the capture file. */
    if (qf_worker_kernel_is(p->k))
        _qf_worker_take_output(r->kernel_output, sizeof r->kernel_output, &r->kernel_output_bytes);
    else
        _qf_iso_capture_take(kio.capfd, r->kernel_output, sizeof r->kernel_output, &r->kernel_output_bytes);
}
