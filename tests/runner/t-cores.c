/* t-cores.c: qf_usable_cores, the default of `qualify run --jobs`
 * (qualify/cores.c): it follows the affinity mask (taskset, a cpuset) and
 * never exceeds it; at least 1.  The cgroup quota can only lower it, so
 * the bounds hold whatever quota the machine running the test has. */
#define _GNU_SOURCE /* sched_setaffinity, CPU_* */
#include <sched.h>

#include "qf_runner.h"
#include "qf_test.h"

START_TEST(test_follows_affinity)
{
    cpu_set_t all, one, two;
    int first = -1, second = -1, i, n;
    ck_assert_int_eq(sched_getaffinity(0, sizeof all, &all), 0);
    n = qf_usable_cores();
    printf("cores: %d usable of %d in the affinity mask\n", n, CPU_COUNT(&all));
    ck_assert_int_ge(n, 1);
    ck_assert_int_le(n, CPU_COUNT(&all));
    for (i = 0; i < CPU_SETSIZE && second < 0; i++)
        if (CPU_ISSET(i, &all)) {
            if (first < 0)
                first = i;
            else
                second = i;
        }
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    ck_assert_int_eq(sched_setaffinity(0, sizeof one, &one), 0);
    ck_assert_int_eq(qf_usable_cores(), 1);
    if (second >= 0) {
        two = one;
        CPU_SET(second, &two);
        ck_assert_int_eq(sched_setaffinity(0, sizeof two, &two), 0);
        n = qf_usable_cores();
        ck_assert_msg(n >= 1 && n <= 2, "%d usable cores on two CPUs", n);
    }
    ck_assert_int_eq(sched_setaffinity(0, sizeof all, &all), 0);
}
END_TEST

int main(void)
{
    return qf_test_main("runner/cores", "cores", 60, NULL, NULL, QF_TESTS(test_follows_affinity));
}
