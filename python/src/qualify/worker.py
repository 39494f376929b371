"""The worker side of qualify's kernel-worker protocol (docs/workers.md, v1).

A worker is a long-lived process that announces kernels and runs the cases
``qualify run --worker CMD`` sends it.  This module lets a Python function
be such a kernel::

    import numpy as np, qualify.worker as qw

    @qw.kernel("gemm.numpy.f32", op="gemm", dtypes=["f32.f32.f32.f32"],
               claim={"acc_format": "float32", "sum_order": "any"})
    def gemm(a, b, out, **p):
        out[...] = a @ b

    qw.serve()

Why it is shaped this way:

- Tensors stay in the host's POSIX shared-memory object; the function gets
  numpy arrays *over* that memory (zero copy), so what it writes into an
  output is what the host checks, canaries and poison included.
- The function is called as ``fn(*inputs, *outputs, **params)`` with the
  slots in the order the ``run`` message lists them and ``params`` the
  op's fields (``M``, ``N``, ``K``, ``alpha`` ...) plus ``threads``,
  ``seed`` (an int) and ``dtype`` (the tuple's name), so one signature
  serves every op.
- ``raise Unsupported(msg)`` declines a case (verdict UNSUPPORTED); any
  other exception is the kernel failing (FAILED, with its message).  A bug
  in the kernel therefore never kills the worker: only a crash does.
- Standard output carries the protocol, so while serving, anything else
  the process prints (Python ``print`` or C libraries writing to fd 1) is
  sent to standard error instead, where the host passes it through.

Nothing here imports torch, jax or ml_dtypes unless used.
"""

from __future__ import annotations

import ctypes
import json
import math
import mmap
import os
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, IO, Iterable, Sequence

import numpy as np

from . import formats as _fmt

__all__ = [
    "PROTOCOL_VERSION",
    "Unsupported",
    "Operand",
    "KernelSpec",
    "kernel",
    "registered",
    "clear",
    "hello_message",
    "handle_run",
    "serve",
    "to_torch",
    "to_jax",
    "assign",
    "parse_dtype",
]

PROTOCOL_VERSION = 1
MAX_LINE = 1 << 20  # docs/workers.md: a message is at most 1 MiB

KINDS = ("reference", "optimized", "model", "known-bad")
# Operand layouts a kernel may take (qf_kernel.h QF_LAYOUT_*; docs/workers.md).
LAYOUTS = ("dense", "ld", "col", "batch")

# Suite dtype roles per ABI op (docs/suites.md "Ops"), and how a tuple over
# those roles becomes the kernel record's per-slot formats (docs/kernels.md
# "Ops, slots and dimensions", kernels/cpu/table.c):
#   inputs  - the input roles, in order
#   has_acc - whether the tuple has an acc role (all but quantize)
#   slots   - builds (in_slots, out_slots) from {role: canonical format}
_OPS: dict[str, tuple[tuple[str, ...], bool, Callable[[dict[str, str]], tuple[list[str], list[str]]]]] = {
    # gemm: c takes the output's format (table.c); d is the output.
    "gemm": (("a", "b"), True, lambda r: ([r["a"], r["b"], r["out"]], [r["out"]])),
    # attention: the runner sizes lse from out[1]; table.c gives it float32.
    "attention": (("q", "k", "v"), True, lambda r: ([r["q"], r["k"], r["v"]], [r["out"], "float32"])),
    "softmax": (("in",), True, lambda r: ([r["in"]], [r["out"]])),
    # norms: x, weight, bias; bias takes the weight's format.
    "rmsnorm": (("in", "weight"), True, lambda r: ([r["in"], r["weight"], r["weight"]], [r["out"]])),
    "layernorm": (("in", "weight"), True, lambda r: ([r["in"], r["weight"], r["weight"]], [r["out"]])),
    "l2norm": (("in",), True, lambda r: ([r["in"]], [r["out"]])),
    # activation: x (the gate for GLU) and up share the input format.
    "activation": (("in",), True, lambda r: ([r["in"], r["in"]], [r["out"]])),
    "rope": (("in",), True, lambda r: ([r["in"]], [r["out"]])),
    # moe_router: logits, sel_bias; weights, indices (plain int32 integers,
    # whose format the runner ignores; table.c repeats the weights').
    "moe_router": (("in",), True, lambda r: ([r["in"], r["in"]], [r["out"], r["out"]])),
    "quantize": (("in",), False, lambda r: ([r["in"]], [r["out"]])),
}


class Unsupported(Exception):
    """Raise from a kernel to decline a case outside its claim.

    The worker answers ``status: unsupported`` with the message, and the
    pair's verdict is UNSUPPORTED rather than FAILED.
    """


class ProtocolError(Exception):
    """A message from the host that the worker cannot act on."""


class Operand(np.ndarray):
    """A numpy array over the shared memory, with what qualify said of it.

    Named apart from torch's and jax's array types: a class called
    ``Tensor`` made torch say "must be Tensor, not Tensor" when one was
    handed to it (``to_torch`` converts it).

    Attributes: ``slot`` (``"a"``, ``"d"`` ...), ``format`` (the qualify
    format name; useful when the dtype is the raw code type because
    ml_dtypes is missing), ``scale`` (an Operand of the block scales, or
    None) with ``scale_kind``, ``scale_axis``, ``scale_block``,
    ``zero_point`` (int16 per scale for asymmetric integer groups, or
    None) and ``global_code`` (NVFP4's second-level tensor scale as
    float32 bits: given on inputs; on an output whose ``has_global`` is
    true the kernel sets it, and the worker sends it back).  It is an
    ndarray subclass only so these ride along; ``np.asarray(t)`` gives the
    plain array (still zero copy).
    """

    slot: str | None
    format: str | None
    scale: "Operand | None"
    scale_kind: str | None
    scale_axis: int | None
    scale_block: int | None
    zero_point: "Operand | None"
    global_code: int | None
    has_global: bool | None

    def __array_finalize__(self, obj: Any) -> None:
        for a in ("slot", "format", "scale", "scale_kind", "scale_axis", "scale_block", "zero_point",
                  "global_code", "has_global"):
            setattr(self, a, getattr(obj, a, None))


# The former name, for code written against it; left out of __all__ so that
# ``from qualify.worker import *`` cannot shadow torch's Tensor.
Tensor = Operand


# ---------------------------------------------------------------------------
# Declaring kernels


@dataclass
class KernelSpec:
    """One declared kernel: the record sent in hello plus the function."""

    name: str
    op: str
    fn: Callable[..., Any]
    dtypes: list[dict[str, Any]]
    kind: str = "optimized"
    description: str = ""
    archs: str = "cpu"
    limits: dict[str, Any] | None = None
    deterministic: bool = False
    device: str | None = None
    by_dtype: dict[str, dict[str, Any]] = field(default_factory=dict)
    layouts: tuple[str, ...] = ()

    def record(self) -> dict[str, Any]:
        """The KERNEL object of the hello message (docs/workers.md)."""
        rec: dict[str, Any] = {
            "name": self.name,
            "op": self.op,
            "kind": self.kind,
            "description": self.description,
            "archs": self.archs,
            "dtypes": [dict(t) for t in self.dtypes],
        }
        if self.limits is not None:
            rec["limits"] = self.limits
        rec["deterministic"] = bool(self.deterministic)
        if self.layouts:
            rec["layouts"] = list(self.layouts)
        return rec


_REGISTRY: dict[str, KernelSpec] = {}


def _claim_formats(claim: dict[str, Any]) -> dict[str, Any]:
    """Canonical names for the claim fields that hold a format."""
    out = dict(claim)
    for k in ("acc_format", "promote_format", "attn_p_format"):
        if isinstance(out.get(k), str) and out[k].lower() != "none":
            out[k] = _fmt.canonical(out[k])
    return out


# Scalings of an input (qf_scale_kind, qualify/registry.c's names).
SCALE_KINDS = ("none", "tensor", "row", "col", "block")


def _in_scales(spec: dict[str, Any], op: str) -> list[dict[str, Any]]:
    """A dtype dict's ``in_scale`` as the hello spells it (worker.c's
    tuple_scales): a list of {kind, format, block}, one per input slot."""
    where = f"dtype tuple {spec.get('name')!r}: in_scale"
    scales = spec["in_scale"]
    inputs, _, slots = _OPS[op]
    nslots = len(slots({r: "float32" for r in (*inputs, "acc", "out")})[0])
    if not isinstance(scales, (list, tuple)) or len(scales) > nslots:
        raise ValueError(f"{where} must list one scaling per input slot ({op} has {nslots})")
    out = []
    for i, e in enumerate(scales):
        e = {"kind": "none"} if e is None else e
        if not isinstance(e, dict) or set(e) - {"kind", "format", "block"}:
            raise ValueError(f"{where}[{i}]: {{\"kind\", \"format\", \"block\"}} or None, not {e!r}")
        kind = e.get("kind")
        if kind not in SCALE_KINDS:
            raise ValueError(f"{where}[{i}]: kind {kind!r} is not one of {', '.join(SCALE_KINDS)}")
        if kind == "none":
            out.append({"kind": "none"})
            continue
        if not isinstance(e.get("format"), str):
            raise ValueError(f"{where}[{i}]: a {kind} scale needs its format (e.g. 'float32', 'e8m0')")
        block = e.get("block", 0)
        if isinstance(block, bool) or not isinstance(block, int) or block < 0 or (kind == "block" and not block):
            raise ValueError(f"{where}[{i}]: block {block!r}: the elements per scale, a positive integer "
                             f"(needed for a block scale)")
        ent: dict[str, Any] = {"kind": kind, "format": _fmt.canonical(e["format"])}
        if block:
            ent["block"] = block
        out.append(ent)
    return out


def parse_dtype(op: str, spec: str | dict[str, Any], claim: dict[str, Any] | None = None) -> dict[str, Any]:
    """One dtype tuple of a kernel record, from a label or a dict.

    A label spells the suite's roles in order, joined with dots, as suites
    label tuples (docs/suites.md "Dtype tuples"): gemm ``a.b.acc.out``
    (``f32.f32.f32.f32``, ``bf16.bf16.f32.bf16``), attention
    ``q.k.v.acc.out``, norms ``in.weight.acc.out``, quantize ``in.out``,
    other ops ``in.acc.out``.  One name alone is the suites' shorthand:
    every input takes it, acc is float32 (float64 for float64 or integer
    inputs) and out the first input's format.  The acc role becomes the
    claim's ``acc_format``, because the runner matches a suite tuple to a
    kernel tuple by its inputs, ``out`` and ``acc_format``.

    A dict is ``{"name":..., "in": [...], "out": [...], "claim": {...}}``
    and is taken as written (formats checked and made canonical); its claim
    is merged over the kernel's.  It may add ``"in_scale"``, the input
    scalings of a scaled GEMM tuple: one entry per input slot, in slot
    order, each ``{"kind": "none"|"tensor"|"row"|"col"|"block", "format":
    NAME, "block": N}`` (``format`` needed unless the kind is none,
    ``block`` for block scales), or None for an unscaled slot; trailing
    slots may be left out (docs/workers.md "Kernel servers").
    """
    if op not in _OPS:
        raise ValueError(f"unknown op {op!r}; known: {', '.join(_OPS)}")
    base = _claim_formats(claim or {})
    if isinstance(spec, dict):
        unknown = set(spec) - {"name", "in", "out", "claim", "in_scale"}
        if unknown:
            raise ValueError(f"dtype tuple {spec!r}: unknown keys {sorted(unknown)}")
        if not spec.get("name") or not isinstance(spec.get("in"), list) or not isinstance(spec.get("out"), list):
            raise ValueError(f"dtype tuple {spec!r}: needs 'name', 'in' (a list) and 'out' (a list)")
        merged = dict(base)
        merged.update(_claim_formats(spec.get("claim") or {}))
        tup = {
            "name": str(spec["name"]),
            "in": [_fmt.canonical(x) for x in spec["in"]],
            "out": [_fmt.canonical(x) for x in spec["out"]],
            "claim": merged,
        }
        if spec.get("in_scale") is not None:
            tup["in_scale"] = _in_scales(spec, op)
        return tup
    if not isinstance(spec, str) or not spec:
        raise ValueError(f"dtype tuple {spec!r}: a label such as 'f32.f32.f32.f32' or a dict")
    inputs, has_acc, slots = _OPS[op]
    roles_order = list(inputs) + (["acc"] if has_acc else []) + ["out"]
    parts = spec.split(".")
    roles: dict[str, str] = {}
    if len(parts) == 1:
        if not has_acc:
            raise ValueError(f"dtype tuple {spec!r}: {op} needs 'out' (write in.out, e.g. 'f32.e4m3')")
        f = _fmt.lookup(parts[0])
        for r in inputs:
            roles[r] = f.name
        roles["acc"] = "float64" if (f.name == "float64" or f.kind == "int") else "float32"
        roles["out"] = f.name
    elif len(parts) == len(roles_order):
        for r, p in zip(roles_order, parts):
            roles[r] = _fmt.canonical(p)
    else:
        raise ValueError(
            f"dtype tuple {spec!r}: {op} tuples name {len(roles_order)} roles "
            f"({'.'.join(roles_order)}) or one format"
        )
    ins, outs = slots(roles)
    merged = dict(base)
    if has_acc:
        acc = roles["acc"]
        if "acc_format" in merged and merged["acc_format"] != acc:
            raise ValueError(
                f"dtype tuple {spec!r}: its acc role is {acc} but the claim says acc_format "
                f"{merged['acc_format']} (the runner matches tuples on acc_format)"
            )
        merged["acc_format"] = acc
    return {"name": spec, "in": ins, "out": outs, "claim": merged}


def kernel(
    name: str,
    op: str,
    dtypes: Sequence[str | dict[str, Any]],
    claim: dict[str, Any] | None = None,
    archs: str = "cpu",
    limits: dict[str, Any] | None = None,
    deterministic: bool = False,
    kind: str = "optimized",
    description: str = "",
    device: str | None = None,
    layouts: Sequence[str] = ("dense",),
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declare the decorated function a kernel this worker serves.

    ``claim`` holds fields of the arithmetic claim by their C names
    (docs/bounds.md), applied to every tuple; ``limits`` is sent as written,
    by dimension name.  ``device="cuda"`` makes the worker hand the
    function torch tensors on that device (copied from the shared memory)
    and copy the outputs back after it returns: the host only sees host
    memory.  ``layouts`` names the operand layouts the function takes
    beyond dense row-major (``"ld"``, ``"col"``, ``"batch"``;
    docs/workers.md): it then gets numpy views with those strides, whose
    gaps it must neither read nor write.  The default, ``("dense",)``, is
    dense row-major only.  Errors in the declaration raise at import time,
    before any hello is sent, so they are the programmer's and not a
    verdict.
    """
    if not isinstance(name, str) or not name.startswith(op + "."):
        raise ValueError(f"kernel name {name!r} must start with its op and a dot ({op}.)")
    if kind not in KINDS:
        raise ValueError(f"kernel {name}: kind {kind!r} is not one of {', '.join(KINDS)}")
    if isinstance(dtypes, (str, dict)):
        dtypes = [dtypes]
    if not dtypes:
        raise ValueError(f"kernel {name}: no dtype tuple")
    if limits is not None and not (isinstance(limits, dict) and all(isinstance(v, dict) for v in limits.values())):
        raise ValueError(f"kernel {name}: limits must map a dimension name to {{min, max, ...}}")
    if isinstance(layouts, str):
        layouts = [layouts]
    bad = [x for x in layouts if x not in LAYOUTS]
    if bad:
        raise ValueError(f"kernel {name}: unknown layout {bad[0]!r} (valid: {', '.join(LAYOUTS)})")
    # dense is every kernel's; the hello lists only what is beyond it
    extra = tuple(x for x in LAYOUTS if x != "dense" and x in layouts)
    tuples = [parse_dtype(op, d, claim) for d in dtypes]
    names = [t["name"] for t in tuples]
    if len(set(names)) != len(names):
        raise ValueError(f"kernel {name}: a dtype tuple is listed twice ({names})")

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        if name in _REGISTRY:
            raise ValueError(f"kernel {name} is declared twice")
        _REGISTRY[name] = KernelSpec(
            name=name, op=op, fn=fn, dtypes=tuples, kind=kind, description=description,
            archs=archs, limits=limits, deterministic=deterministic, device=device,
            by_dtype={t["name"]: t for t in tuples}, layouts=extra,
        )
        return fn

    return deco


def registered() -> list[KernelSpec]:
    """The kernels declared so far, in declaration order."""
    return list(_REGISTRY.values())


def clear() -> None:
    """Forget every declared kernel (for tests and notebooks)."""
    _REGISTRY.clear()


def hello_message(name: str | None = None, kernels: Iterable[KernelSpec] | None = None,
                  shm_fd: bool = False) -> dict[str, Any]:
    """The hello line: protocol version, worker name, kernel records.

    ``shm_fd``: declare that runs may come in the descriptor the host
    handed on (``QUALIFY_WORKER_SHM_FD``, docs/workers.md) instead of a
    named /dev/shm object.
    """
    ks = list(kernels) if kernels is not None else registered()
    msg: dict[str, Any] = {"qualify_worker": PROTOCOL_VERSION}
    if name is not None:
        msg["name"] = name
    if shm_fd:
        msg["shm_fd"] = True
    msg["kernels"] = [k.record() for k in ks]
    return msg


# ---------------------------------------------------------------------------
# Running one case


# The memfd the host handed on (its number), once serve() has taken it.
_SHM_FD: int | None = None


def _take_shm_fd() -> int | None:
    """The descriptor QUALIFY_WORKER_SHM_FD names, if it is open: made
    close-on-exec (a kernel's subprocesses do not get it) and the process
    not dumpable (prctl(2) PR_SET_DUMPABLE: another process of the user
    cannot open it through /proc/PID/fd)."""
    env = os.environ.pop("QUALIFY_WORKER_SHM_FD", None)
    try:
        fd = int(env) if env is not None else -1
        if fd < 0:
            return None
        os.fstat(fd)
        os.set_inheritable(fd, False)
    except (ValueError, OSError):
        return None
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0
    except (OSError, AttributeError):
        pass
    return fd


def _shm_path(name: str) -> str:
    """/dev/shm/<name without the slash>: where Linux keeps shm_open objects."""
    if not isinstance(name, str) or not name.startswith("/") or "/" in name[1:] or len(name) < 2:
        raise ProtocolError(f"bad shm name {name!r}")
    return "/dev/shm/" + name[1:]


def _view(mm: mmap.mmap, size: int, spec: dict[str, Any], what: str, kind: str) -> Operand:
    """A zero-copy array over one tensor (or scale) of the shared object."""
    try:
        fmt_name = spec["format"]
        offset = int(spec["offset"])
        nbytes = int(spec["bytes"])
    except (KeyError, TypeError, ValueError) as e:
        raise ProtocolError(f"{what}: missing or bad field {e}") from None
    if spec.get("packed"):
        raise Unsupported(f"{what}: packed 4-bit tensors are not supported by qualify.worker")
    if spec.get("index_bits"):
        bits = int(spec["index_bits"])
        if bits not in (8, 32, 64):
            raise ProtocolError(f"{what}: index_bits {bits}")
        dt = np.dtype(f"int{bits}")
    else:
        try:
            dt = _fmt.numpy_dtype(fmt_name)
        except ValueError as e:
            raise ProtocolError(f"{what}: {e}") from None
    if "shape" in spec:
        shape = tuple(int(x) for x in spec["shape"])
    elif "count" in spec:  # a scale given by its count only: one dimension
        shape = (int(spec["count"]),)
    else:
        raise ProtocolError(f"{what}: no shape")
    if "strides" in spec:
        strides_el = tuple(int(x) for x in spec["strides"])
    else:
        strides_el = tuple(int(math.prod(shape[i + 1:])) for i in range(len(shape)))
    if len(strides_el) != len(shape) or any(s < 0 for s in shape) or any(s < 0 for s in strides_el):
        raise ProtocolError(f"{what}: shape {list(shape)} and strides {list(strides_el)} do not agree")
    if offset < 0 or nbytes < 0 or offset + nbytes > size:
        raise ProtocolError(f"{what}: [{offset}, {offset + nbytes}) is outside the {size}-byte object")
    n = math.prod(shape)
    if n:
        last = sum((d - 1) * s for d, s in zip(shape, strides_el))
        if (last + 1) * dt.itemsize > nbytes:
            raise ProtocolError(f"{what}: shape {list(shape)} with strides {list(strides_el)} "
                                f"needs {(last + 1) * dt.itemsize} bytes, the tensor has {nbytes}")
    arr = np.ndarray(shape, dtype=dt, buffer=mm, offset=offset,
                     strides=tuple(s * dt.itemsize for s in strides_el))
    t = arr.view(Operand)
    t.slot = spec.get("slot")
    t.format = _fmt.canonical(fmt_name) if not spec.get("index_bits") else f"int{spec['index_bits']}"
    if kind == "out" and not t.flags.writeable:
        raise ProtocolError(f"{what}: the mapping is read-only")
    sc = spec.get("scale")
    if sc is not None:
        s = _view(mm, size, sc, what + " scale", "in")
        t.scale = s
        t.scale_kind = sc.get("kind")
        t.scale_axis = sc.get("axis")
        t.scale_block = sc.get("block")
        zp = sc.get("zero_point")
        if zp is not None:
            try:
                zoff, zbytes, count = int(zp["offset"]), int(zp["bytes"]), int(sc["count"])
            except (KeyError, TypeError, ValueError) as e:
                raise ProtocolError(f"{what} zero points: missing or bad field {e}") from None
            if zoff < 0 or zbytes != 2 * count or zoff + zbytes > size:
                raise ProtocolError(f"{what} zero points: [{zoff}, {zoff + zbytes}) for {count} scales "
                                    f"in a {size}-byte object")
            t.zero_point = np.ndarray((count,), dtype=np.int16, buffer=mm, offset=zoff).view(Operand)
        if "global_code" in sc:
            t.global_code = int(sc["global_code"])
        t.has_global = bool(sc.get("global") or "global_code" in sc)
    return t


def _params(msg: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments of a call: op fields, threads, seed, dtype."""
    op = msg.get("op")
    if not isinstance(op, dict):
        raise ProtocolError("run: 'op' is not an object")
    p = {k: v for k, v in op.items() if k != "op"}
    p["threads"] = int(msg.get("threads", 0))
    seed = msg.get("seed", 0)
    try:
        p["seed"] = int(seed)
    except (TypeError, ValueError):
        raise ProtocolError(f"run: seed {seed!r} is not a decimal integer") from None
    p["dtype"] = msg.get("dtype")
    return p


def handle_run(msg: dict[str, Any], kernels: dict[str, KernelSpec] | None = None) -> dict[str, Any]:
    """Run one ``run`` message and return its ``done`` message.

    Never raises for anything a kernel or a message can do wrong: the
    outcome is the done status (``ok``, ``unsupported``, ``error``), as the
    protocol has no other way to say it and one bad case must not stop the
    worker.
    """
    rid = msg.get("run")
    ks = kernels if kernels is not None else _REGISTRY
    try:
        spec = ks.get(msg.get("kernel"))  # type: ignore[arg-type]
        if spec is None:
            raise ProtocolError(f"unknown kernel {msg.get('kernel')!r}")
        tup = spec.by_dtype.get(msg.get("dtype"))  # type: ignore[arg-type]
        if tup is None:
            raise ProtocolError(f"kernel {spec.name} has no dtype tuple {msg.get('dtype')!r} "
                                f"(it declares {', '.join(spec.by_dtype)})")
        params = _params(msg)
        size = int(msg.get("shm_bytes", 0))
        if "shm_fd" in msg:
            # The memfd handed on at start: it has no name to open.
            if _SHM_FD is None or msg.get("shm_fd") != _SHM_FD:
                raise ProtocolError(f"shm_fd {msg.get('shm_fd')!r} is not the descriptor this worker was given")
            return _run_mapped(spec, msg, params, _SHM_FD, size)
        path = _shm_path(msg.get("shm"))  # type: ignore[arg-type]
        return _run_mapped(spec, msg, params, path, size)
    except Unsupported as e:
        return {"done": rid, "status": "unsupported", "msg": str(e) or "unsupported"}
    except Exception as e:  # noqa: BLE001 - every failure is a status, by design
        return {"done": rid, "status": "error", "msg": _describe(e)}


def _describe(e: BaseException) -> str:
    """An exception as one short line for the host's reason."""
    s = str(e).strip().replace("\n", " ")
    text = f"{type(e).__name__}: {s}" if s else type(e).__name__
    if isinstance(e, ProtocolError):
        text = s
    return text[:1000]


def _run_mapped(spec: KernelSpec, msg: dict[str, Any], params: dict[str, Any], where: str | int,
                size: int) -> dict[str, Any]:
    """Map the run's tensors: a named object (path) or the handed-on fd."""
    rid = msg.get("run")
    fd = where if isinstance(where, int) else os.open(where, os.O_RDWR)
    what = f"shm_fd {where}" if isinstance(where, int) else where
    try:
        actual = os.fstat(fd).st_size
        if size <= 0 or size > actual:
            raise ProtocolError(f"shm_bytes {size} but {what} has {actual} bytes")
        mm = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    finally:
        if not isinstance(where, int):
            os.close(fd)
    ins: list[Operand] = []
    outs: list[Operand] = []
    try:
        for i, t in enumerate(msg.get("in") or []):
            ins.append(_view(mm, size, t, f"input {t.get('slot', i)}", "in"))
        for i, t in enumerate(msg.get("out") or []):
            outs.append(_view(mm, size, t, f"output {t.get('slot', i)}", "out"))
        if not outs:
            raise ProtocolError("run has no output tensor")
        _call(spec, ins, outs, params)
        done: dict[str, Any] = {"done": rid, "status": "ok"}
        globals_ = {o.slot: int(o.global_code) for o in outs
                    if o.has_global and o.global_code is not None}
        if globals_:
            done["global_codes"] = globals_
        return done
    finally:
        # The arrays borrow the mapping; drop ours so it can close.  If the
        # kernel kept a reference, leave the mapping to the garbage collector.
        ins.clear()
        outs.clear()
        try:
            mm.close()
        except BufferError:
            pass


def _call(spec: KernelSpec, ins: list[Operand], outs: list[Operand], params: dict[str, Any]) -> None:
    """Call the function, on torch device tensors when the kernel asks."""
    if spec.device is None:
        ret = spec.fn(*ins, *outs, **params)
        if ret is not None:
            _assign_returned(outs, ret)
        return
    tin = [to_torch(a, device=spec.device) for a in ins]
    tout = [to_torch(a, device=spec.device) for a in outs]
    ret = spec.fn(*tin, *tout, **params)
    if ret is not None:
        _assign_returned(outs, ret)
    else:
        for arr, t in zip(outs, tout):
            assign(arr, t)


def _assign_returned(outs: list[Operand], ret: Any) -> None:
    """A returned value (or tuple of them) written into the outputs in order."""
    vals = list(ret) if isinstance(ret, (tuple, list)) else [ret]
    if len(vals) > len(outs):
        raise ValueError(f"the kernel returned {len(vals)} values for {len(outs)} outputs")
    for arr, v in zip(outs, vals):
        assign(arr, v)


# ---------------------------------------------------------------------------
# Values into outputs


def _bf16_codes(x: np.ndarray) -> np.ndarray:
    """bfloat16 codes of float values, nearest even (without ml_dtypes)."""
    f = np.ascontiguousarray(x, dtype=np.float32)
    u = f.view(np.uint32).astype(np.uint64)
    nan = np.isnan(f)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    r[nan] = ((u[nan] >> 16) | 0x40).astype(np.uint16)  # keep a quiet NaN
    return r


def _raw_codes_of(arr: np.ndarray, fmt_name: str | None) -> bool:
    """Does ``arr`` hold raw codes of a format numpy cannot show (no ml_dtypes)?"""
    if fmt_name is None or np.asarray(arr).dtype.kind != "u":
        return False
    try:
        return _fmt.lookup(fmt_name).native is None
    except ValueError:
        return False


def _codes_to_values(codes: np.ndarray, fmt_name: str) -> np.ndarray:
    """Values of raw codes: through ml_dtypes, or bfloat16 by a shift."""
    dt = _fmt.numpy_dtype(fmt_name)
    if dt.kind != "u":
        return codes.view(dt)
    if fmt_name == "bfloat16":
        return (codes.astype(np.uint32) << 16).view(np.float32)
    raise TypeError(f"decoding {fmt_name} codes needs ml_dtypes (pip install ml_dtypes)")


def assign(out: np.ndarray, value: Any) -> None:
    """Write ``value`` into the output array ``out`` in place.

    ``value`` may be a numpy array, a scalar, a jax array, or a torch tensor
    (any device).  A torch tensor of the output's own format (bfloat16,
    FP8) is copied bit for bit; other values are rounded to the output's
    format by numpy's or ml_dtypes' cast (nearest even), and to bfloat16
    here when ml_dtypes is missing.  It exists because a plain
    ``out[...] = x`` cannot write a bfloat16 torch tensor, or float values
    into raw uint16 bfloat16 codes.
    """
    fmt_name = getattr(out, "format", None)
    target = np.asarray(out)
    codes_fmt: str | None = None
    if type(value).__module__.startswith("torch"):
        v, codes_fmt = _torch_to_numpy(value)
    else:
        v = np.asarray(value)
    if codes_fmt is not None:
        if codes_fmt == fmt_name or (fmt_name is None and v.dtype == target.dtype):
            np.copyto(target.view(v.dtype) if target.dtype.itemsize == v.dtype.itemsize else target, v,
                      casting="unsafe")
            return
        v = _codes_to_values(v, codes_fmt)
    if _raw_codes_of(target, fmt_name):
        if fmt_name == "bfloat16":
            v = _bf16_codes(v)
        else:
            raise TypeError(f"writing values into {fmt_name} codes needs ml_dtypes (pip install ml_dtypes); "
                            f"or write the codes ({target.dtype}) yourself")
    np.copyto(target, v.astype(target.dtype, copy=False), casting="unsafe")


# ---------------------------------------------------------------------------
# Adapters


_TORCH_CODE_VIEW = {  # qualify format -> (torch dtype name, integer dtype of its codes)
    "bfloat16": ("bfloat16", "int16"),
    "float8_e4m3fn": ("float8_e4m3fn", "uint8"),
    "float8_e4m3fnuz": ("float8_e4m3fnuz", "uint8"),
    "float8_e5m2": ("float8_e5m2", "uint8"),
    "float8_e5m2fnuz": ("float8_e5m2fnuz", "uint8"),
    "float8_e8m0fnu": ("float8_e8m0fnu", "uint8"),
}


def _torch_to_numpy(t: Any) -> tuple[np.ndarray, str | None]:
    """A torch tensor on the host as numpy, and the qualify format when the
    array holds raw codes (torch dtypes numpy lacks: bfloat16, FP8)."""
    import torch  # lazily: torch is optional

    t = t.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    name = str(t.dtype).replace("torch.", "")
    for qf, (tname, code) in _TORCH_CODE_VIEW.items():
        if name == tname:
            codes = t.contiguous().view(getattr(torch, code)).numpy()
            return codes.view(np.uint16 if code == "int16" else np.uint8), qf
    return t.numpy(), None


def to_torch(arr: np.ndarray, device: str | None = None) -> Any:
    """A torch tensor over ``arr``: zero copy on the CPU, a copy on a device.

    bfloat16 and FP8 codes (ml_dtypes or raw) become torch's own dtypes by
    reinterpreting the bits, so no value is rounded.  With ``device``
    (``"cuda"``) the tensor is copied there; write results back with
    :func:`assign` (the worker does it for ``device=`` kernels).
    """
    import torch  # lazily: torch is optional

    fmt_name = getattr(arr, "format", None)
    a = np.asarray(arr)
    if fmt_name is None and a.dtype.name in _TORCH_CODE_VIEW:
        fmt_name = a.dtype.name
    if fmt_name in _TORCH_CODE_VIEW:
        tname, code = _TORCH_CODE_VIEW[fmt_name]
        raw = a.view(np.int16 if code == "int16" else np.uint8)
        t = torch.from_numpy(raw).view(getattr(torch, tname))
    elif fmt_name is not None and _fmt.lookup(fmt_name).native is None and a.dtype.kind != "u":
        # other ml_dtypes (FP6, FP4): hand over the codes
        t = torch.from_numpy(a.view(np.uint8))
    else:
        t = torch.from_numpy(a)
    return t.to(device) if device is not None else t


def to_jax(arr: np.ndarray) -> Any:
    """A jax array of ``arr``'s values (jax arrays are immutable: a copy or a
    DLPack import; write results back with :func:`assign`)."""
    import jax.numpy as jnp  # lazily: jax is optional

    return jnp.asarray(np.asarray(arr))


# ---------------------------------------------------------------------------
# The loop


def _read_line(stream: IO[bytes]) -> bytes | None:
    line = stream.readline(MAX_LINE + 1)
    if not line:
        return None
    if len(line) > MAX_LINE:
        raise ProtocolError("a message longer than 1 MiB")
    return line


def _flush_stderr() -> None:
    """Push what the kernel printed into the stderr pipe before ``done``.

    The host files what a worker writes to stderr during a run in that
    pair's record; bytes still in a buffer when ``done`` is written arrive
    after it and are relayed as output between runs instead
    (docs/workers.md "Standard error").  Python's streams and the C
    library's (printf from native code) are both flushed.
    """
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    global _LIBC
    try:
        if _LIBC is None:
            _LIBC = ctypes.CDLL(None)
        _LIBC.fflush(None)
    except (OSError, AttributeError):
        pass


_LIBC: Any = None


def _write(stream: IO[bytes], msg: dict[str, Any]) -> None:
    stream.write(json.dumps(msg, separators=(",", ":"), allow_nan=False).encode() + b"\n")
    stream.flush()


def serve(name: str | None = None, stdin: IO[bytes] | None = None, stdout: IO[bytes] | None = None) -> int:
    """Speak the protocol until ``bye`` or end of input; return the exit status.

    Sends hello with every declared kernel, then answers each ``run`` with
    ``done``.  With the default streams, file descriptor 1 is moved aside
    for the protocol and stdout (fd 1 and ``sys.stdout``) is pointed at
    stderr, so stray prints cannot corrupt the protocol.  A line the worker
    cannot parse, or a message it does not know, ends it with status 2
    after saying why on stderr: the protocol gives it no way to answer, and
    the host then reports the worker as broken.  When called with no
    arguments from a script, the process exits with that status.
    """
    own = stdin is None and stdout is None
    if own:
        proto_fd = os.dup(1)
        sys.stdout.flush()
        os.dup2(2, 1)
        sys.stdout = sys.stderr
        out: IO[bytes] = os.fdopen(proto_fd, "wb")
        inp: IO[bytes] = sys.stdin.buffer
    else:
        out = stdout if stdout is not None else sys.stdout.buffer
        inp = stdin if stdin is not None else sys.stdin.buffer
    env = os.environ.get("QUALIFY_WORKER_PROTOCOL")
    if env is not None and env != str(PROTOCOL_VERSION):
        print(f"qualify.worker: the host speaks protocol {env}, this worker {PROTOCOL_VERSION}", file=sys.stderr)
    status = _loop(name, inp, out)
    if own:
        out.close()
        sys.exit(status)
    return status


def _loop(name: str | None, inp: IO[bytes], out: IO[bytes]) -> int:
    if not _REGISTRY:
        print("qualify.worker: no kernel declared (use @qualify.worker.kernel)", file=sys.stderr)
        return 2
    global _SHM_FD
    _SHM_FD = _take_shm_fd()
    _write(out, hello_message(name, shm_fd=_SHM_FD is not None))
    while True:
        try:
            line = _read_line(inp)
            if line is None:
                return 0
            if not line.strip():
                continue
            try:
                msg = json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError) as e:
                raise ProtocolError(f"not JSON ({e}): {line[:80]!r}") from None
            if not isinstance(msg, dict):
                raise ProtocolError(f"not a JSON object: {line[:80]!r}")
            if msg.get("bye"):
                return 0
            if "run" not in msg:
                raise ProtocolError(f"unexpected message: {line[:80]!r}")
        except ProtocolError as e:
            print(f"qualify.worker: protocol error: {e}", file=sys.stderr)
            return 2
        done = handle_run(msg)
        _flush_stderr()
        _write(out, done)
