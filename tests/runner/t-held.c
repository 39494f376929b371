/* t-held.c: a worker's outputs as they were at done (qualify/worker_held.c,
 * docs/security.md "Outputs as they were"): a region kept at done and
 * changed afterwards is reported for its kernel, an unchanged one is not,
 * a change is told to the kernel whose run it was and to no other, and a
 * change seen when the memory is reused (the slot's next run) is still
 * reported at the pair's recheck. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "_worker.h"
#include "qf_test.h"

static const qf_kernel ka = {.name = "a"}, kb = {.name = "b"};
static instance in = {.mem = -1};

/* A run's mapping of 3 pages with one output region at 4096 of 100 bytes,
 * kept for kernel k. */
static unsigned char *held(const qf_kernel *k)
{
    unsigned char *base = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    size_t off = 4096, bytes = 100;
    const char *name = "d";
    size_t i;
    ck_assert(base != MAP_FAILED);
    for (i = 0; i < 3 * 4096; i++)
        base[i] = (unsigned char)(i * 7);
    _qf_wheld_add(&in, -1, k, base, 3 * 4096, &off, &bytes, &name, 1);
    return base;
}

START_TEST(unchanged)
{
    char msg[256] = "";
    unsigned char *b = held(&ka);
    b[4096 + 100] ^= 1; /* outside the output region */
    ck_assert_int_eq(_qf_worker_recheck(&ka, msg, sizeof msg), 0);
}
END_TEST

START_TEST(changed)
{
    char msg[256] = "";
    unsigned char *b = held(&ka);
    b[4096 + 99] ^= 1; /* its last byte */
    ck_assert_int_eq(_qf_worker_recheck(&ka, msg, sizeof msg), 1);
    ck_assert_msg(strstr(msg, "outputs changed after the kernel returned: output d (100 bytes)"), "%s", msg);
    ck_assert_int_eq(_qf_worker_recheck(&ka, msg, sizeof msg), 0); /* reported once */
}
END_TEST

START_TEST(other_kernel)
{
    char msg[256] = "";
    unsigned char *b = held(&kb);
    b[4096] ^= 0x80;
    ck_assert_int_eq(_qf_worker_recheck(&ka, msg, sizeof msg), 0);
    ck_assert_int_eq(_qf_worker_recheck(&kb, msg, sizeof msg), 0); /* the note was cleared with the pair */
}
END_TEST

START_TEST(seen_at_reuse)
{
    char msg[256] = "";
    unsigned char *b = held(&ka);
    b[4100] ^= 2;
    _qf_wheld_check_release(); /* the slot's next run */
    ck_assert_int_eq(_qf_worker_recheck(&ka, msg, sizeof msg), 1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("runner/held");
    TCase *tc = tcase_create("held");
    tcase_add_test(tc, unchanged);
    tcase_add_test(tc, changed);
    tcase_add_test(tc, other_kernel);
    tcase_add_test(tc, seen_at_reuse);
    suite_add_tcase(s, tc);
    return qf_test_run(s);
}
