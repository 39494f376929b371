/* qf_provenance.h: where and with what a report was produced.
 *
 * A report carries its provenance once (docs/reports.md "Provenance"):
 * the CPU (model, vendor, ISA features the running process can use), the
 * OS, the compiler and the flags libqualify was built with, the MPFR and
 * GMP versions, the qualify version and git revision, the GPU (name,
 * architecture, runtime and driver versions) when a device back end ran,
 * and the SHA-256 of every suite file.  Without these a verdict cannot be
 * tied to the hardware and software that produced it.
 *
 * Strings are fixed-size and always NUL-terminated; a value that could not
 * be found is "unknown" (the GPU slots are "" when no GPU was used).  Suite
 * files are an owned array: release with qf_provenance_free().
 */
#ifndef QF_PROVENANCE_H
#define QF_PROVENANCE_H

#include <stddef.h>

#include "qf_sha256.h"
#include "qf_status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define QF_PROV_STR  256
#define QF_PROV_LONG 1024

typedef struct qf_provenance_file {
    char *path;                 /* as given to qf_provenance_add_file */
    char sha256[QF_SHA256_HEX]; /* lowercase hex */
} qf_provenance_file;

/* A device of a `qualify run --devices` sweep (docs/runner.md
 * "Devices"): what the pairs ran on and what happened to it. */
#define QF_PROV_DEVICES 16
typedef struct qf_provenance_device {
    int index;     /* the back end's device index */
    char uuid[64]; /* "" when the back end does not say */
    char name[128];
    size_t pairs;  /* records of the sweep that ran on it */
    size_t faults; /* pairs that faulted on it and were run again on another */
    int out;       /* 1: taken out of the rotation */
    char why[256]; /* why (the fault that showed it), or "" */
} qf_provenance_device;

/* The confinement of kernel processes (docs/security.md "The sandbox"):
 * one entry per distinct confinement, with the kernels it held. */
#define QF_PROV_SANDBOX 8
typedef struct qf_provenance_sandbox {
    char how[QF_PROV_LONG]; /* e.g. "Landlock ABI 7: writes only its scratch, ...", "none (--no-sandbox)" */
    char *kernels;          /* space-separated kernel names (malloc'd) */
} qf_provenance_sandbox;

typedef struct qf_provenance {
    char timestamp[32];             /* UTC, ISO 8601: 2026-11-29T16:10:00Z */
    char cpu_vendor[64];            /* GenuineIntel, AuthenticAMD, ARM implementer 0x41 */
    char cpu_model[QF_PROV_STR];    /* /proc/cpuinfo "model name" */
    char cpu_isa[QF_PROV_LONG];     /* space-separated features usable here */
    int cpu_count;                  /* online logical CPUs */
    char os[QF_PROV_STR];           /* uname: sysname release machine */
    char os_version[QF_PROV_STR];   /* uname version */
    char os_distro[QF_PROV_STR];    /* /etc/os-release PRETTY_NAME */
    char compiler[QF_PROV_STR];     /* "gcc 12.2.0" */
    char build_flags[QF_PROV_LONG]; /* what the compiler tells about the build */
    char version_mpfr[64];
    char version_gmp[64];
    char qualify_version[64];
    char git_revision[64];      /* 40 hex digits, "unknown" */
    int git_dirty;              /* 1: tracked files differ from the revision; -1: unknown */
    char gpu_name[QF_PROV_STR]; /* "" when no GPU was used */
    char gpu_arch[64];          /* sm_90, gfx942 */
    char gpu_runtime[64];       /* "CUDA 12.4", "HIP 6.0" */
    char gpu_driver[64];
    size_t nfiles;
    qf_provenance_file *files; /* suite files and their hashes */
    /* --devices: the devices listed (0: the option was not given) and how
     * many pairs were run again after a device fault. */
    size_t ndevices;
    qf_provenance_device devices[QF_PROV_DEVICES];
    size_t device_retries;
    size_t nsandbox;
    qf_provenance_sandbox sandbox[QF_PROV_SANDBOX];
} qf_provenance;

/* Fill p with everything that can be found from this process.  source_dir:
 * the qualify source tree, whose git revision is asked with `git -C DIR
 * rev-parse HEAD`; NULL means the tree libqualify was built from.  When
 * that is not a git checkout (an installed qualify): the QF_GIT_REVISION
 * macro libqualify was built with, if any, else "unknown".  Never fails for
 * lack of information; QF_EINVAL for p NULL.  p must not hold files. */
qf_status qf_provenance_collect(qf_provenance *p, const char *source_dir);

/* Record a suite (or included) file and its SHA-256.  QF_EIO when it cannot
 * be read, QF_ENOMEM, QF_EINVAL for NULL arguments.  A path already
 * recorded is not added twice. */
qf_status qf_provenance_add_file(qf_provenance *p, const char *path);

/* Set the GPU slots (any may be NULL: left as they are).  Values longer
 * than a slot are truncated. */
void qf_provenance_set_gpu(qf_provenance *p, const char *name, const char *arch, const char *runtime,
                           const char *driver);

/* Copy s into a slot of size n, truncating; NULL gives "unknown". */
void qf_provenance_set(char *slot, size_t n, const char *s);

/* Release the file list; p stays usable (nfiles = 0). */
/* Record that kernel ran under confinement how (grouped by how; a kernel
 * named twice under one how is kept once).  QF_ENOMEM, or QF_EUNSUPPORTED when
 * more than QF_PROV_SANDBOX distinct confinements are given. */
qf_status qf_provenance_add_sandbox(qf_provenance *p, const char *how, const char *kernel);

void qf_provenance_free(qf_provenance *p);

#ifdef __cplusplus
}
#endif

#endif /* QF_PROVENANCE_H */
