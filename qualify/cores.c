/* cores.c: how many cores this process may use (qf_usable_cores,
 * qf_runner.h): the default of `qualify run --jobs` (docs/cli.md).
 *
 * The CPUs of the affinity mask (sched_getaffinity(2): what taskset,
 * numactl or a container's cpuset leave), further limited by a CPU
 * bandwidth quota of the process's cgroup, rounded up: cgroup v2's
 * cpu.max ("QUOTA PERIOD" or "max PERIOD", the smallest over the cgroup
 * and its ancestors) or cgroup v1's cpu.cfs_quota_us / cpu.cfs_period_us
 * (-1: no quota).  The kernel's cgroup documentation (cgroup-v2.rst "cpu",
 * sched-bwc.rst) defines both.  At least 1.
 */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */

#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qf_runner.h"

/* ceil(quota / period) from two numbers; 0 when there is no quota. */
static long quota_cores(long long quota, long long period)
{
    if (quota <= 0 || period <= 0)
        return 0;
    return (long)((quota + period - 1) / period);
}

/* cgroup v2: cpu.max of dir, then of each ancestor up to the root. */
static long v2_limit(const char *root, const char *rel)
{
    char dir[PATH_MAX], file[PATH_MAX + 16];
    long best = 0;
    snprintf(dir, sizeof dir, "%s%s", root, rel);
    for (;;) {
        FILE *f;
        char *slash;
        snprintf(file, sizeof file, "%s/cpu.max", dir);
        if ((f = fopen(file, "r"))) {
            char q[32] = "";
            long long period = 0;
            if (fscanf(f, "%31s %lld", q, &period) == 2 && strcmp(q, "max") != 0) {
                long c = quota_cores(atoll(q), period);
                if (c > 0 && (best == 0 || c < best))
                    best = c;
            }
            fclose(f);
        }
        slash = strrchr(dir, '/');
        if (!slash || (size_t)(slash - dir) < strlen(root))
            break;
        *slash = '\0';
    }
    return best;
}

static long long read_ll(const char *path)
{
    FILE *f = fopen(path, "r");
    long long v = 0;
    if (!f)
        return 0;
    if (fscanf(f, "%lld", &v) != 1)
        v = 0;
    fclose(f);
    return v;
}

/* cgroup v1: the cpu controller's quota for the process's cgroup (or, in
 * a container that sees its own cgroup as the mount's root, the root's). */
static long v1_limit(const char *rel)
{
    static const char *const mounts[] = {"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"};
    size_t i;
    for (i = 0; i < sizeof mounts / sizeof mounts[0]; i++) {
        char q[PATH_MAX + 64], p[PATH_MAX + 64];
        long c;
        snprintf(q, sizeof q, "%s%s/cpu.cfs_quota_us", mounts[i], rel);
        snprintf(p, sizeof p, "%s%s/cpu.cfs_period_us", mounts[i], rel);
        if (access(q, R_OK) != 0) {
            snprintf(q, sizeof q, "%s/cpu.cfs_quota_us", mounts[i]);
            snprintf(p, sizeof p, "%s/cpu.cfs_period_us", mounts[i]);
        }
        if (access(q, R_OK) == 0) {
            c = quota_cores(read_ll(q), read_ll(p));
            return c;
        }
    }
    return 0;
}

/* The cgroup quota in cores, 0 when there is none (or no cgroup fs). */
static long cgroup_limit(void)
{
    FILE *f = fopen("/proc/self/cgroup", "r");
    char line[PATH_MAX + 64];
    long v1 = 0, v2 = 0;
    if (!f)
        return 0;
    while (fgets(line, sizeof line, f)) {
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        line[strcspn(line, "\n")] = '\0';
        *c2 = '\0';
        if (!strcmp(line, "0") && c1[1] == '\0')
            v2 = v2_limit("/sys/fs/cgroup", strcmp(c2 + 1, "/") ? c2 + 1 : "");
        else {
            /* "N:cpu,cpuacct:/path": the cpu controller */
            char *ctl = c1 + 1, *tok, *save = NULL;
            for (tok = strtok_r(ctl, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
                if (!strcmp(tok, "cpu"))
                    v1 = v1_limit(strcmp(c2 + 1, "/") ? c2 + 1 : "");
        }
    }
    fclose(f);
    if (v1 > 0 && (v2 == 0 || v1 < v2))
        return v1;
    return v2;
}

int qf_usable_cores(void)
{
    long n = 0, q;
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        n = CPU_COUNT(&set);
    if (n < 1)
        n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1)
        n = 1;
    q = cgroup_limit();
    if (q > 0 && q < n)
        n = q;
    return n > 1024 ? 1024 : (int)n;
}
