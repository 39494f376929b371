"""Number formats as qualify names them, and their numpy views.

qualify hands kernels tensors of *codes* (docs/kernels.md): a value is its
bit pattern in its format.  This module maps each qualify format name
(precision/format.c: canonical names and aliases, case-insensitive) to the
numpy dtype a worker shows the codes as, so a kernel sees float32 data as
``float32`` and, when ``ml_dtypes`` is installed, bfloat16 / FP8 / FP6 / FP4
data as the matching ``ml_dtypes`` type.  Without ``ml_dtypes`` those arrive
as their raw unsigned code type (uint16 for bfloat16, uint8 for 8-bit and
narrower formats); the format name stays available on the tensor, so a
kernel can still decode them itself.

The table is a copy of precision/format.c's names; the tests check it
against ``qualify formats --json`` when a qualify binary is at hand.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

__all__ = ["Format", "lookup", "canonical", "short_name", "numpy_dtype", "raw_dtype", "FORMATS"]


@dataclass(frozen=True)
class Format:
    """One qualify format: its names, its storage and how numpy shows it."""

    name: str                 # canonical name (precision/format.c)
    aliases: tuple[str, ...]  # accepted spellings, shortest-first is not implied
    bits: int                 # significant bits of a code
    storage: int              # bits a code occupies in memory (8, 16, 32, 64)
    kind: str                 # "float", "int" or "scale"
    native: str | None        # numpy dtype name when numpy has the format itself
    ml_dtypes: str | None     # ml_dtypes attribute name when it has the format


# Copied from precision/format.c (order kept).  tf32 codes are stored in 32
# bits as the float32 bit pattern with the low 13 mantissa bits zero, so a
# float32 view reads them exactly.  int4 / uint4 codes are one per byte and
# arrive as raw uint8: ml_dtypes' int4 stores a sign-extended byte, not the
# 4-bit pattern qualify writes, so a view would misread negative codes.
FORMATS: tuple[Format, ...] = (
    Format("float64", ("f64", "fp64", "double", "binary64"), 64, 64, "float", "float64", None),
    Format("float32", ("f32", "fp32", "float", "binary32"), 32, 32, "float", "float32", None),
    Format("tf32", ("tensorfloat32",), 19, 32, "float", "float32", None),
    Format("bfloat16", ("bf16",), 16, 16, "float", None, "bfloat16"),
    Format("float16", ("f16", "fp16", "half", "binary16"), 16, 16, "float", "float16", None),
    Format("float8_e4m3fn", ("e4m3", "e4m3fn", "fp8_e4m3"), 8, 8, "float", None, "float8_e4m3fn"),
    Format("float8_e4m3fnuz", ("e4m3fnuz", "fp8_e4m3fnuz"), 8, 8, "float", None, "float8_e4m3fnuz"),
    Format("float8_e5m2", ("e5m2", "fp8_e5m2"), 8, 8, "float", None, "float8_e5m2"),
    Format("float8_e5m2fnuz", ("e5m2fnuz", "fp8_e5m2fnuz"), 8, 8, "float", None, "float8_e5m2fnuz"),
    Format("float8_e8m0fnu", ("e8m0", "e8m0fnu", "ue8m0"), 8, 8, "scale", None, "float8_e8m0fnu"),
    Format("float6_e2m3fn", ("e2m3", "fp6_e2m3"), 6, 8, "float", None, "float6_e2m3fn"),
    Format("float6_e3m2fn", ("e3m2", "fp6_e3m2"), 6, 8, "float", None, "float6_e3m2fn"),
    Format("float4_e2m1fn", ("e2m1", "fp4", "fp4_e2m1"), 4, 8, "float", None, "float4_e2m1fn"),
    Format("int8", ("i8", "s8"), 8, 8, "int", "int8", None),
    Format("uint8", ("u8",), 8, 8, "int", "uint8", None),
    Format("int4", ("i4", "s4"), 4, 8, "int", None, None),
    Format("uint4", ("u4",), 4, 8, "int", None, None),
    Format("int32", ("i32", "s32"), 32, 32, "int", "int32", None),
)

_BY_NAME: dict[str, Format] = {}
for _f in FORMATS:
    _BY_NAME[_f.name] = _f
    for _a in _f.aliases:
        _BY_NAME[_a] = _f


def lookup(name: str) -> Format:
    """The format called ``name`` (canonical or alias, any case).

    Raises ValueError naming the valid formats, so a typo in a decorator
    fails when the worker starts rather than as a host-side rejection.
    """
    f = _BY_NAME.get(str(name).lower())
    if f is None:
        raise ValueError(f"unknown format {name!r}; known: {', '.join(x.name for x in FORMATS)}")
    return f


def canonical(name: str) -> str:
    """The canonical spelling of a format name (``bf16`` -> ``bfloat16``)."""
    return lookup(name).name


def short_name(name: str) -> str:
    """The shortest spelling of a format, as suites label dtype tuples.

    docs/suites.md: a tuple's label is the shortest spelling of each role's
    format joined with dots; ties go to the first spelling in the table
    (the canonical name, then the aliases in order).
    """
    f = lookup(name)
    best = f.name
    for a in f.aliases:
        if len(a) < len(best):
            best = a
    return best


@lru_cache(maxsize=None)
def _ml_dtypes():
    """ml_dtypes when it is installed, else None (imported once, lazily)."""
    try:
        return importlib.import_module("ml_dtypes")
    except ImportError:
        return None


def raw_dtype(name: str) -> np.dtype:
    """The unsigned integer dtype of a format's codes (its storage width)."""
    return np.dtype({8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}[lookup(name).storage])


def numpy_dtype(name: str, use_ml_dtypes: bool = True) -> np.dtype:
    """The dtype a worker shows a tensor of this format as.

    numpy's own type where it has one; else the ml_dtypes type when
    ml_dtypes is installed (and ``use_ml_dtypes``) and has the format; else
    the raw code type.  Every choice has the storage width of the codes, so
    the view is zero-copy over the shared memory.
    """
    f = lookup(name)
    if f.native is not None:
        return np.dtype(f.native)
    if use_ml_dtypes and f.ml_dtypes is not None:
        mld = _ml_dtypes()
        t = getattr(mld, f.ml_dtypes, None) if mld is not None else None
        if t is not None:
            dt = np.dtype(t)
            if dt.itemsize * 8 == f.storage:
                return dt
    return raw_dtype(name)
