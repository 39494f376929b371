/* plugin.c: load kernels from a shared object (qf_registry_load_plugin).
 *
 * The plugin exports one function, QF_PLUGIN_ENTRY, and reaches the host
 * only through the qf_plugin_host table it is given: the qualify binary
 * links libqualify statically, so a plugin cannot count on resolving
 * libqualify's symbols against it.
 */
#define _POSIX_C_SOURCE 200809L

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "_registry.h"
#include "qf_kernel.h"

void _qf_plugin_close(void *handle)
{
    if (handle)
        dlclose(handle);
}

/* The table handed to the entry point.  It is on the loader's stack: the
 * same object loaded twice shares its statics, so a table owned per load
 * could be freed under a plugin that kept it.  Plugins copy what they
 * keep; the function pointers are valid for the life of the process.
 * The GPU modules get the same table (qualify/gpumod.c). */
void _qf_plugin_host_fill(qf_plugin_host *h, const char *path)
{
    memset(h, 0, sizeof *h);
    h->abi_version = QF_KERNEL_ABI_VERSION;
    h->struct_size = (uint32_t)sizeof *h;
    h->add = qf_registry_add;
    h->arith_claim_default = qf_arith_claim_default;
    h->format_get = qf_format_get;
    h->plugin_path = path;
    h->format_lookup = qf_format_lookup;
    h->format_decode = qf_format_decode;
    h->format_encode = qf_format_encode;
    h->format_decode_array = qf_format_decode_array;
    h->format_encode_array = qf_format_encode_array;
    h->format_array_bytes = qf_format_array_bytes;
    h->format_pack4 = qf_format_pack4;
    h->format_unpack4 = qf_format_unpack4;
    h->encode_opts_default = qf_encode_opts_default;
    h->rng_u64 = qf_rng_u64;
    h->block_scale_count = qf_block_scale_count;
    h->tensor_init = qf_tensor_init;
    h->tensor_numel = qf_tensor_numel;
    h->tensor_dense_bytes = qf_tensor_dense_bytes;
    h->op_name = qf_op_name;
    h->op_slot_count = qf_op_slot_count;
    h->op_slot_name = qf_op_slot_name;
    h->op_dims = qf_op_dims;
    h->kernel_check = qf_kernel_check;
    h->kernel_dtype = qf_kernel_dtype;
    h->status_str = qf_status_str;
}

qf_status qf_registry_load_plugin(qf_registry *r, const char *path)
{
    char buf[4096];
    const char *open_path = path;
    void *h, *sym;
    qf_plugin_register_fn fn;
    qf_plugin_host host;
    size_t before;
    int pl;
    qf_status s;

    if (!r)
        return QF_EINVAL;
    if (!path || !*path) {
        _qf_registry_set_error(r, "no plugin path given");
        return QF_EINVAL;
    }
    /* dlopen searches the library path for a name without a slash; a user
     * who writes --plugin libmine.so means the file in this directory. */
    if (!strchr(path, '/')) {
        if (snprintf(buf, sizeof buf, "./%s", path) >= (int)sizeof buf) {
            _qf_registry_set_error(r, "plugin path '%.64s...' is too long", path);
            return QF_EINVAL;
        }
        open_path = buf;
    }
    dlerror();
    h = dlopen(open_path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        _qf_registry_set_error(r, "cannot load plugin %s: %s", path, e ? e : "unknown error");
        return QF_EIO;
    }
    dlerror();
    sym = dlsym(h, QF_PLUGIN_ENTRY);
    if (!sym) {
        dlclose(h);
        _qf_registry_set_error(r, "plugin %s does not export %s() (docs/kernels.md, \"Writing a plugin\")",
                               path, QF_PLUGIN_ENTRY);
        return QF_EIO;
    }
    /* POSIX guarantees that a data pointer from dlsym converts to a function
     * pointer; copying the bits avoids the ISO C cast warning. */
    memcpy(&fn, &sym, sizeof fn);

    pl = _qf_registry_plugin_begin(r, path, h);
    if (pl < 0) {
        dlclose(h);
        _qf_registry_set_error(r, "out of memory loading plugin %s", path);
        return QF_ENOMEM;
    }
    _qf_plugin_host_fill(&host, path);

    before = qf_registry_count(r);
    s = fn(r, &host);
    if (s == QF_OK && qf_registry_count(r) == before) {
        _qf_registry_set_error(r, "%s() registered no kernel", QF_PLUGIN_ENTRY);
        s = QF_EINVAL;
    } else if (s != QF_OK && !qf_registry_error(r)[0]) {
        _qf_registry_set_error(r, "%s() failed: %s", QF_PLUGIN_ENTRY, qf_status_str(s));
    }
    _qf_registry_plugin_end(r, pl, s == QF_OK);
    return s;
}
