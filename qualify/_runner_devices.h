/* _runner_devices.h: `qualify run --devices`, the sweep's side (private;
 * qualify/runner_devices.c, docs/runner.md "Devices").
 *
 * Every job slot is bound to one listed device: its kernel server (or,
 * with --isolate pair, its kernel children) opens that device.  A GPU
 * pair whose attempt faults on a device (its kernel server or child died,
 * it timed out, or the back end said the device is lost) is run once more
 * on another device; when that attempt is clean, the fault was the
 * device's: a crash or a lost device takes it out of the rotation at
 * once, a timeout at its second.  When the second attempt faults too, the
 * kernel is at fault and its record is the second attempt's.  The
 * parent's bookkeeping only: nothing here touches a driver.
 */
#ifndef QF__RUNNER_DEVICES_H
#define QF__RUNNER_DEVICES_H

#include <stddef.h>

#include "qf_result.h"
#include "qf_runner.h"

typedef struct _qf_rdevs {
    int on;            /* --devices given and a device of the back end found */
    const char *backend;
    size_t n;          /* listed devices */
    qf_runner_device dev[QF_RUNNER_DEVICES_MAX];
    int timeouts[QF_RUNNER_DEVICES_MAX]; /* charged timeouts */
    size_t jobs;
    int *slot_dev;     /* [jobs]: the position a slot's server runs on, -1: none yet */
    /* Per pair: attempts so far, and the position and kind of its faulted
     * first attempt (-1: none). */
    unsigned char *tries;
    int *suspect;
    unsigned char *kind;
    size_t *queue;     /* pairs waiting to be run again */
    size_t nqueue;
    size_t retries;
} _qf_rdevs;

/* After the probe (which _qf_rdev_enumerate(1) made name every device):
 * check opts->devices against the devices found and raise *jobs to their
 * count.  No --devices, or no device found: d->on stays 0 and nothing
 * changes.  QF_EINVAL with the reason in err for an index that does not
 * exist; QF_ENOMEM. */
qf_status _qf_rdevs_init(_qf_rdevs *d, const char *devices, int *jobs, size_t npairs, char *err,
                         size_t err_size);
void _qf_rdevs_free(_qf_rdevs *d);

/* 1 while a pair waits to be run again. */
int _qf_rdevs_waiting(const _qf_rdevs *d);
/* The pair slot `slot` should start: one waiting to be run again that
 * may run on the slot's device, else pending[*next] (advancing *next);
 * (size_t)-1 for none. */
size_t _qf_rdevs_pick(_qf_rdevs *d, size_t slot, const size_t *pending, size_t *next, size_t npending);
/* Right before slot's pair forks: bind the slot to a device in the
 * rotation (stopping its server when that changes) for what it starts. */
void _qf_rdevs_bind(_qf_rdevs *d, size_t slot);
/* The pair `item` of slot finished with record r (backend: its GPU
 * kernel's back end, NULL for a CPU pair): stamp the device into r, and 1 when the pair is to run again
 * (r is then neither journaled nor counted), else 0. */
int _qf_rdevs_after(_qf_rdevs *d, size_t slot, size_t item, const char *backend, qf_result *r);
/* The devices, their counts and events into the summary. */
void _qf_rdevs_summary(const _qf_rdevs *d, qf_runner_summary *sum);

#endif
