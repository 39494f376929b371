/* runner_devices.c: `qualify run --devices` (_runner_devices.h says what
 * each function does; docs/runner.md "Devices").
 *
 * Why the fault is charged only after the second attempt: a kernel that
 * crashes, hangs or reports a lost device by itself would otherwise take
 * every device out, one by one.  Run once more elsewhere, a kernel's own
 * fault repeats and is its verdict (as with one device), while a device's
 * fault does not.  Verdicts and figures are those of a clean attempt, so
 * they do not depend on how many devices ran the sweep.
 */
#define _GNU_SOURCE

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "_escape.h"
#include "_runner_device.h"
#include "_runner_devices.h"
#include "_status.h"
#include "_worker.h"

#define errf(err, size, ...) ((void)_qf_fail(err, size, QF_OK, NULL, __VA_ARGS__))

enum { F_NONE, F_CRASH, F_TIMEOUT, F_LOST };

int qf_runner_parse_devices(const char *s, int *idx, size_t max, size_t *n, int *all, char *err,
                            size_t err_size)
{
    const char *p = s;
    *n = 0;
    *all = 0;
    if (!s || !*s) {
        errf(err, err_size, "--devices: 'all' or device indices such as 0,1,3 expected");
        return -1;
    }
    if (!strcmp(s, "all")) {
        *all = 1;
        return 0;
    }
    while (*p) {
        char *end;
        long v;
        size_t i;
        if (*p < '0' || *p > '9' || (v = strtol(p, &end, 10)) >= QF_RUNNER_DEVICES_MAX ||
            (*end && *end != ',') || (*end == ',' && !end[1])) {
            errf(err, err_size, "--devices '%s': 'all' or device indices 0 to %d separated by commas expected",
                 s, QF_RUNNER_DEVICES_MAX - 1);
            return -1;
        }
        for (i = 0; i < *n; i++)
            if (idx[i] == (int)v) {
                errf(err, err_size, "--devices '%s': device %ld is listed twice", s, v);
                return -1;
            }
        if (*n == max) {
            errf(err, err_size, "--devices '%s': more than %zu devices", s, max);
            return -1;
        }
        idx[(*n)++] = (int)v;
        p = *end ? end + 1 : end;
    }
    return 0;
}

/* The listed devices, checked against the n the probe found. */
static qf_status list_devices(_qf_rdevs *d, const char *devices, int found, char *err, size_t err_size)
{
    int idx[QF_RUNNER_DEVICES_MAX], all;
    size_t n, i;
    if (qf_runner_parse_devices(devices, idx, QF_RUNNER_DEVICES_MAX, &n, &all, err, err_size))
        return QF_EINVAL;
    if (all)
        for (n = 0; n < (size_t)found && n < QF_RUNNER_DEVICES_MAX; n++)
            idx[n] = (int)n;
    for (i = 0; i < n; i++) {
        const _qf_rdev_info *info = _qf_rdev_info_of(d->backend, idx[i]);
        if (idx[i] >= found || !info) {
            errf(err, err_size, "--devices %s: there is no %s device %d (devices 0 to %d exist)", devices,
                 d->backend, idx[i], found - 1);
            return QF_EINVAL;
        }
        d->dev[i].index = idx[i];
        snprintf(d->dev[i].uuid, sizeof d->dev[i].uuid, "%s", info->uuid);
        snprintf(d->dev[i].name, sizeof d->dev[i].name, "%s", info->name);
    }
    d->n = n;
    return QF_OK;
}

qf_status _qf_rdevs_init(_qf_rdevs *d, const char *devices, int *jobs, size_t npairs, char *err,
                         size_t err_size)
{
    qf_status st;
    size_t i;
    memset(d, 0, sizeof *d);
    d->backend = _qf_rdev_backend();
    /* No device: GPU kernels are UNSUPPORTED with the probe's reason. */
    if (!devices || !d->backend || _qf_rdev_count(d->backend) < 1)
        return QF_OK;
    if ((st = list_devices(d, devices, _qf_rdev_count(d->backend), err, err_size)) != QF_OK)
        return st;
    if (*jobs < (int)d->n)
        *jobs = (int)d->n;
    d->jobs = (size_t)*jobs;
    d->slot_dev = malloc(d->jobs * sizeof *d->slot_dev);
    d->tries = calloc(npairs ? npairs : 1, 1);
    d->kind = calloc(npairs ? npairs : 1, 1);
    d->suspect = malloc((npairs ? npairs : 1) * sizeof *d->suspect);
    d->queue = malloc((npairs ? npairs : 1) * sizeof *d->queue);
    if (!d->slot_dev || !d->tries || !d->kind || !d->suspect || !d->queue) {
        _qf_rdevs_free(d);
        return QF_ENOMEM;
    }
    for (i = 0; i < d->jobs; i++)
        d->slot_dev[i] = -1;
    for (i = 0; i < npairs; i++)
        d->suspect[i] = -1;
    d->on = 1;
    return QF_OK;
}

void _qf_rdevs_free(_qf_rdevs *d)
{
    free(d->slot_dev);
    free(d->tries);
    free(d->kind);
    free(d->suspect);
    free(d->queue);
    d->slot_dev = d->suspect = NULL;
    d->tries = d->kind = NULL;
    d->queue = NULL;
    d->on = 0;
}

static size_t in_rotation(const _qf_rdevs *d)
{
    size_t i, n = 0;
    for (i = 0; i < d->n; i++)
        n += !d->dev[i].out;
    return n;
}

/* The position slot runs on now: its own (slot mod n) while that is in
 * the rotation, so that healthy slots keep their servers; else the
 * (slot mod k)-th of the k left. */
static int want(const _qf_rdevs *d, size_t slot)
{
    size_t own = slot % d->n, k = in_rotation(d), pick, i;
    if (!d->dev[own].out || k == 0)
        return (int)own;
    pick = slot % k;
    for (i = 0; i < d->n; i++)
        if (!d->dev[i].out && pick-- == 0)
            return (int)i;
    return (int)own;
}

int _qf_rdevs_waiting(const _qf_rdevs *d)
{
    return d->on && d->nqueue > 0;
}

size_t _qf_rdevs_pick(_qf_rdevs *d, size_t slot, const size_t *pending, size_t *next, size_t npending)
{
    size_t i;
    if (d->on) {
        int w = want(d, slot);
        /* Another device for a pair that faulted, unless none is left. */
        for (i = 0; i < d->nqueue; i++) {
            size_t it = d->queue[i];
            if (d->suspect[it] != w || in_rotation(d) < 2) {
                memmove(&d->queue[i], &d->queue[i + 1], (d->nqueue - i - 1) * sizeof *d->queue);
                d->nqueue--;
                return it;
            }
        }
    }
    return *next < npending ? pending[(*next)++] : (size_t)-1;
}

void _qf_rdevs_bind(_qf_rdevs *d, size_t slot)
{
    int w;
    if (!d->on)
        return;
    w = want(d, slot);
    if (d->slot_dev[slot] >= 0 && d->slot_dev[slot] != w)
        _qf_worker_slot_stop((int)slot); /* its context is on the old device */
    d->slot_dev[slot] = w;
    _qf_rdev_use(d->dev[w].index);
}

/* How the attempt ended for the device: its server or child died, it
 * timed out, or the kernel call returned QF_EDEVICE (the device is gone:
 * qf_backend.h).  Read from the record's cause (qf_cause), which no
 * message of the kernel can set. */
static int fault_of(const qf_result *r)
{
    switch (r->cause) { /* the cause, never the reason: it may quote the kernel */
    case QF_CAUSE_CRASH: return F_CRASH;
    case QF_CAUSE_TIMEOUT: return F_TIMEOUT;
    case QF_CAUSE_DEVICE_LOST: return F_LOST;
    default: return F_NONE;
    }
}

static void stamp(const char *backend, int index, qf_result *r)
{
    const _qf_rdev_info *info = _qf_rdev_info_of(backend, index);
    if (!info)
        return;
    r->device_index = index;
    snprintf(r->device_uuid, sizeof r->device_uuid, "%s", info->uuid);
    snprintf(r->device_name, sizeof r->device_name, "%s", info->name);
}

/* "UUID, NAME) taken out of the rotation: WHY" after "device I (", the
 * back end's and the kernel's words escaped for the terminal. */
static void say_device(const qf_runner_device *v, const char *what)
{
    _qf_esc_term(stderr, v->uuid);
    fputs(", ", stderr);
    _qf_esc_term(stderr, v->name);
    fputs(v->out ? ") taken out of the rotation: " : ") ", stderr);
    _qf_esc_term(stderr, what);
    fputc('\n', stderr);
}

/* The clean second attempt of a pair that faulted on position s: charge s. */
static void charge(_qf_rdevs *d, int s, int kind, const qf_result *r)
{
    qf_runner_device *v = &d->dev[s];
    if (v->out)
        return;
    if (kind == F_TIMEOUT && ++d->timeouts[s] < 2)
        return;
    if (in_rotation(d) < 2) {
        fprintf(stderr, "qualify: device %d (", v->index);
        say_device(v, "faulted but is the last one in the rotation; it stays");
        return;
    }
    v->out = 1;
    snprintf(v->why, sizeof v->why, "%s on %.96s %.96s, clean on another device",
             kind == F_LOST ? "device lost" : kind == F_CRASH ? "crash" : "second timeout", r->kernel, r->case_id);
    fprintf(stderr, "qualify: device %d (", v->index);
    say_device(v, v->why);
}

int _qf_rdevs_after(_qf_rdevs *d, size_t slot, size_t item, const char *backend, qf_result *r)
{
    int pos, kind;
    if (!backend)
        return 0;
    if (!d->on) {
        if (r->verdict != QF_VERDICT_UNSUPPORTED)
            stamp(backend, _qf_rdev_current(), r);
        return 0;
    }
    pos = d->slot_dev[slot];
    if (r->verdict != QF_VERDICT_UNSUPPORTED || fault_of(r))
        stamp(backend, d->dev[pos].index, r);
    kind = fault_of(r);
    if (d->suspect[item] >= 0) { /* the second attempt */
        if (kind == F_NONE)
            charge(d, d->suspect[item], d->kind[item], r);
        d->dev[pos].pairs++;
        return 0;
    }
    if (kind == F_NONE || d->tries[item] || in_rotation(d) < 2) {
        d->dev[pos].pairs++;
        return 0;
    }
    d->tries[item] = 1;
    d->suspect[item] = pos;
    d->kind[item] = (unsigned char)kind;
    d->queue[d->nqueue++] = item;
    d->dev[pos].faults++;
    d->retries++;
    /* The names and the reason come from plugins and kernels: escaped
     * for the terminal (docs/security.md). */
    fputs("qualify: ", stderr);
    _qf_esc_term(stderr, r->kernel);
    fputc(' ', stderr);
    _qf_esc_term(stderr, r->case_id);
    fprintf(stderr, " faulted on device %d: ", d->dev[pos].index);
    _qf_esc_term(stderr, r->reason);
    fputs("; run again on another device\n", stderr);
    /* A fresh server for the slot's next pair: one that said the device
     * is lost still holds a context on it. */
    _qf_worker_slot_stop((int)slot);
    d->slot_dev[slot] = -1;
    return 1;
}

void _qf_rdevs_summary(const _qf_rdevs *d, qf_runner_summary *sum)
{
    size_t i;
    if (!d->on)
        return;
    sum->ndevices = d->n;
    for (i = 0; i < d->n; i++)
        sum->devices[i] = d->dev[i];
    sum->device_retries = d->retries;
}
