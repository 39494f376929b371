/* sandbox.c: Landlock, seccomp and capabilities for every process that
 * runs kernel code (_sandbox.h, docs/security.md "The sandbox").
 *
 * The Landlock and seccomp interfaces are called through syscall(2) with
 * their constants defined here where the C library's headers are older
 * than the kernel (Debian 12's describe Landlock ABI 3): the values are
 * the kernel's UAPI (include/uapi/linux/landlock.h, seccomp.h), stable by
 * the kernel's ABI rules. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>
#ifdef __linux__
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#endif

#include "_sandbox.h"

/* ---- The kernel's constants ---------------------------------------------- */

#define LL_CREATE_VERSION (1U << 0)
#define LL_RULE_PATH_BENEATH 1
#define LL_FS_EXECUTE (1ULL << 0)
#define LL_FS_WRITE_FILE (1ULL << 1)
#define LL_FS_READ_FILE (1ULL << 2)
#define LL_FS_READ_DIR (1ULL << 3)
#define LL_FS_REMOVE_DIR (1ULL << 4)
#define LL_FS_REMOVE_FILE (1ULL << 5)
#define LL_FS_MAKE_CHAR (1ULL << 6)
#define LL_FS_MAKE_DIR (1ULL << 7)
#define LL_FS_MAKE_REG (1ULL << 8)
#define LL_FS_MAKE_SOCK (1ULL << 9)
#define LL_FS_MAKE_FIFO (1ULL << 10)
#define LL_FS_MAKE_BLOCK (1ULL << 11)
#define LL_FS_MAKE_SYM (1ULL << 12)
#define LL_FS_REFER (1ULL << 13)    /* ABI 2 */
#define LL_FS_TRUNCATE (1ULL << 14) /* ABI 3 */
#define LL_FS_IOCTL_DEV (1ULL << 15) /* ABI 5 */
#define LL_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0) /* ABI 6 */
#define LL_SCOPE_SIGNAL (1ULL << 1)               /* ABI 6 */

/* struct landlock_ruleset_attr as of ABI 6; the kernel takes a prefix of
 * it (the size passed) from older callers, so the size follows the ABI. */
typedef struct {
    uint64_t handled_access_fs;
    uint64_t handled_access_net; /* ABI 4 */
    uint64_t scoped;             /* ABI 6 */
} ll_ruleset_attr;

typedef struct {
    uint64_t allowed_access;
    int32_t parent_fd;
} __attribute__((packed)) ll_path_beneath;

#ifndef SECBIT_NOROOT
#define SECBIT_NOROOT (1 << 0)
#define SECBIT_NOROOT_LOCKED (1 << 1)
#endif
#ifndef PR_CAP_AMBIENT
#define PR_CAP_AMBIENT 47
#define PR_CAP_AMBIENT_CLEAR_ALL 4
#endif

/* ---- What this machine offers ---------------------------------------------- */

static qf_sandbox_mode mode = QF_SANDBOX_AUTO;
static char writable[16][512]; /* --kernel-writable */
static size_t nwritable;

int _qf_sbx_allow_write(const char *dir)
{
    struct stat st;
    if (nwritable == sizeof writable / sizeof writable[0] || strlen(dir) >= sizeof writable[0])
        return errno = E2BIG, -1;
    if (stat(dir, &st))
        return -1;
    if (!S_ISDIR(st.st_mode))
        return errno = ENOTDIR, -1;
    if (!realpath(dir, writable[nwritable]))
        return -1;
    nwritable++;
    return 0;
}

const char *_qf_sbx_writable(size_t i)
{
    return i < nwritable ? writable[i] : NULL;
}
static char hidden[32][512]; /* _qf_sbx_hide */
static size_t nhidden;
static struct {
    int probed, landlock, seccomp, root, ns;
    pid_t owner;   /* the process that made root_dir (removes it) */
    char root_dir[512];
} M;

void _qf_sbx_set_mode(qf_sandbox_mode m)
{
    mode = m;
}

qf_sandbox_mode _qf_sbx_mode(void)
{
    return mode;
}

int _qf_sbx_hide(const char *path)
{
    struct stat st;
    if (nhidden == sizeof hidden / sizeof hidden[0])
        return errno = E2BIG, -1;
    if (stat(path, &st) || !realpath(path, hidden[nhidden]))
        return -1;
    nhidden++;
    return 0;
}

static int namespaces_work(void);

static void cleanup_at_exit(void)
{
    if (M.owner == getpid())
        _qf_sbx_cleanup();
}

/* The Landlock ABI (0: none; the LSM may be built but not enabled). */
static int landlock_abi(void)
{
#ifdef SYS_landlock_create_ruleset
    long v = syscall(SYS_landlock_create_ruleset, NULL, 0, LL_CREATE_VERSION);
    return v > 0 ? (int)v : 0;
#else
    return 0;
#endif
}

static int have_seccomp(void)
{
#if defined(__linux__) && defined(PR_GET_SECCOMP) && (defined(__x86_64__) || defined(__aarch64__))
    return prctl(PR_GET_SECCOMP, 0, 0, 0, 0) >= 0;
#else
    return 0;
#endif
}

/* A scratch root of this run: TMPDIR or /tmp, private to the user. */
static int make_root(void)
{
    const char *t = getenv("TMPDIR");
    if (M.root_dir[0])
        return 0;
    if (!t || !*t || strlen(t) > 400)
        t = "/tmp";
    snprintf(M.root_dir, sizeof M.root_dir, "%s/qualify-scratch-XXXXXX", t);
    if (!mkdtemp(M.root_dir)) {
        M.root_dir[0] = '\0';
        return -1;
    }
    M.owner = getpid();
    atexit(cleanup_at_exit);
    return 0;
}

int _qf_sbx_probe(char *why, size_t why_size)
{
    if (!M.probed) {
        M.probed = 1;
        M.landlock = landlock_abi();
        M.seccomp = have_seccomp();
        M.root = geteuid() == 0;
        M.ns = mode != QF_SANDBOX_OFF && !getenv("QUALIFY_SANDBOX_NO_NAMESPACES") && namespaces_work();
    }
    if (mode == QF_SANDBOX_OFF)
        return 0;
    if (make_root()) {
        if (why)
            snprintf(why, why_size, "cannot make a scratch directory for kernel processes in %s: %s",
                     getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", strerror(errno));
        return mode == QF_SANDBOX_REQUIRE ? -1 : 0;
    }
    if (mode == QF_SANDBOX_REQUIRE && (M.landlock < 6 || !M.seccomp || !M.ns)) {
        if (why)
            snprintf(why, why_size,
                     "--require-sandbox: this machine offers Landlock ABI %d, %s and %s (needed: Landlock ABI 6 or "
                     "later, which also scopes signals, seccomp, and user, mount and PID namespaces)",
                     M.landlock, M.seccomp ? "seccomp" : "no seccomp",
                     M.ns ? "namespaces" : "no namespaces a process may make");
        return -1;
    }
    return 0;
}

int _qf_sbx_complete(qf_sbx_kind kind, int device, int memory)
{
    (void)kind;
    _qf_sbx_probe(NULL, 0);
    if (mode == QF_SANDBOX_OFF || M.landlock < 6 || !M.root_dir[0] || !M.ns)
        return 0;
    return !(memory && !device) || M.seccomp;
}

void _qf_sbx_describe(qf_sbx_kind kind, int device, int memory, char *buf, size_t size)
{
    size_t n = 0;
#define ADD(...)                                                                                                   \
    do {                                                                                                           \
        if (n < size)                                                                                              \
            n += (size_t)snprintf(buf + n, size - n, __VA_ARGS__);                                                 \
    } while (0)
    _qf_sbx_probe(NULL, 0);
    if (!size)
        return;
    buf[0] = '\0';
    if (mode == QF_SANDBOX_OFF) {
        ADD("none (--no-sandbox)");
        return;
    }
    if (!M.landlock)
        ADD("no Landlock on this kernel: writes anywhere the user may");
    else {
        size_t i;
        ADD("Landlock ABI %d: writes only its scratch, /dev/null", M.landlock);
        for (i = 0; i < nwritable; i++)
            ADD(", %s (--kernel-writable)", writable[i]);
        if (device || kind == QF_SBX_WORKER)
            ADD(", the GPU device nodes");
        if (kind == QF_SBX_WORKER)
            ADD(", existing /dev/shm objects");
        ADD("; ptrace%s scoped", M.landlock >= 6 ? ", signals and abstract sockets" : " (not signals)");
    }
    if (memory && !device)
        ADD(M.seccomp ? "; seccomp: no memfd, SysV or shared anonymous memory" : "; no seccomp");
    ADD(M.ns ? "; own PID, mount and user namespaces (no other process visible; output directory and suite "
               "covered)"
             : "; no namespaces (other processes and qualify's files readable)");
    ADD("; no_new_privs%s", M.root || M.ns ? "; no capabilities" : "");
#undef ADD
}

/* ---- Scratch directories ------------------------------------------------- */

void _qf_sbx_scratch_path(pid_t pid, char *buf, size_t size)
{
    if (!M.root_dir[0] || mode == QF_SANDBOX_OFF)
        snprintf(buf, size, "%s", "");
    else
        snprintf(buf, size, "%s/k%ld", M.root_dir, (long)pid);
}

static unsigned long long walked;

static int add_bytes(const char *path, const struct stat *st, int flag, struct FTW *f)
{
    (void)path;
    (void)flag;
    (void)f;
    walked += (unsigned long long)st->st_blocks * 512ull;
    return 0;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *f)
{
    (void)st;
    (void)f;
    if (flag == FTW_DP)
        rmdir(path);
    else
        unlink(path);
    return 0;
}

unsigned long long _qf_sbx_scratch_bytes(pid_t pid)
{
    char p[600];
    _qf_sbx_scratch_path(pid, p, sizeof p);
    walked = 0;
    if (p[0])
        nftw(p, add_bytes, 16, FTW_PHYS | FTW_MOUNT);
    return walked;
}

static int open_up(const char *path, const struct stat *st, int flag, struct FTW *f)
{
    (void)f;
    if (flag == FTW_D || flag == FTW_DNR)
        chmod(path, (st->st_mode & 07777) | 0700);
    return 0;
}

static void remove_tree(const char *p)
{
    struct stat st;
    if (!p[0] || lstat(p, &st) || !S_ISDIR(st.st_mode))
        return;
    /* A kernel may have left a directory without write or search
     * permission: give them back first (the owner may), then remove
     * depth first, never following a link. */
    nftw(p, open_up, 16, FTW_PHYS | FTW_MOUNT);
    nftw(p, remove_one, 16, FTW_PHYS | FTW_DEPTH | FTW_MOUNT);
}

void _qf_sbx_scratch_remove(pid_t pid)
{
    char p[600];
    _qf_sbx_scratch_path(pid, p, sizeof p);
    remove_tree(p);
}

void _qf_sbx_cleanup(void)
{
    if (!M.root_dir[0])
        return;
    remove_tree(M.root_dir);
    M.root_dir[0] = '\0';
}

/* ---- Namespaces -------------------------------------------------------------
 *
 * A user, mount and PID namespace (user_namespaces(7), mount_namespaces(7),
 * pid_namespaces(7)): the kernel process sees a /proc of its own processes
 * only (no other process's command line, no qualify process to name), and
 * the output directory and the suite file (_qf_sbx_hide) are covered:
 * an empty read-only tmpfs over a directory, /dev/null over a file.
 *
 * Three processes: the child qualify forked (C, which qualify waits for and
 * kills) unshares and forks the namespace's init (I, PID 1), which mounts
 * and forks the kernel process (K, PID 2), the one that returns from
 * _qf_sbx_enter.  I reaps every orphan of the namespace; when K ends, I
 * hands K's wait status to C through a pipe and exits, which kills every
 * process left in the namespace; C ends the same way K did (the signal
 * raised again, or the exit status).  K is not PID 1, so its signals keep
 * their default actions (a PID 1 ignores its own raise(SIGABRT)). */

static int write_file(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    ssize_t n;
    if (fd < 0)
        return -1;
    n = write(fd, text, strlen(text));
    close(fd);
    return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* Close every descriptor below 1024 but keep (isolate.c closed the
 * others before). */
static void close_all_but(int keep)
{
    int fd;
    for (fd = 0; fd < 1024; fd++)
        if (fd != keep)
            close(fd);
}

/* C: wait for K's status from I, end as K did.  Never returns. */
static void relay_end(pid_t init, int rd) __attribute__((noreturn));
static void relay_end(pid_t init, int rd)
{
    int st = 0, got = 0, ist;
    ssize_t n;
    struct rlimit no_core = {0, 0};
    close_all_but(rd);
    while ((n = read(rd, &st, sizeof st)) < 0 && errno == EINTR)
        ;
    got = n == (ssize_t)sizeof st;
    while (waitpid(init, &ist, 0) < 0 && errno == EINTR)
        ;
    if (!got)
        st = ist; /* I itself was killed (qualify's SIGKILL reaches C first) */
    if (WIFSIGNALED(st)) {
        setrlimit(RLIMIT_CORE, &no_core);
        signal(WTERMSIG(st), SIG_DFL);
        {
            sigset_t all;
            sigemptyset(&all);
            sigaddset(&all, WTERMSIG(st));
            sigprocmask(SIG_UNBLOCK, &all, NULL);
        }
        raise(WTERMSIG(st));
        _exit(128 + WTERMSIG(st));
    }
    _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 127);
}

/* I: reap until K ends, then hand its status on.  Never returns. */
static void init_run(pid_t k, int wr) __attribute__((noreturn));
static void init_run(pid_t k, int wr)
{
    int st;
    pid_t w;
    close_all_but(wr);
    for (;;) {
        w = waitpid(-1, &st, 0);
        if (w == k) {
            ssize_t n = write(wr, &st, sizeof st);
            (void)n;
            _exit(0);
        }
        if (w < 0 && errno != EINTR)
            _exit(127);
    }
}

static int mounts(char *why, size_t why_size)
{
    size_t i;
    if (mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL))
        return snprintf(why, why_size, "namespaces: cannot make / private: %s", strerror(errno)), -1;
    if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL))
        return snprintf(why, why_size, "namespaces: cannot mount /proc: %s", strerror(errno)), -1;
    for (i = 0; i < nhidden; i++) {
        struct stat st;
        int r;
        if (stat(hidden[i], &st))
            continue; /* gone since: nothing to cover */
        r = S_ISDIR(st.st_mode) ? mount("qualify-hidden", hidden[i], "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV,
                                        "size=4k,nr_inodes=1,mode=0")
                                : mount("/dev/null", hidden[i], NULL, MS_BIND, NULL);
        if (r)
            return snprintf(why, why_size, "namespaces: cannot cover %s: %s", hidden[i], strerror(errno)), -1;
    }
    return 0;
}

/* In C: returns 0 in K, -1 (reason in why) in C when it cannot. */
static int enter_namespaces(char *why, size_t why_size)
{
    uid_t uid = geteuid();
    gid_t gid = getegid();
    char map[64];
    int p[2];
    pid_t init;
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID))
        return snprintf(why, why_size, "namespaces: unshare: %s", strerror(errno)), -1;
    snprintf(map, sizeof map, "%u %u 1\n", (unsigned)uid, (unsigned)uid);
    if (write_file("/proc/self/setgroups", "deny") || write_file("/proc/self/uid_map", map))
        return snprintf(why, why_size, "namespaces: cannot map the user: %s", strerror(errno)), -1;
    snprintf(map, sizeof map, "%u %u 1\n", (unsigned)gid, (unsigned)gid);
    if (write_file("/proc/self/gid_map", map))
        return snprintf(why, why_size, "namespaces: cannot map the group: %s", strerror(errno)), -1;
    if (pipe2(p, O_CLOEXEC))
        return snprintf(why, why_size, "namespaces: pipe: %s", strerror(errno)), -1;
    fflush(NULL);
    init = fork();
    if (init < 0)
        return snprintf(why, why_size, "namespaces: fork: %s", strerror(errno)), -1;
    if (init > 0) {
        close(p[1]);
        relay_end(init, p[0]);
    }
    /* I, PID 1 of the new namespace */
    close(p[0]);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (mounts(why, why_size)) {
        /* K's status is C's: an exit status C relays as the refusal */
        int st = _QF_SBX_EXIT << 8;
        ssize_t n;
        dprintf(2, "qualify: cannot confine the kernel process: %s\n", why);
        n = write(p[1], &st, sizeof st);
        (void)n;
        _exit(0);
    }
    {
        pid_t k = fork();
        if (k < 0)
            _exit(127);
        if (k > 0)
            init_run(k, p[1]);
    }
    close(p[1]); /* K */
    return 0;
}

/* Can this process make the namespaces (probed in a child, once)? */
static int namespaces_work(void)
{
    char why[256];
    pid_t c;
    int st = 0;
    fflush(NULL);
    c = fork();
    if (c < 0)
        return 0;
    if (c == 0) {
        int nul = open("/dev/null", O_RDWR);
        if (nul >= 0) {
            dup2(nul, 1);
            dup2(nul, 2);
        }
        _exit(enter_namespaces(why, sizeof why) ? 3 : access("/proc/self/stat", R_OK) ? 4 : 0);
    }
    while (waitpid(c, &st, 0) < 0 && errno == EINTR)
        ;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* ---- Entering it ----------------------------------------------------------- */

#ifdef __linux__
static int ll_allow(int rs, const char *path, uint64_t access, int optional, char *why, size_t why_size)
{
    ll_path_beneath pb;
    int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0) {
        if (optional)
            return 0;
        snprintf(why, why_size, "landlock: cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    {
        struct stat st;
        if (!fstat(fd, &st) && !S_ISDIR(st.st_mode))
            access &= LL_FS_WRITE_FILE | LL_FS_READ_FILE | LL_FS_EXECUTE | LL_FS_TRUNCATE | LL_FS_IOCTL_DEV;
    }
    pb.allowed_access = access;
    pb.parent_fd = fd;
    if (syscall(SYS_landlock_add_rule, rs, LL_RULE_PATH_BENEATH, &pb, 0)) {
        snprintf(why, why_size, "landlock: cannot allow %s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    close(fd);
    return 0;
}

static int enter_landlock(qf_sbx_kind kind, int device, const char *scratch, char *why, size_t why_size)
{
    static const char *const gpu[] = {"/dev/nvidiactl",  "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools",
                                      "/dev/nvidia-modeset", "/dev/nvidia-caps", "/dev/kfd", "/dev/dri"};
    ll_ruleset_attr a;
    size_t asz;
    uint64_t fs = LL_FS_WRITE_FILE | LL_FS_REMOVE_DIR | LL_FS_REMOVE_FILE | LL_FS_MAKE_CHAR | LL_FS_MAKE_DIR |
                  LL_FS_MAKE_REG | LL_FS_MAKE_SOCK | LL_FS_MAKE_FIFO | LL_FS_MAKE_BLOCK | LL_FS_MAKE_SYM;
    uint64_t wr = LL_FS_WRITE_FILE;
    int rs, i, abi = M.landlock;
    if (abi >= 2)
        fs |= LL_FS_REFER;
    if (abi >= 3)
        fs |= LL_FS_TRUNCATE, wr |= LL_FS_TRUNCATE;
    if (abi >= 5)
        fs |= LL_FS_IOCTL_DEV;
    memset(&a, 0, sizeof a);
    a.handled_access_fs = fs;
    asz = offsetof(ll_ruleset_attr, handled_access_net);
    if (abi >= 6) {
        a.scoped = LL_SCOPE_SIGNAL | LL_SCOPE_ABSTRACT_UNIX_SOCKET;
        asz = sizeof a;
    }
    rs = (int)syscall(SYS_landlock_create_ruleset, &a, asz, 0);
    if (rs < 0)
        return snprintf(why, why_size, "landlock: cannot create a ruleset: %s", strerror(errno)), -1;
    if (ll_allow(rs, scratch, fs, 0, why, why_size) || ll_allow(rs, "/dev/null", wr, 1, why, why_size))
        goto fail;
    for (i = 0; i < (int)nwritable; i++)
        if (ll_allow(rs, writable[i], fs, 0, why, why_size))
            goto fail;
    if (device || kind == QF_SBX_WORKER) {
        char node[32];
        for (i = 0; i < (int)(sizeof gpu / sizeof gpu[0]); i++)
            if (ll_allow(rs, gpu[i], wr | (abi >= 5 ? LL_FS_IOCTL_DEV : 0) | LL_FS_READ_FILE, 1, why, why_size))
                goto fail;
        for (i = 0; i < 64; i++) {
            snprintf(node, sizeof node, "/dev/nvidia%d", i);
            if (access(node, F_OK))
                break;
            if (ll_allow(rs, node, wr | (abi >= 5 ? LL_FS_IOCTL_DEV : 0) | LL_FS_READ_FILE, 1, why, why_size))
                goto fail;
        }
    }
    /* The named-object fallback of the worker protocol (docs/workers.md):
     * writes into objects qualify made, never a new one. */
    if (kind == QF_SBX_WORKER && ll_allow(rs, "/dev/shm", wr, 1, why, why_size))
        goto fail;
    if (syscall(SYS_landlock_restrict_self, rs, 0)) {
        snprintf(why, why_size, "landlock: cannot restrict the process: %s", strerror(errno));
        goto fail;
    }
    close(rs);
    return 0;
fail:
    close(rs);
    return -1;
}

#if defined(__x86_64__)
#define SBX_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define SBX_ARCH AUDIT_ARCH_AARCH64
#endif

/* memfd_create, shmget and mmap(MAP_SHARED | MAP_ANONYMOUS) fail with
 * EPERM: the pages a process holds are then private (RLIMIT_DATA counts
 * them) or in files it may write (its scratch; the disk cap counts them).
 * Any other architecture's system calls (i386 on x86-64) fail too. */
static int enter_seccomp(char *why, size_t why_size)
{
#ifdef SBX_ARCH
#define ERR (SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA))
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SBX_ARCH, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, ERR),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
#ifdef __x86_64__
        BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1), /* x32 */
        BPF_STMT(BPF_RET | BPF_K, ERR),
#else
        BPF_JUMP(BPF_JMP | BPF_JA, 0, 0, 0),
        BPF_JUMP(BPF_JMP | BPF_JA, 0, 0, 0),
#endif
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_memfd_create, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, ERR),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_shmget, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, ERR),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_mmap, 0, 3),
        /* the low word of the flags (little-endian) */
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[3])),
        BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0x01 | 0x20), /* MAP_SHARED(_VALIDATE) bit, MAP_ANONYMOUS */
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x01 | 0x20, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, ERR),
    };
    struct sock_fprog prog = {(unsigned short)(sizeof f / sizeof f[0]), f};
#undef ERR
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0))
        return snprintf(why, why_size, "seccomp: cannot install the filter: %s", strerror(errno)), -1;
    return 0;
#else
    snprintf(why, why_size, "seccomp: no filter for this architecture");
    return -1;
#endif
}

/* A root qualify's kernel process keeps uid 0 but no capability, now or
 * after an exec (SECBIT_NOROOT, an empty bounding set); so does one whose
 * user namespace gave it every capability inside it. */
static int drop_caps(char *why, size_t why_size)
{
    struct {
        uint32_t version;
        int pid;
    } h = {0x20080522 /* _LINUX_CAPABILITY_VERSION_3 */, 0};
    struct {
        uint32_t effective, permitted, inheritable;
    } d[2];
    int c;
    memset(d, 0, sizeof d);
    if (prctl(PR_SET_SECUREBITS, SECBIT_NOROOT | SECBIT_NOROOT_LOCKED, 0, 0, 0) && errno != EPERM)
        return snprintf(why, why_size, "capabilities: securebits: %s", strerror(errno)), -1;
    for (c = 0; c < 64; c++)
        if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) && errno == EINVAL)
            break;
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
    if (syscall(SYS_capset, &h, d))
        return snprintf(why, why_size, "capabilities: capset: %s", strerror(errno)), -1;
    return 0;
}
#endif

int _qf_sbx_enter(qf_sbx_kind kind, int device, int memory, char *why, size_t why_size)
{
#ifdef __linux__
    char scratch[600];
    if (mode == QF_SANDBOX_OFF)
        return 0;
    if (_qf_sbx_probe(why, why_size))
        return -1;
    _qf_sbx_scratch_path(getpid(), scratch, sizeof scratch);
    if (!scratch[0] || (mkdir(scratch, 0700) && errno != EEXIST))
        return snprintf(why, why_size, "cannot make the scratch directory %s: %s", scratch,
                        scratch[0] ? strerror(errno) : "no scratch root"),
               -1;
    setenv("TMPDIR", scratch, 1);
    if (M.ns && enter_namespaces(why, why_size))
        return -1;
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
        return snprintf(why, why_size, "no_new_privs: %s", strerror(errno)), -1;
    if (M.landlock && enter_landlock(kind, device, scratch, why, why_size))
        return -1;
    if (memory && !device && M.seccomp && enter_seccomp(why, why_size))
        return -1;
    /* root's, or those the new user namespace gave */
    if ((M.root || M.ns) && drop_caps(why, why_size))
        return -1;
    return 0;
#else
    (void)kind;
    (void)device;
    (void)memory;
    if (mode == QF_SANDBOX_REQUIRE)
        return snprintf(why, why_size, "no sandbox on this system"), -1;
    return 0;
#endif
}
