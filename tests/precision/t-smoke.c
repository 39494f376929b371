/* t-smoke.c: a handful of known codes (OCP OFP8 table 1 and MX v1.0). */
#include <math.h>

#include "qf_format.h"
#include "qf_test.h"

START_TEST(test_known_codes)
{
    const qf_format *e4 = qf_format_lookup("e4m3");
    ck_assert_ptr_nonnull(e4);
    ck_assert(qf_format_decode(e4, 0x7E) == 448.0);
    ck_assert(isnan(qf_format_decode(e4, 0x7F)));
    ck_assert_uint_eq(qf_format_encode(e4, 464.0, QF_ROUND_RNE, 0, 0, 0), 0x7E);
    ck_assert_uint_eq(qf_format_encode(e4, 465.0, QF_ROUND_RNE, 0, 0, 0), 0x7F);
    ck_assert_uint_eq(qf_format_encode(e4, 465.0, QF_ROUND_RNE, 1, 0, 0), 0x7E);
}
END_TEST

int main(void)
{
    return qf_test_main("precision/smoke", "core", 0, NULL, NULL, QF_TESTS(test_known_codes));
}
