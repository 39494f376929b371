/* worker_held.c: a worker's outputs as they were when it said done
 * (_worker.h; docs/security.md "Outputs as they were").
 *
 * A worker or kernel server writes its outputs into shared memory that
 * it keeps mapped after its done: what it writes afterwards must not be
 * what is judged, and a change at all is a defect (a hostile worker
 * fixing its outputs after done, or the real bug class of a GPU kernel
 * returning before its stream finished).  The host copies the outputs
 * out at done (the snapshot that is judged) and keeps the mapping with a
 * keyed hash of each output region; before the memory is reused (the
 * slot's next run) and when the runner asks (_qf_worker_recheck, after
 * the pair's reference and metrics), the regions are hashed again.  The
 * key is random per process and never leaves it, so a worker cannot
 * make a changed region hash the same. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "_worker.h"

#define HELD_MAX 4
#define HELD_REGIONS 16

typedef struct held {
    unsigned char *base;
    size_t total;
    const instance *in; /* whose memfd this is (its pages are given back at release) */
    int mem;            /* that memfd when the run used it, else -1 */
    const qf_kernel *k;
    size_t n;
    struct {
        size_t off, bytes;
        uint64_t h;
        char name[16];
    } r[HELD_REGIONS];
} held;

static held H[HELD_MAX];
static size_t nheld;
static uint64_t key[2];
static const qf_kernel *changed_k;
static char changed[256];

static uint64_t mix(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static uint64_t hash(const unsigned char *p, size_t n)
{
    uint64_t h = key[0] ^ n, w;
    size_t i;
    for (i = 0; i + 8 <= n; i += 8) {
        memcpy(&w, p + i, 8);
        h = mix(h ^ w ^ key[1]);
    }
    w = 0;
    memcpy(&w, p + i, n - i);
    return mix(h ^ w ^ key[1]);
}

static void keys(void)
{
    if (key[0] | key[1])
        return;
    if (getrandom(key, sizeof key, 0) != (ssize_t)sizeof key) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        key[0] = mix((uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32));
        key[1] = mix(key[0] ^ (uint64_t)(uintptr_t)&ts);
    }
    key[0] |= 1;
}

void _qf_wheld_add(const instance *in, int mem, const qf_kernel *k, unsigned char *base, size_t total,
                   const size_t *off, const size_t *bytes, const char *const *names, size_t n)
{
    held *h;
    size_t i;
    keys();
    if (nheld == HELD_MAX)
        _qf_wheld_check_release();
    h = &H[nheld++];
    memset(h, 0, sizeof *h);
    h->base = base;
    h->total = total;
    h->in = in;
    h->mem = mem;
    h->k = k;
    for (i = 0; i < n && i < HELD_REGIONS; i++) {
        h->r[i].off = off[i];
        h->r[i].bytes = bytes[i];
        h->r[i].h = hash(base + off[i], bytes[i]);
        snprintf(h->r[i].name, sizeof h->r[i].name, "%s", names[i] ? names[i] : "?");
    }
    h->n = i;
}

void _qf_wheld_check_release(void)
{
    size_t j, i;
    for (j = 0; j < nheld; j++) {
        held *h = &H[j];
        for (i = 0; i < h->n; i++)
            if (hash(h->base + h->r[i].off, h->r[i].bytes) != h->r[i].h && !changed_k) {
                changed_k = h->k;
                snprintf(changed, sizeof changed,
                         "outputs changed after the kernel returned: output %s (%zu bytes) differs from what "
                         "it was when the worker said done",
                         h->r[i].name, h->r[i].bytes);
            }
        munmap(h->base, h->total);
        if (h->mem >= 0 && h->in->mem == h->mem) /* its pages back */
            (void)!ftruncate(h->mem, 0);
    }
    nheld = 0;
}

int _qf_worker_recheck(const qf_kernel *k, char *msg, size_t size)
{
    int hit;
    _qf_wheld_check_release();
    hit = changed_k && changed_k == k;
    if (hit)
        snprintf(msg, size, "%s", changed);
    if (hit || changed_k)
        changed_k = NULL;
    return hit;
}
