/* _registry.h: what plugin.c needs of the registry (private). */
#ifndef QF__REGISTRY_H
#define QF__REGISTRY_H

#include "qf_kernel.h"

/* Start registering for a plugin: later qf_registry_add calls are
 * attributed to it (path copied, handle kept for dlclose at free).
 * Returns the plugin's index, or -1 when out of memory. */
int _qf_registry_plugin_begin(qf_registry *r, const char *path, void *handle);
/* The same for any owner of kernels whose strings and tables must live as
 * long as the registry (adapters): close(handle) runs at free, or when a
 * failed registration is rolled back. */
int _qf_registry_owner_begin(qf_registry *r, const char *origin, void *handle, void (*close)(void *));
/* End it: ok keeps its kernels; !ok removes them and closes the handle. */
void _qf_registry_plugin_end(qf_registry *r, int plugin, int ok);
/* Set the message of the last failure (printf style). */
void _qf_registry_set_error(qf_registry *r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Kernel i's dtype tuples as it registered them, before a claim file
 * replaced their claims (qf_registry_set_claim): the runner tells a claim
 * that leaves a kernel nothing to run from a suite that never had one. */
const qf_dtype_tuple *_qf_registry_registered_tuples(const qf_registry *r, size_t i);
/* Close a handle (dlclose), in plugin.c. */
void _qf_plugin_close(void *handle);
/* The host table a plugin (or a GPU module, qualify/gpumod.c) is given. */
void _qf_plugin_host_fill(qf_plugin_host *h, const char *path);

/* Seconds a trial load may take before it is killed (QF_PLUGIN_LOAD_TIMEOUT
 * in the environment overrides). */
#define QF_PLUGIN_TRIAL_S 10
/* Run body(ctx), a whole load (dlopen, constructors, registration), in a
 * forked child first, so that a library that crashes, exits or hangs while
 * loading cannot take qualify down: 0 when the child came back (whatever
 * body returned: the caller then loads for real and reports its own
 * errors), -1 with "WHAT: ..." in msg when it crashed, exited or ran past
 * the limit (killed with its process group).  Inside a trial child it
 * returns 0 at once.  In plugin.c. */
int _qf_load_trial(const char *what, int (*body)(void *), void *ctx, char *msg, size_t msg_size);

#endif
