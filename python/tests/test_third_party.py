"""Third-party kernels through the Python worker against the real host
(QUALIFY_BIN, as tests/test_host.py): JAX on the CPU (python/examples/
jax_kernels.py) and PyTorch (python/examples/torch_kernels.py), each only
when its library is importable in this interpreter; skipped otherwise.

The JAX test checks the verdicts recorded in docs/third-party.md: the honest
claims qualify, and the three claims known to be too strong FAIL for the
documented reason (XLA flushes subnormal softmax outputs; Flax's fast
variance cancels on rows of mean 1000; a float32 dot is no float64
accumulator).  XLA picks its code from the CPU it runs on, so on every CPU
it asserts only what holds on every CPU, and the rest only on the path the
page measured (docs/third-party.md "Tests on every CPU").  If a JAX upgrade
changes any of them, the page is stale."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

import qualify

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE.parent / "examples"
BIN = os.environ.get("QUALIFY_BIN", "")

pytestmark = pytest.mark.skipif(not (BIN and os.access(BIN, os.X_OK)), reason="QUALIFY_BIN is not a built qualify")

JAX_SUITE = """\
suite: jax-test
inputs: [normal]
seeds: 1
groups:
  - op: gemm
    kernels: [gemm.jax.dot.f32]
    dtypes: [float32]
    shapes: {M: [1, 9], N: [1, 17], K: [1, 127, 1024]}
    params: {trans_a: [false, true], trans_b: [false, true]}
  - op: gemm
    kernels: [gemm.jax.dot.bf16_f32]
    dtypes: [{in: bfloat16, acc: float32, out: float32}]
    shapes: {M: [9], N: [17], K: [1, 127, 1024]}
  - op: gemm
    kernels: [gemm.jax.dot.bf16]
    dtypes: [{in: bfloat16, acc: float32}]
    shapes: {M: [9], N: [17], K: [1, 127, 1024]}
  - op: gemm
    kernels: [gemm.jax.overclaim.*]
    dtypes: [{in: float32, acc: float64, out: float32}]
    shapes: {M: [16], N: [16], K: [4096]}
  - op: softmax
    kernels: [softmax.jax.*]
    dtypes: [float32]
    shapes: {rows: [4], cols: [7, 1000]}
    inputs: [normal, {name: outliers, fraction: 0.01, scale: 100}]
  - op: layernorm
    kernels: [layernorm.jax.*]
    dtypes: [float32]
    shapes: {rows: [3], cols: [7, 1000]}
    params: {eps: 7.62939453125e-06}
    inputs: [normal, {name: normal, mean: 1000, std: 1}]
"""


def _verdicts(res: qualify.Results, kernel: str, inputs: str | None = None) -> set[str]:
    """The verdicts of one kernel's pairs, optionally only those on one input
    (the input's label is the case id's next-to-last field)."""
    return {p.verdict for p in res
            if p.kernel == kernel and (inputs is None or p.case_id.split("/")[-2] == inputs)}


def _cpu_flags() -> set[str]:
    """The first flags line of /proc/cpuinfo, as a set ({} where there is none)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "flags":
                    return set(value.split())
    except OSError:
        pass
    return set()


# XLA's CPU path for a bfloat16 dot depends on the CPU: with any of these it
# keeps the dot in bfloat16 and hands it to oneDNN's bf16 matmul (vdpbf16ps
# or AMX tiles: subnormals flushed, partial sums possibly rounded to
# bfloat16), and ONEDNN_MAX_CPU_ISA does not change XLA's choice (XLA reads
# CPUID itself).  Its elementwise code (exp, rsqrt) is compiled for the
# host's ISA too.  Without them XLA converts bf16 operands to float32 and
# runs its AVX2 code: the path docs/third-party.md measured.
XLA_BF16_FLAGS = ("avx512f", "avx512_bf16", "amx_bf16", "avx_ne_convert")


def _outside(p: qualify.Pair) -> int:
    """The elements of a pair that the verdict counts against it: outside the
    bound, or non-finite where the reference is not (or the other way)."""
    m = p.metrics
    return sum(int(m.get(k) or 0) for k in ("n_violations", "nonfinite_bad", "finite_bad", "nan_mismatch",
                                            "inf_mismatch"))


def test_jax_cpu(tmp_path: Path) -> None:
    pytest.importorskip("jax")
    pytest.importorskip("ml_dtypes")  # bfloat16 arrays for the bf16 dots
    suite = tmp_path / "jax.yaml"
    suite.write_text(JAX_SUITE)
    workers = [f"{sys.executable} {EXAMPLES / 'jax_kernels.py'}",
               f"{sys.executable} {HERE / 'workers' / 'jax_overclaim.py'}"]
    res = qualify.run(suite, workers=workers, output=tmp_path / "out", extra_args=["--jobs", "2"])

    # ---- Every CPU.
    # Every verdict follows its evidence: FAILED exactly when elements exceed
    # the bound (or are non-finite where the reference is finite), else
    # QUALIFIED (the suite sets no fitness policy).
    assert len(res) > 0
    for p in res:
        assert p.metrics, (p.case_id, p.kernel, p.verdict, p.reason)
        if _outside(p):
            assert p.verdict == "FAILED", (p.case_id, p.kernel, p.verdict, p.reason)
        else:
            assert p.verdict == "QUALIFIED", (p.case_id, p.kernel, p.verdict, p.reason)
        if p.metrics.get("n_violations"):
            assert "outside the bound" in p.reason, p.reason
    # A float32 dot qualifies under a float32 accumulator in any order: a
    # chain of K roundings bounds every float32 summation, whatever the path.
    assert _verdicts(res, "gemm.jax.dot.f32") == {"QUALIFIED"}, res.table()
    # ... and is no float64 accumulator at K = 4096 on any path.
    assert _verdicts(res, "gemm.jax.overclaim.f64acc") == {"FAILED"}, res.table()
    assert res.returncode == 1, res.table()  # the overclaims FAIL
    # Flax's fast variance cancels on rows of mean 1000 in any float32 order.
    assert "FAILED" in _verdicts(res, "layernorm.jax.fastvar.f32", "normal:mean=1000,std=1"), res.table()

    # ---- XLA's AVX2 path only (docs/third-party.md "Tests on every CPU").
    if _cpu_flags() & set(XLA_BF16_FLAGS):
        return
    for k in ("gemm.jax.dot.bf16_f32", "gemm.jax.dot.bf16", "layernorm.jax.twopass.f32"):
        assert _verdicts(res, k) == {"QUALIFIED"}, (k, res.table())
    # softmax: fine on normal rows; subnormal outputs (exp(-200) and below) flushed to 0
    assert _verdicts(res, "softmax.jax.nn.f32", "normal") == {"QUALIFIED"}
    assert "FAILED" in _verdicts(res, "softmax.jax.nn.f32", "outliers:fraction=0.01,scale=100")
    for p in res:
        if p.kernel == "softmax.jax.nn.f32" and p.verdict == "FAILED":
            assert "outside the bound" in p.reason and "e-4" in p.reason, p.reason  # abs errors ~1e-40
    # Flax's fast variance: qualifies on zero-mean rows
    assert _verdicts(res, "layernorm.jax.fastvar.f32", "normal") == {"QUALIFIED"}


TORCH_SUITE = """\
suite: torch-test
inputs: [normal]
seeds: 1
groups:
  - op: gemm
    kernels: [gemm.torch.*]
    dtypes: [{in: bfloat16, acc: float32}]
    shapes: {M: [1, 9], N: [17], K: [1, 127]}
  - op: rmsnorm
    kernels: [rmsnorm.torch.*]
    dtypes: [float32]
    shapes: {rows: [3], cols: [7, 1000]}
    params: {eps: 7.62939453125e-06}
  - op: attention
    kernels: [attention.torch.*]
    dtypes: [{in: bfloat16, acc: float32}]
    shapes: {batch: [1], heads: [2], kv_heads: [2], seq_q: [5], seq_k: [9], head_dim: [16]}
    params: {causal: [false, true]}
"""


def test_torch(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    suite = tmp_path / "torch.yaml"
    suite.write_text(TORCH_SUITE)
    res = qualify.run(suite, workers=[f"{sys.executable} {EXAMPLES / 'torch_kernels.py'}"],
                      output=tmp_path / "out", extra_args=["--jobs", "2"])
    assert len(res) > 0
    assert _verdicts(res, "gemm.torch.matmul.bf16") == {"QUALIFIED"}, res.table()
    assert _verdicts(res, "rmsnorm.torch.rms_norm.f32") == {"QUALIFIED"}, res.table()
    # SDPA's CPU kernel is whatever torch picks; it must answer, right or wrong
    assert _verdicts(res, "attention.torch.sdpa.bf16") <= {"QUALIFIED", "FAILED", "UNSUPPORTED"}, res.table()
