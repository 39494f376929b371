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
                      extra_args=["--timeout", "3"])
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
