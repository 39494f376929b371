"""The package against the real C host (`qualify run --worker`): run only
when QUALIFY_BIN names a built qualify (CTest passes it); skipped otherwise.

numpy's matmul through a Python worker is qualified like any kernel, and
Python workers that crash, hang, exit or write past their output get the
verdict for that pair only, the others going on."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

import qualify

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
BIN = os.environ.get("QUALIFY_BIN", "")

pytestmark = pytest.mark.skipif(not (BIN and os.access(BIN, os.X_OK)), reason="QUALIFY_BIN is not a built qualify")


def worker(script: Path) -> str:
    return f"{sys.executable} {script}"


def test_numpy_matmul_qualified(tmp_path: Path) -> None:
    suite = tmp_path / "np.yaml"
    suite.write_text(
        "suite: numpy\n"
        "refute: false\n"  # the count below is of these inputs (docs/refute.md)
        "inputs: [normal, {name: outliers, fraction: 0.01, scale: 100}]\n"
        "seeds: 1\n"
        "groups:\n"
        "  - op: gemm\n"
        "    kernels: [gemm.numpy.*]\n"
        "    dtypes: [float32]\n"
        "    shapes: {M: [1, 7, 33], N: [1, 16, 65], K: [1, 16, 127]}\n"
        "    params: {trans_a: [false, true], beta: [0, 0.5]}\n"
    )
    res = qualify.run(suite, workers=[worker(ROOT / "python" / "examples" / "numpy_gemm.py")],
                      output=tmp_path / "out", extra_args=["--jobs", "2"])
    assert res.returncode == 0
    assert len(res) == 3 * 3 * 3 * 2 * 2 * 2
    assert res.summary.get("QUALIFIED") == len(res), res.table()
    assert all(p.kernel == "gemm.numpy.f32" for p in res)


def test_hostile_workers(tmp_path: Path) -> None:
    suite = tmp_path / "hostile.yaml"
    suite.write_text(
        "suite: hostile\n"
        "inputs: [normal]\n"
        "seeds: 2\n"
        "groups:\n"
        "  - op: gemm\n"
        "    kernels: [gemm.py.*]\n"
        "    dtypes: [float32]\n"
        "    shapes: {M: [5], N: [6], K: [7]}\n"
    )
    res = qualify.run(suite, workers=[worker(HERE / "workers" / "hostile.py")], output=tmp_path / "out",
                      extra_args=["--timeout", "5"])
    assert res.returncode == 1
    got = {}
    for p in res:
        got.setdefault(p.kernel, set()).add(p.verdict)
    assert got["gemm.py.good"] == {"QUALIFIED"}, got  # before and after every fault: restarts work
    assert got["gemm.py.segv"] == {"CRASHED"}
    assert got["gemm.py.exit"] == {"CRASHED"}
    assert got["gemm.py.hang"] == {"TIMEOUT"}
    assert got["gemm.py.overrun"] == {"FAILED"}
    reasons = {p.kernel: p.reason for p in res}
    assert "signal 11" in reasons["gemm.py.segv"]
    assert "status 3" in reasons["gemm.py.exit"]
    assert "canary" in reasons["gemm.py.overrun"]
    # A Python exception is the kernel's report, not an I/O error, and no
    # memory limit is blamed for it.
    assert got["gemm.py.typeerror"] == {"FAILED"}
    assert reasons["gemm.py.typeerror"] == \
        "the kernel reported an error: TypeError: must be Tensor, not Operand", reasons["gemm.py.typeerror"]
    # What a kernel prints during its run is its pair's record, not the
    # host's output (docs/workers.md "Standard error").
    assert got["gemm.py.chatty"] == {"QUALIFIED"}
    for p in res:
        if p.kernel == "gemm.py.chatty":
            assert "chatty: \x1b[2Jcleared\nchatty: no newline" in p.raw.get("kernel_output", ""), p.raw


def test_quantize_worker(tmp_path: Path) -> None:
    """Quantize through a worker: the block parameters arrive (an FP8
    quantizer in numpy qualifies bit for bit; the MX case is declined
    with the parameters it got), and an NVFP4 output's tensor scale is
    the kernel's to send back."""
    suite = tmp_path / "q.yaml"
    suite.write_text(
        "suite: quantize\n"
        "inputs: [normal, {name: outliers, fraction: 0.01, scale: 100}]\n"
        "seeds: 2\n"
        "groups:\n"
        "  - op: quantize\n"
        "    kernels: [quantize.py.fp8]\n"
        "    dtypes: [{in: float32, out: float8_e4m3fn}]\n"
        "    shapes: {rows: [1, 5], cols: [64, 100]}\n"
        "    params: {family: [fp8, mx], block: 32, scale_rule: ceil}\n"
        "  - op: quantize\n"
        "    kernels: [quantize.py.nvfp4_noglobal]\n"
        "    dtypes: [{in: float32, out: float4_e2m1fn}]\n"
        "    shapes: {rows: [2], cols: [64]}\n"
        "    params: {family: nvfp4}\n"
    )
    res = qualify.run(suite, workers=[worker(HERE / "workers" / "quantize.py")], output=tmp_path / "out")
    fp8 = [p for p in res if p.kernel == "quantize.py.fp8"]
    by_family = {}
    for p in fp8:
        by_family.setdefault("fp8" if "only fp8" not in (p.reason or "") else "mx", []).append(p)
    assert len(fp8) == 2 * 2 * 2 * 2 * 2, res.table()
    assert {p.verdict for p in by_family["fp8"]} == {"QUALIFIED"}, res.table()
    assert len(by_family["mx"]) == len(fp8) // 2
    for p in by_family["mx"]:
        assert p.verdict == "UNSUPPORTED", p.reason
        for part in ('"family": "mx"', '"block": 32', '"axis": 1', '"scale_rule": "ceil"',
                     '"elem": "float8_e4m3fn"', '"round": "rne"'):
            assert part in p.reason, (part, p.reason)
    nv = [p for p in res if p.kernel == "quantize.py.nvfp4_noglobal"]
    assert nv and all(p.verdict == "FAILED" and "no global scale for output q" in p.reason for p in nv), \
        [(p.verdict, p.reason) for p in nv]


def test_scaled_gemm_tuple(tmp_path: Path) -> None:
    """A per-tensor scaled FP8 GEMM declared by a dtype dict's in_scale is
    paired with a suite's `scale: per_tensor` tuple, gets its scales and
    qualifies (without in_scale no tuple of it would match)."""
    pytest.importorskip("ml_dtypes")
    suite = tmp_path / "scaled.yaml"
    suite.write_text(
        "suite: scaled\n"
        "refute: false\n"
        "groups:\n"
        "  - op: gemm\n"
        "    kernels: [gemm.py.scaled]\n"
        "    dtypes: [{a: float8_e4m3fn, b: float8_e4m3fn, out: bfloat16, scale: per_tensor}]\n"
        "    shapes: {M: [3, 16], N: [5], K: [8, 64]}\n"
    )
    res = qualify.run(suite, workers=[worker(HERE / "workers" / "scaled.py")], output=tmp_path / "out")
    assert len(res) == 4, res.table()
    assert res.summary.get("QUALIFIED") == 4, [(p.case_id, p.verdict, p.reason) for p in res]


def test_numpy_strided_layouts(tmp_path: Path) -> None:
    """A worker that declares layouts gets strided views and is QUALIFIED
    on each; a dense-only one is UNSUPPORTED with the reason; one that
    writes its rows' padding is FAILED naming the padding."""
    suite = tmp_path / "strided.yaml"
    suite.write_text(
        "suite: strided\n"
        "refute: false\n"  # the pairs counted below are the layouts'
        "groups:\n"
        "  - op: gemm\n"
        "    kernels: [gemm.numpy.*]\n"
        "    dtypes: [float32]\n"
        "    shapes: [{M: [7], N: [16], K: [33]}, {M: [5], N: [6], K: [9], batch: [3]}]\n"
        "    params: {trans_b: [false, true], beta: [0, 0.5]}\n"
        "    layout: [dense, \"ld+3\", col, \"col,ld+5\", \"batch+64\"]\n"
    )
    res = qualify.run(suite, workers=[worker(HERE / "workers" / "strided.py")],
                      output=tmp_path / "out", extra_args=["--jobs", "2"])
    assert res.returncode == 1  # the padding writer fails
    by = {}
    for p in res:
        by.setdefault(p.kernel, []).append(p)
    assert len(by["gemm.numpy.strided.f32"]) == 2 * 4 * 5
    for p in by["gemm.numpy.strided.f32"]:
        assert p.verdict == "QUALIFIED", (p.case_id, p.reason)
    for p in by["gemm.numpy.dense.f32"]:
        if "layout=" in p.case_id:
            assert p.verdict == "UNSUPPORTED", (p.case_id, p.reason)
            assert "takes dense row-major operands only" in p.reason
        else:
            assert p.verdict == "QUALIFIED", (p.case_id, p.reason)
    for p in by["gemm.numpy.pad_write.f32"]:
        if "layout=ld+3" in p.case_id:
            assert p.verdict == "FAILED", (p.case_id, p.reason)
            assert "written into its padding at" in p.reason and "ld " in p.reason, p.reason
        elif "layout=" in p.case_id:
            assert p.verdict == "UNSUPPORTED", (p.case_id, p.reason)
            assert "does not take layout" in p.reason
        else:
            assert p.verdict == "QUALIFIED", (p.case_id, p.reason)
