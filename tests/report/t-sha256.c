/* t-sha256.c: SHA-256 against the FIPS 180-4 / NIST CAVS example vectors,
 * incremental updates split at every offset (block boundaries and the
 * 55/56/63/64-byte padding edges), and qf_sha256_file. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qf_sha256.h"
#include "qf_test.h"

static void hex_of(const void *p, size_t n, char hex[QF_SHA256_HEX])
{
    uint8_t d[QF_SHA256_BYTES];
    qf_sha256(p, n, d);
    qf_sha256_hex(d, hex);
}

START_TEST(test_vectors)
{
    static const struct {
        const char *msg, *digest;
    } v[] = {
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
        {"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmno"
         "pqr"
         "stnopqrstu",
         "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"},
    };
    char hex[QF_SHA256_HEX];
    size_t i;
    for (i = 0; i < sizeof v / sizeof v[0]; i++) {
        hex_of(v[i].msg, strlen(v[i].msg), hex);
        ck_assert_msg(!strcmp(hex, v[i].digest), "message '%s': got %s, expected %s", v[i].msg, hex,
                      v[i].digest);
    }
}
END_TEST

/* One million 'a', fed in uneven pieces (FIPS 180-2 appendix B.3). */
START_TEST(test_million_a)
{
    qf_sha256_ctx c;
    uint8_t d[QF_SHA256_BYTES];
    char hex[QF_SHA256_HEX], chunk[997];
    size_t left = 1000000;
    memset(chunk, 'a', sizeof chunk);
    qf_sha256_init(&c);
    while (left) {
        size_t n = left < sizeof chunk ? left : sizeof chunk;
        qf_sha256_update(&c, chunk, n);
        left -= n;
    }
    qf_sha256_final(&c, d);
    qf_sha256_hex(d, hex);
    ck_assert_str_eq(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}
END_TEST

/* Splitting a message anywhere must not change its digest. */
START_TEST(test_split)
{
    uint8_t msg[200], d1[QF_SHA256_BYTES], d2[QF_SHA256_BYTES];
    size_t len, cut, i;
    uint64_t s = qf_test_seed();
    for (i = 0; i < sizeof msg; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        msg[i] = (uint8_t)(s >> 56);
    }
    for (len = 0; len <= sizeof msg; len++) {
        qf_sha256(msg, len, d1);
        for (cut = 0; cut <= len; cut++) {
            qf_sha256_ctx c;
            qf_sha256_init(&c);
            qf_sha256_update(&c, msg, cut);
            qf_sha256_update(&c, msg + cut, 0);
            qf_sha256_update(&c, msg + cut, len - cut);
            qf_sha256_final(&c, d2);
            ck_assert_msg(!memcmp(d1, d2, sizeof d1), "length %zu split at %zu differs", len, cut);
        }
    }
}
END_TEST

START_TEST(test_file)
{
    char path[64], hex[QF_SHA256_HEX];
    FILE *f;
    snprintf(path, sizeof path, "/tmp/qf-t-sha256-%d", (int)getpid());
    f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    fputs("abc", f);
    fclose(f);
    ck_assert_int_eq(qf_sha256_file(path, hex), QF_OK);
    ck_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    remove(path);
    ck_assert_int_eq(qf_sha256_file(path, hex), QF_EIO);
    ck_assert_int_eq(qf_sha256_file(NULL, hex), QF_EINVAL);
}
END_TEST

int main(void)
{
    return qf_test_main("report/sha256", "sha256", 0, NULL, NULL,
                        QF_TESTS(test_vectors, test_million_a, test_split, test_file));
}
