#!/usr/bin/env python3
"""Optional cross-checks of qualify against independent Python libraries.

Not part of the build or of CTest (qualify never needs Python).  Needs
numpy, ml_dtypes and mpmath (e.g. in a venv: pip install numpy ml_dtypes
mpmath).  Usage: tests/tools/crosscheck.py BUILD_DIR/qualify

1. `qualify formats --dump` against ml_dtypes' decoding of every code of the
   float formats of 16 bits or less, and default `--encode` (nearest-even,
   not saturating) against ml_dtypes' casts from float64, NaN/Inf included.
2. `qualify ref` softmax, rmsnorm, gelu, silu (bf16 output) and attention
   (GQA, causal) against mpmath at 300 bits, rounded to nearest.
Prints the mismatch counts and exits 1 if any.
"""
import math
import os
import random
import subprocess
import sys
import tempfile

import ml_dtypes
import mpmath as mp
import numpy as np

Q = sys.argv[1] if len(sys.argv) > 1 else "build/qualify"
mp.mp.prec = 300
bad_total = 0

FORMATS = {
    "bfloat16": (ml_dtypes.bfloat16, np.uint16), "float16": (np.float16, np.uint16),
    "float8_e4m3fn": (ml_dtypes.float8_e4m3fn, np.uint8), "float8_e4m3fnuz": (ml_dtypes.float8_e4m3fnuz, np.uint8),
    "float8_e5m2": (ml_dtypes.float8_e5m2, np.uint8), "float8_e5m2fnuz": (ml_dtypes.float8_e5m2fnuz, np.uint8),
    "float8_e8m0fnu": (ml_dtypes.float8_e8m0fnu, np.uint8), "float6_e2m3fn": (ml_dtypes.float6_e2m3fn, np.uint8),
    "float6_e3m2fn": (ml_dtypes.float6_e3m2fn, np.uint8), "float4_e2m1fn": (ml_dtypes.float4_e2m1fn, np.uint8),
}


def same(a, b):
    return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))


def report(what, bad):
    global bad_total
    bad_total += bad
    print(f"{what}: {bad} mismatches")


for name, (t, store) in FORMATS.items():
    out = subprocess.run([Q, "formats", "--dump", name], capture_output=True, text=True, check=True).stdout
    bad = 0
    for line in out.splitlines():
        code, val = line.split()
        with np.errstate(invalid="ignore"):
            ref = float(np.array([int(code, 16)], dtype=store).view(t).astype(np.float64)[0])
        mine = float(val) if val in ("nan", "inf", "-inf") else float.fromhex(val)
        bad += not same(ref, mine)
    report(f"dump {name}", bad)
    random.seed(1)
    vals = [random.choice([-1, 1]) * math.ldexp(1 + random.random(), random.randint(-20, 20)) for _ in range(3000)]
    vals += [0.0, -0.0, math.inf, -math.inf, math.nan, -math.nan]
    args = [("-nan" if math.copysign(1, v) < 0 else "nan") if math.isnan(v) else repr(v) for v in vals]
    out = subprocess.run([Q, "formats", "--encode", name, "--"] + args, capture_output=True, text=True, check=True)
    codes = [int(c, 16) for c in out.stdout.split()]
    with np.errstate(invalid="ignore", over="ignore"):
        ref = np.array(vals, dtype=np.float64).astype(t).view(store)
    report(f"encode {name}", sum(int(c) != int(r) for c, r in zip(codes, ref)))

with tempfile.TemporaryDirectory() as d:
    p = lambda f: os.path.join(d, f)

    def ref(*a):
        subprocess.run([Q, "ref", *a], capture_output=True, text=True, check=True)

    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 50)) * 4
    np.save(p("x.npy"), x)
    ref("softmax", "--x", p("x.npy"), "-o", p("s.npy"))
    y, bad = np.load(p("s.npy")), 0
    for i in range(3):
        e = [mp.exp(mp.mpf(float(v))) for v in x[i]]
        z = mp.fsum(e)
        bad += sum(float(e[j] / z) != y[i, j] for j in range(50))
    report("ref softmax", bad)
    ref("rmsnorm", "--x", p("x.npy"), "--eps", "1e-6", "-o", p("r.npy"))
    y, bad = np.load(p("r.npy")), 0
    for i in range(3):
        r = 1 / mp.sqrt(mp.fsum([mp.mpf(float(v)) ** 2 for v in x[i]]) / 50 + mp.mpf(1e-6))
        bad += sum(float(mp.mpf(float(x[i, j])) * r) != y[i, j] for j in range(50))
    report("ref rmsnorm", bad)
    ref("gelu", "--x", p("x.npy"), "--approx", "erf", "-o", p("g.npy"))
    y, bad = np.load(p("g.npy")), 0
    for (i, j), v in np.ndenumerate(x):
        v = mp.mpf(float(v))
        bad += float(v * (1 + mp.erf(v / mp.sqrt(2))) / 2) != y[i, j]
    report("ref gelu", bad)
    ref("silu", "--x", p("x.npy"), "--out-dtype", "bf16", "-o", p("si.npy"))
    y, bad = np.load(p("si.npy")), 0
    for (i, j), v in np.ndenumerate(x):
        v = mp.mpf(float(v))
        g = v / (1 + mp.exp(-v))  # at 300 bits
        with mp.workprec(8):  # then rounded to bfloat16's 8 significant bits, nearest even
            r = +g
        bad += float(r) != y[i, j]
    report("ref silu (bf16)", bad)

    q, k, v = rng.standard_normal((1, 4, 5, 8)), rng.standard_normal((1, 2, 7, 8)), rng.standard_normal((1, 2, 7, 8))
    for n, a in (("q", q), ("k", k), ("v", v)):
        np.save(p(n + ".npy"), a)
    ref("attention", "--q", p("q.npy"), "--k", p("k.npy"), "--v", p("v.npy"), "--causal", "-o", p("o.npy"),
        "--lse-out", p("l.npy"))
    o, lse, bad = np.load(p("o.npy")), np.load(p("l.npy")), 0
    scale = 1 / mp.sqrt(8)
    for h in range(4):
        kh = h // 2  # GQA: query head h reads kv head h / (heads / kv_heads)
        for i in range(5):
            s = [scale * mp.fsum([mp.mpf(float(q[0, h, i, t])) * mp.mpf(float(k[0, kh, j, t])) for t in range(8)])
                 for j in range(i + 1)]  # causal, top-left aligned
            m = max(s)
            e = [mp.exp(t - m) for t in s]
            z = mp.fsum(e)
            bad += float(m + mp.log(z)) != lse[0, h, i]
            for t in range(8):
                bad += float(mp.fsum([e[j] * mp.mpf(float(v[0, kh, j, t])) for j in range(len(s))]) / z) != o[0, h, i, t]
    report("ref attention", bad)

sys.exit(1 if bad_total else 0)
