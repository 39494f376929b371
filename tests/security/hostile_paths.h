/* hostile_paths.h: what a hostile kernel does to qualify's files by path
 * (issue 26; tests/security/plugin_sandbox.c and the hostile worker in
 * tests/runner/worker_test.c).  Header-only: both are single files.
 *
 * A kernel runs as the same user as qualify; it finds the output directory
 * in the command line of an ancestor (`-o DIR`, /proc/PID/cmdline) and then
 * tries, each attempt printed on its standard output (the pair's record):
 *   - rewriting "FAILED" to "QUALIFIED" in DIR/journal.jsonl and
 *     DIR/results.json, and failures="N" to failures="0" in junit.xml;
 *   - planting a FIFO at DIR/results.json.tmp and a symlink
 *     DIR/report.md.tmp -> DIR/journal.jsonl, and a file DIR/planted;
 *   - writing the file $QF_SBX_OUTSIDE (outside DIR). */
#ifndef QF_TESTS_HOSTILE_PATHS_H
#define QF_TESTS_HOSTILE_PATHS_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Where the attempts are reported: a worker's standard output is the
 * protocol, so it sets this to stderr. */
static FILE *hp_out;
#define HP_SAY(...) fprintf(hp_out ? hp_out : stdout, __VA_ARGS__)

/* The parent of pid (/proc/PID/stat), or 0. */
__attribute__((unused)) static pid_t hp_parent(pid_t pid)
{
    char path[64], buf[512], *p;
    FILE *f;
    size_t n;
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    if (!(f = fopen(path, "r")))
        return 0;
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    if (!(p = strrchr(buf, ')')))
        return 0;
    return (pid_t)strtol(p + 3, NULL, 10);
}

/* The `-o DIR` of the nearest ancestor running `qualify run`, made
 * absolute with that process's cwd when it can be read; 0 or -1. */
__attribute__((unused)) static int hp_find_outdir(char *dir, size_t size)
{
    pid_t pid = getppid();
    int depth;
    for (depth = 0; depth < 8 && pid > 1; depth++, pid = hp_parent(pid)) {
        char path[64], buf[8192];
        FILE *f;
        size_t n, i;
        snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
        if (!(f = fopen(path, "r")))
            continue;
        n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = '\0';
        for (i = 0; i < n; i += strlen(buf + i) + 1)
            if ((!strcmp(buf + i, "-o") || !strcmp(buf + i, "--output")) && i + 3 < n) {
                const char *d = buf + i + 3;
                if (d[0] == '/')
                    snprintf(dir, size, "%s", d);
                else {
                    char cwd[4096], link[64];
                    ssize_t k;
                    snprintf(link, sizeof link, "/proc/%d/cwd", (int)pid);
                    k = readlink(link, cwd, sizeof cwd - 1);
                    if (k <= 0) /* not ours to read: guess our own cwd */
                        k = getcwd(cwd, sizeof cwd) ? (ssize_t)strlen(cwd) : 0;
                    cwd[k] = '\0';
                    snprintf(dir, size, "%s/%s", cwd, d);
                }
                return 0;
            }
    }
    return -1;
}

/* Replace every `from` in the file by `to` (rewritten whole); the result
 * of the attempt printed. */
__attribute__((unused)) static void hp_rewrite(const char *dir, const char *name, const char *from, const char *to)
{
    char path[4200], *buf = NULL, *out = NULL;
    size_t n = 0, o = 0, i, lf = strlen(from), lt = strlen(to);
    struct stat st;
    int fd;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    fd = open(path, O_RDWR | O_NOFOLLOW);
    if (fd < 0) {
        HP_SAY("hostile: %s: %s\n", name, strerror(errno));
        return;
    }
    if (!fstat(fd, &st) && st.st_size > 0 && st.st_size < (1 << 26) && (buf = malloc((size_t)st.st_size + 1)) &&
        (out = malloc((size_t)st.st_size * 2 + 1)) && pread(fd, buf, (size_t)st.st_size, 0) == st.st_size) {
        n = (size_t)st.st_size;
        for (i = 0; i < n; i++)
            if (i + lf <= n && !memcmp(buf + i, from, lf)) {
                memcpy(out + o, to, lt);
                o += lt;
                i += lf - 1;
            } else {
                out[o++] = buf[i];
            }
        if (pwrite(fd, out, o, 0) == (ssize_t)o && !ftruncate(fd, (off_t)o))
            HP_SAY("hostile: %s: rewritten\n", name);
    }
    free(buf);
    free(out);
    close(fd);
}

/* Every attack by path once; prints what worked.  0 when the directory
 * was found. */
__attribute__((unused)) static int hp_attack(void)
{
    char dir[4096], a[4200], b[4200];
    const char *outside = getenv("QF_SBX_OUTSIDE");
    int fd;
    if (hp_find_outdir(dir, sizeof dir)) {
        HP_SAY("hostile: no output directory found\n");
        fflush(hp_out ? hp_out : stdout);
        return -1;
    }
    hp_rewrite(dir, "journal.jsonl", "\"FAILED\"", "\"QUALIFIED\"");
    hp_rewrite(dir, "results.json", "\"FAILED\"", "\"QUALIFIED\"");
    snprintf(a, sizeof a, "%s/results.json.tmp", dir);
    HP_SAY("hostile: fifo: %s\n", mkfifo(a, 0600) ? strerror(errno) : "planted");
    snprintf(a, sizeof a, "%s/journal.jsonl", dir);
    snprintf(b, sizeof b, "%s/report.md.tmp", dir);
    HP_SAY("hostile: symlink: %s\n", symlink(a, b) ? strerror(errno) : "planted");
    snprintf(a, sizeof a, "%s/planted", dir);
    fd = open(a, O_CREAT | O_WRONLY | O_TRUNC, 0600);
    HP_SAY("hostile: planted: %s\n", fd < 0 ? strerror(errno) : "created");
    if (fd >= 0)
        close(fd);
    if (outside) {
        fd = open(outside, O_WRONLY | O_TRUNC);
        if (fd >= 0 && write(fd, "forged\n", 7) == 7)
            HP_SAY("hostile: outside: written\n");
        else
            HP_SAY("hostile: outside: %s\n", strerror(errno));
        if (fd >= 0)
            close(fd);
    }
    fflush(hp_out ? hp_out : stdout);
    return 0;
}

/* After the sweep: wait (up to 15 s) for DIR/results.json, then rewrite
 * it and junit.xml as if every pair passed.  In the calling process. */
__attribute__((unused)) static void hp_linger(void)
{
    char dir[4096], path[4200];
    int t;
    if (hp_find_outdir(dir, sizeof dir))
        return;
    snprintf(path, sizeof path, "%s/results.json", dir);
    for (t = 0; t < 1500 && access(path, F_OK); t++)
        usleep(10000);
    usleep(50000);
    hp_rewrite(dir, "results.json", "\"FAILED\"", "\"QUALIFIED\"");
    hp_rewrite(dir, "junit.xml", "<failure", "<skipped");
}

#endif
