/* runner_proc.c: the runner's process and memory plumbing (_runner.h):
 * a monotonic clock, shared memory, canary-guarded output buffers, and
 * waiting for children without polling where Linux allows it. */
#define _GNU_SOURCE
#include <poll.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/syscall.h>
#endif

#include "_runner.h"

#define CANARY_BYTES 4096
#define CANARY_BYTE  0xCD

double _qf_rp_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- Shared memory ------------------------------------------------------- */

void *_qf_rp_shm_alloc(size_t bytes)
{
    void *p = mmap(NULL, bytes ? bytes : 1, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

int _qf_rp_guarded_alloc(_qf_guarded *g, size_t bytes, unsigned char fill)
{
    size_t pg = CANARY_BYTES, body = (bytes + pg - 1) / pg * pg;
    g->bytes = bytes;
    g->map_bytes = pg + body + pg;
    g->map = _qf_rp_shm_alloc(g->map_bytes);
    if (!g->map)
        return -1;
    memset(g->map, CANARY_BYTE, g->map_bytes);
    g->data = g->map + pg;
    memset(g->data, fill, bytes);
    return 0;
}

void _qf_rp_guarded_free(_qf_guarded *g)
{
    if (g->map)
        munmap(g->map, g->map_bytes);
    g->map = NULL;
}

/* Offset of the first clobbered canary byte: < 0 before the data, > 0 past
 * its end (1-based), 0 when intact. */
long _qf_rp_guarded_check(const _qf_guarded *g)
{
    size_t i;
    for (i = 0; i < CANARY_BYTES; i++)
        if (g->map[i] != CANARY_BYTE)
            return -(long)(CANARY_BYTES - i);
    for (i = CANARY_BYTES + g->bytes; i < g->map_bytes; i++)
        if (g->map[i] != CANARY_BYTE)
            return (long)(i - CANARY_BYTES - g->bytes) + 1;
    return 0;
}

/* A descriptor that becomes readable when the child pid exits, so that a
 * wait can block in poll() and wake at once instead of napping (each nap
 * costs a tiny pair up to its length); -1 where there is none (not Linux,
 * a kernel before 5.3, out of descriptors), and callers then nap. */
int _qf_rp_child_fd(pid_t pid)
{
#if defined(__linux__) && defined(SYS_pidfd_open)
    return (int)syscall(SYS_pidfd_open, pid, 0);
#else
    (void)pid;
    return -1;
#endif
}

/* Block until one of the n child descriptors (-1 entries skipped) is
 * readable or timeout_s passes; with no descriptor at all, nap *nap
 * seconds instead and double it up to cap.  Either way the caller then
 * polls waitpid(WNOHANG), so a spurious wake-up is harmless. */
void _qf_rp_wait_children(const int *fds, size_t n, double timeout_s, double *nap, double cap)
{
    struct pollfd pf[64];
    size_t i, m = 0;
    for (i = 0; i < n; i++)
        if (fds[i] >= 0) {
            if (m == sizeof pf / sizeof pf[0]) {
                m = 0; /* more children than fit: nap, missing none */
                break;
            }
            pf[m].fd = fds[i];
            pf[m].events = POLLIN;
            pf[m].revents = 0;
            m++;
        }
    if (m) {
        /* Round up (waking early would only loop once more); at most a
         * second, so that a lost wake-up costs no more than that. */
        double ms = timeout_s * 1000 + 1;
        poll(pf, (nfds_t)m, ms > 1000 ? 1000 : ms < 0 ? 0 : (int)ms);
        return;
    }
    {
        double d = *nap < timeout_s ? *nap : timeout_s > 0 ? timeout_s : 0;
        struct timespec ts = {(time_t)d, (long)((d - (double)(time_t)d) * 1e9)};
        nanosleep(&ts, NULL);
        if (*nap < cap)
            *nap *= 2;
    }
}
