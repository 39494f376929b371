/* yaml_limits.c: the limits suite and claim files share (_yaml_limits.h). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "_files.h"
#include "_yaml_limits.h"

/* The plain key before the ':' that ends just before buf[i] (spaces
 * between), as "key: [" has it; "" when there is none. */
static void key_before(const char *buf, size_t i, char *key, size_t size)
{
    size_t end, start;
    key[0] = '\0';
    while (i > 0 && (buf[i - 1] == ' ' || buf[i - 1] == '\t'))
        i--;
    if (i == 0 || buf[i - 1] != ':')
        return;
    i--;
    while (i > 0 && (buf[i - 1] == ' ' || buf[i - 1] == '\t'))
        i--;
    end = start = i;
    while (start > 0 && buf[start - 1] && strchr("_-.abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
                                                 buf[start - 1]))
        start--;
    if (start < end && end - start < size) {
        memcpy(key, buf + start, end - start);
        key[end - start] = '\0';
    }
}

int _qf_yaml_flow_depth(const char *buf, size_t len, int max, _qf_yaml_where *at)
{
    int depth = 0, line = 1, col = 1;
    char prev = '\n', key[sizeof at->key] = "";
    for (size_t i = 0; i < len; i++, col++) {
        char ch = buf[i];
        int token_start = prev == '\n' || prev == ' ' || prev == '\t' || prev == '[' || prev == '{' ||
                          prev == ',' || prev == ':';
        if (ch == '\n') {
            line++;
            col = 0;
        } else if (ch == '#' && (prev == ' ' || prev == '\t' || prev == '\n')) {
            while (i + 1 < len && buf[i + 1] != '\n')
                i++;
        } else if ((ch == '"' || ch == '\'') && token_start) {
            /* skip the quoted scalar (it may span lines) */
            for (i++; i < len; i++) {
                col++;
                if (buf[i] == '\n') {
                    line++;
                    col = 0;
                } else if (ch == '"' && buf[i] == '\\') {
                    i++;
                    col++;
                } else if (buf[i] == ch) {
                    if (ch == '\'' && i + 1 < len && buf[i + 1] == '\'') {
                        i++;
                        col++;
                        continue;
                    }
                    break;
                }
            }
        } else if (ch == '[' || ch == '{') {
            if (depth == 0)
                key_before(buf, i, key, sizeof key);
            if (++depth > max) {
                if (at) {
                    at->line = line;
                    at->col = col;
                    memcpy(at->key, key, sizeof key);
                }
                return -1;
            }
        } else if ((ch == ']' || ch == '}') && depth > 0) {
            depth--;
        }
        prev = i < len ? buf[i] : 0;
    }
    return 0;
}

qf_status _qf_yaml_read_file(const char *path, size_t max, char **buf, size_t *len, char *err, size_t err_size)
{
    qf_status st = QF_EIO;
    struct stat sb;
    FILE *f;
    char *b;
    size_t n;
    *buf = NULL;
    *len = 0;
    if (!(f = _qf_fopen_read(path, err, err_size, &st)))
        return st;
    if (fstat(fileno(f), &sb) != 0) {
        snprintf(err, err_size, "%s: cannot read", path);
        fclose(f);
        return QF_EIO;
    }
    if (sb.st_size > (off_t)max) {
        snprintf(err, err_size, "%s: %lld bytes, larger than the %zu (%zu MiB) a suite or claim file may hold",
                 path, (long long)sb.st_size, max, max >> 20);
        fclose(f);
        return QF_EPARSE;
    }
    /* One byte more than the size said: a file that grew shows it. */
    if (!(b = malloc((size_t)sb.st_size + 2))) {
        fclose(f);
        return QF_ENOMEM;
    }
    n = fread(b, 1, (size_t)sb.st_size + 1, f);
    if (ferror(f) || n > (size_t)sb.st_size) {
        snprintf(err, err_size, "%s: %s", path, ferror(f) ? "read error" : "the file grew while it was read");
        fclose(f);
        free(b);
        return QF_EIO;
    }
    fclose(f);
    b[n] = '\0';
    *buf = b;
    *len = n;
    return QF_OK;
}
