/* cli/slurm.c: 'qualify slurm': a sharded sweep as a Slurm job array
 * (docs/cluster.md).
 *
 * Slurm does the distribution; qualify only writes two batch scripts: an
 * array job whose task I runs `qualify run SUITE --shard I/N` into its own
 * directory, and a merge job, dependent on the whole array, that runs
 * `qualify merge` over the N directories.  The merge job depends on the
 * array with afterany, not afterok: a shard whose kernels FAILED exits 1
 * by design and must still be merged, while a shard that did not finish
 * makes the merge fail naming it (qualify merge checks every shard). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "_escape.h"
#include "_files.h"
#include "cli.h"

extern char **environ;

static const char *help_text =
    "usage: qualify slurm SUITE.yaml --shards N [options] [-- RUN-OPTIONS...]\n"
    "\n"
    "Write (and with --submit, submit through sbatch) a Slurm job array that\n"
    "runs the sweep of SUITE in N shards, task I running\n"
    "`qualify run SUITE --shard I/N -o DIR/shard-I RUN-OPTIONS`, and a job\n"
    "that waits for the whole array and runs `qualify merge` into DIR/merged\n"
    "(the same results.json, report.md, junit.xml and journal as an unsharded\n"
    "run).  A task restarted by Slurm (requeue) resumes from its journal.\n"
    "\n"
    "  --shards N           number of shards (array tasks 0..N-1; 1..1000)\n"
    "  -o, --output DIR     where the scripts, shard and merged results go\n"
    "                       (default ./qualify-slurm)\n"
    "  --partition P        #SBATCH --partition\n"
    "  --account A          #SBATCH --account\n"
    "  --time T             #SBATCH --time of each shard task (Slurm's forms:\n"
    "                       MM, HH:MM:SS, D-HH)\n"
    "  --cpus-per-task C    #SBATCH --cpus-per-task; the shard runs --jobs C\n"
    "  --mem SIZE           #SBATCH --mem per task (Slurm's form: 8G)\n"
    "  --gpus-per-task G    #SBATCH --gpus-per-task; with G > 1 the shard runs\n"
    "                       --devices all (unless RUN-OPTIONS give --devices)\n"
    "  --max-parallel K     at most K shard tasks at once (array %K)\n"
    "  --sbatch-option OPT  one more #SBATCH line for both jobs, as written\n"
    "                       (repeatable: --sbatch-option=--qos=long)\n"
    "  --qualify PATH       the qualify the tasks run (default: this one)\n"
    "  --submit             submit both jobs with sbatch and print their ids\n"
    "  --wait               with --submit: wait for the merge job and exit\n"
    "                       with its status\n"
    "  -h, --help           this text\n"
    "\n"
    "RUN-OPTIONS (after --) are passed to every `qualify run` as they are\n"
    "(--plugin, --worker, --seed, --kernel ...); paths in them should be\n"
    "absolute or valid from the directory qualify slurm ran in, where the\n"
    "jobs run.\n"
    "Exit codes: 0 scripts written (and submitted; with --wait, the merged\n"
    "sweep passed); 1 with --wait, the merged sweep failed (qualify run's 1)\n"
    "or the merge job was killed; 2 bad usage, a directory that cannot be\n"
    "written, sbatch refused a job, or (with --wait) the merge found a shard\n"
    "missing, unfinished or from another sweep (qualify merge's 2); 3 with\n"
    "--wait, no pair of the merged sweep ran (qualify merge's 3).\n";

typedef struct slurm_opts {
    long shards, max_parallel;
    const char *suite, *out, *partition, *account, *time, *mem;
    long cpus, gpus;
    const char *sbatch_opts[32];
    size_t nsbatch;
    const char *qualify;
    int submit, wait;
    char *const *run_args;
    int nrun_args;
} slurm_opts;

/* Characters an #SBATCH line and Slurm's file name patterns take as they
 * are: no blank, quote, backslash, '%' (Slurm's own patterns: %a, %j) or
 * anything a shell would expand. */
static int sbatch_plain(const char *s)
{
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              strchr("/._-=,:+@", *s)))
            return 0;
    return 1;
}

/* The #SBATCH lines both jobs share. */
static void common_header(FILE *f, const slurm_opts *o)
{
    size_t i;
    fputs("#!/bin/sh\n", f);
    if (o->partition)
        fprintf(f, "#SBATCH --partition=%s\n", o->partition);
    if (o->account)
        fprintf(f, "#SBATCH --account=%s\n", o->account);
    for (i = 0; i < o->nsbatch; i++)
        fprintf(f, "#SBATCH %s\n", o->sbatch_opts[i]);
}

/* The shell lines that set Q (qualify), D (the output directory) and cd
 * to where qualify slurm ran (relative paths of RUN-OPTIONS). */
static void common_body(FILE *f, const slurm_opts *o, const char *cwd)
{
    fputs("set -u\ncd ", f);
    _qf_esc_sh(f, cwd);
    fputs(" || exit 2\nQ=", f);
    _qf_esc_sh(f, o->qualify);
    fputs("\nD=", f);
    _qf_esc_sh(f, o->out);
    fputc('\n', f);
}

static int has_devices_option(const slurm_opts *o)
{
    int i;
    for (i = 0; i < o->nrun_args; i++)
        if (!strcmp(o->run_args[i], "--devices") || !strncmp(o->run_args[i], "--devices=", 10))
            return 1;
    return 0;
}

static int write_shards(const char *path, const slurm_opts *o, const char *cwd)
{
    int i;
    _qf_out out; /* beside path, renamed over it (_files.h) */
    FILE *f = _qf_out_open(&out, path, _QF_OUT_SYNC, NULL, 0);
    if (!f)
        return -1;
    common_header(f, o);
    fprintf(f, "#SBATCH --job-name=qualify-shards\n#SBATCH --array=0-%ld", o->shards - 1);
    if (o->max_parallel > 0)
        fprintf(f, "%%%ld", o->max_parallel);
    fprintf(f, "\n#SBATCH --output=%s/slurm/shard-%%a.log\n#SBATCH --requeue\n", o->out);
    if (o->time)
        fprintf(f, "#SBATCH --time=%s\n", o->time);
    if (o->cpus > 0)
        fprintf(f, "#SBATCH --cpus-per-task=%ld\n", o->cpus);
    if (o->mem)
        fprintf(f, "#SBATCH --mem=%s\n", o->mem);
    if (o->gpus > 0)
        fprintf(f, "#SBATCH --gpus-per-task=%ld\n", o->gpus);
    fprintf(f, "# Written by qualify slurm (docs/cluster.md): shard I of %ld of\n# ", o->shards);
    _qf_esc_term(f, o->suite);
    fputs("\n", f);
    common_body(f, o, cwd);
    fputs("I=${SLURM_ARRAY_TASK_ID:?not a Slurm array task}\n"
          "S=\"$D/shard-$I\"\n"
          "# A requeued task goes on from its journal instead of starting over.\n"
          "R=\n"
          "[ -s \"$S/journal.jsonl\" ] && R=--resume\n",
          f);
    fputs("\"$Q\" run ", f);
    _qf_esc_sh(f, o->suite);
    fprintf(f, " --shard \"$I/%ld\" -o \"$S\" -q $R", o->shards);
    if (o->cpus > 0)
        fprintf(f, " --jobs %ld", o->cpus);
    /* Slurm shows a task its G GPUs as devices 0..G-1 (CUDA_VISIBLE_DEVICES
     * or ROCR_VISIBLE_DEVICES): use them all unless the options choose. */
    if (o->gpus > 1 && !has_devices_option(o))
        fputs(" --devices all", f);
    for (i = 0; i < o->nrun_args; i++) {
        fputc(' ', f);
        _qf_esc_sh(f, o->run_args[i]);
    }
    fputs("\nrc=$?\n"
          "# 1 is a verdict (a kernel FAILED), which the merge reports: the task\n"
          "# itself succeeded.  2 and signals are errors of the task.\n"
          "[ \"$rc\" -le 1 ] && exit 0\n"
          "exit \"$rc\"\n",
          f);
    return _qf_out_commit(&out, NULL, 0) == QF_OK ? 0 : -1;
}

static int write_merge(const char *path, const slurm_opts *o, const char *cwd)
{
    long i;
    _qf_out out; /* beside path, renamed over it (_files.h) */
    FILE *f = _qf_out_open(&out, path, _QF_OUT_SYNC, NULL, 0);
    if (!f)
        return -1;
    common_header(f, o);
    fprintf(f, "#SBATCH --job-name=qualify-merge\n#SBATCH --output=%s/slurm/merge.log\n", o->out);
    fputs("# Written by qualify slurm (docs/cluster.md): merges every shard; a\n"
          "# missing or unfinished one is an error naming it (exit 2).\n",
          f);
    common_body(f, o, cwd);
    fputs("\"$Q\" merge", f);
    for (i = 0; i < o->shards; i++)
        fprintf(f, " \"$D/shard-%ld\"", i);
    fputs(" -o \"$D/merged\"\nrc=$?\necho \"$rc\" >\"$D/merged.rc\"\nexit \"$rc\"\n", f);
    return _qf_out_commit(&out, NULL, 0) == QF_OK ? 0 : -1;
}

/* Start sbatch with args and read its first line (the --parsable job id,
 * "ID" or "ID;CLUSTER") into id: sbatch prints it at once, also with
 * --wait, before it waits for the job.  The child's pid, -1 (errno set)
 * when sbatch could not be started; *out_fd the rest of its output. */
static pid_t sbatch_start(char *const *args, char *id, size_t id_size, int *out_fd)
{
    int fd[2], e;
    pid_t pid;
    posix_spawn_file_actions_t fa;
    size_t len = 0;
    char c;
    if (pipe2(fd, O_CLOEXEC))
        return -1;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fd[1], STDOUT_FILENO);
    e = posix_spawnp(&pid, "sbatch", &fa, NULL, args, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fd[1]);
    if (e) {
        close(fd[0]);
        errno = e;
        return -1;
    }
    while (len + 1 < id_size && read(fd[0], &c, 1) == 1 && c != '\n')
        id[len++] = c;
    id[len] = '\0';
    id[strcspn(id, ";")] = '\0';
    *out_fd = fd[0];
    return pid;
}

/* The exit status of the sbatch started as pid, once what else it writes
 * on fd has been read (and dropped). */
static int sbatch_finish(pid_t pid, int fd)
{
    int st;
    char buf[256];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
        ;
    close(fd);
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int submit(const slurm_opts *o, const char *shards_sh, const char *merge_sh)
{
    char array_id[64], merge_id[64], dep[96];
    char *a1[] = { "sbatch", "--parsable", (char *)shards_sh, NULL };
    char *a2[6];
    size_t k = 0;
    int rc, fd = -1;
    pid_t pid = sbatch_start(a1, array_id, sizeof array_id, &fd);
    rc = pid < 0 ? -1 : sbatch_finish(pid, fd);
    if (rc || !*array_id) {
        fprintf(stderr, "qualify slurm: sbatch %s: %s\n", shards_sh,
                pid < 0 ? strerror(errno) : "refused the array job (its message is above)");
        return QF_EXIT_USAGE;
    }
    printf("array job %s: %ld shard tasks\n", array_id, o->shards);
    fflush(stdout);
    snprintf(dep, sizeof dep, "--dependency=afterany:%s", array_id);
    a2[k++] = "sbatch";
    a2[k++] = "--parsable";
    a2[k++] = dep;
    if (o->wait)
        a2[k++] = "--wait";
    a2[k++] = (char *)merge_sh;
    a2[k] = NULL;
    pid = sbatch_start(a2, merge_id, sizeof merge_id, &fd);
    if (pid < 0 || !*merge_id) {
        if (pid >= 0)
            sbatch_finish(pid, fd);
        fprintf(stderr, "qualify slurm: sbatch %s: %s\n", merge_sh,
                pid < 0 ? strerror(errno) : "refused the merge job (its message is above)");
        return QF_EXIT_USAGE;
    }
    printf("merge job %s: %s/merged once every shard task has ended\n", merge_id, o->out);
    fflush(stdout);
    /* With --wait, sbatch exits with the job's status: the merge's 0, 1,
     * 2 or 3 (docs/cli.md); without, 0 once the job is queued. */
    rc = sbatch_finish(pid, fd);
    if (!o->wait)
        return rc ? QF_EXIT_USAGE : QF_EXIT_OK;
    printf("merge job %s ended with status %d\n", merge_id, rc);
    return rc >= 0 && rc <= QF_EXIT_NOTHING ? rc : QF_EXIT_FAIL;
}

static int parse_count(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    *out = strtol(s, &end, 10);
    return errno || end == s || *end || *out < lo || *out > hi ? -1 : 0;
}

enum { OPT_SHARDS = 256, OPT_PARTITION, OPT_ACCOUNT, OPT_TIME, OPT_CPUS, OPT_MEM, OPT_GPUS, OPT_MAXPAR,
       OPT_SBOPT, OPT_QUALIFY, OPT_SUBMIT, OPT_WAIT };

static int parse_args(int argc, char **argv, slurm_opts *o)
{
    static const struct option longopts[] = {
        { "shards", required_argument, NULL, OPT_SHARDS },
        { "output", required_argument, NULL, 'o' },
        { "partition", required_argument, NULL, OPT_PARTITION },
        { "account", required_argument, NULL, OPT_ACCOUNT },
        { "time", required_argument, NULL, OPT_TIME },
        { "cpus-per-task", required_argument, NULL, OPT_CPUS },
        { "mem", required_argument, NULL, OPT_MEM },
        { "gpus-per-task", required_argument, NULL, OPT_GPUS },
        { "max-parallel", required_argument, NULL, OPT_MAXPAR },
        { "sbatch-option", required_argument, NULL, OPT_SBOPT },
        { "qualify", required_argument, NULL, OPT_QUALIFY },
        { "submit", no_argument, NULL, OPT_SUBMIT },
        { "wait", no_argument, NULL, OPT_WAIT },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    int c, end = 1;
    /* RUN-OPTIONS start after the first "--"; options and SUITE before it
     * in any order. */
    while (end < argc && strcmp(argv[end], "--"))
        end++;
    o->run_args = argv + (end < argc ? end + 1 : argc);
    o->nrun_args = end < argc ? argc - end - 1 : 0;
    optind = 1;
    while ((c = getopt_long(end, argv, "o:h", longopts, NULL)) != -1) {
        switch (c) {
        case OPT_SHARDS:
            if (parse_count(optarg, 1, 1000, &o->shards))
                return qf_cli_usage_error("slurm", "--shards %s: a count from 1 to 1000", optarg);
            break;
        case 'o': o->out = optarg; break;
        case OPT_PARTITION: o->partition = optarg; break;
        case OPT_ACCOUNT: o->account = optarg; break;
        case OPT_TIME: o->time = optarg; break;
        case OPT_MEM: o->mem = optarg; break;
        case OPT_CPUS:
            if (parse_count(optarg, 1, 100000, &o->cpus))
                return qf_cli_usage_error("slurm", "--cpus-per-task %s: a positive count", optarg);
            break;
        case OPT_GPUS:
            if (parse_count(optarg, 1, 1024, &o->gpus))
                return qf_cli_usage_error("slurm", "--gpus-per-task %s: a positive count", optarg);
            break;
        case OPT_MAXPAR:
            if (parse_count(optarg, 1, 100000, &o->max_parallel))
                return qf_cli_usage_error("slurm", "--max-parallel %s: a positive count", optarg);
            break;
        case OPT_SBOPT:
            if (o->nsbatch == sizeof o->sbatch_opts / sizeof o->sbatch_opts[0])
                return qf_cli_usage_error("slurm", "more than 32 --sbatch-option");
            if (strpbrk(optarg, "\n\r"))
                return qf_cli_usage_error("slurm", "--sbatch-option: one line, without a line break");
            o->sbatch_opts[o->nsbatch++] = optarg;
            break;
        case OPT_QUALIFY: o->qualify = optarg; break;
        case OPT_SUBMIT: o->submit = 1; break;
        case OPT_WAIT: o->wait = 1; break;
        case 'h': fputs(help_text, stdout); return -1;
        default: return qf_cli_usage_error("slurm", "see 'qualify slurm --help'");
        }
    }
    if (optind >= end)
        return qf_cli_usage_error("slurm", "no suite (qualify slurm SUITE.yaml --shards N)");
    o->suite = argv[optind++];
    if (optind < end)
        return qf_cli_usage_error("slurm", "unexpected argument '%s' (run options go after --)", argv[optind]);
    if (!o->shards)
        return qf_cli_usage_error("slurm", "--shards N is required");
    if (o->wait && !o->submit)
        return qf_cli_usage_error("slurm", "--wait needs --submit");
    return QF_EXIT_OK;
}

/* Values that go into #SBATCH lines as they are. */
static int check_sbatch_values(const slurm_opts *o)
{
    const char *v[] = { o->partition, o->account, o->time, o->mem };
    const char *n[] = { "--partition", "--account", "--time", "--mem" };
    size_t i;
    for (i = 0; i < 4; i++)
        if (v[i] && (!*v[i] || !sbatch_plain(v[i])))
            return qf_cli_usage_error("slurm", "%s '%s': letters, digits and /._-=,:+@ only", n[i], v[i]);
    return QF_EXIT_OK;
}

int qf_cli_slurm(int argc, char **argv)
{
    slurm_opts o = { 0 };
    char suite[PATH_MAX], out[PATH_MAX], self[PATH_MAX], cwd[PATH_MAX], sh1[PATH_MAX + 32], sh2[PATH_MAX + 32];
    ssize_t n;
    int rc = parse_args(argc, argv, &o);
    if (rc < 0)
        return QF_EXIT_OK;
    if (rc || (rc = check_sbatch_values(&o)))
        return rc;
    if (!realpath(o.suite, suite))
        return qf_cli_usage_error("slurm", "%s: %s", o.suite, strerror(errno));
    o.suite = suite;
    if (!getcwd(cwd, sizeof cwd))
        return qf_cli_usage_error("slurm", "the current directory: %s", strerror(errno));
    o.out = o.out ? o.out : "qualify-slurm";
    if (snprintf(sh1, sizeof sh1, "%s/slurm", o.out) >= (int)sizeof sh1 || qf_cli_mkdir_p(sh1) || !realpath(o.out, out))
        return qf_cli_usage_error("slurm", "-o %s: cannot create it: %s", o.out, strerror(errno));
    if (!sbatch_plain(out))
        return qf_cli_usage_error("slurm", "-o %s: the absolute path %s goes into #SBATCH --output lines: "
                                           "letters, digits and /._-=,:+@ only", o.out, out);
    o.out = out;
    if (!o.qualify) {
        n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n <= 0)
            return qf_cli_usage_error("slurm", "cannot find this qualify (/proc/self/exe); give --qualify PATH");
        self[n] = '\0';
        o.qualify = self;
    }
    snprintf(sh1, sizeof sh1, "%s/slurm/shards.sbatch", out);
    snprintf(sh2, sizeof sh2, "%s/slurm/merge.sbatch", out);
    if (write_shards(sh1, &o, cwd) || write_merge(sh2, &o, cwd))
        return qf_cli_usage_error("slurm", "cannot write %s/slurm: %s", out, strerror(errno));
    printf("wrote %s\n      %s\n", sh1, sh2);
    if (!o.submit) {
        printf("submit with:\n  A=$(sbatch --parsable %s)\n  sbatch --dependency=afterany:$A %s\n", sh1, sh2);
        return QF_EXIT_OK;
    }
    fflush(stdout);
    return submit(&o, sh1, sh2);
}
