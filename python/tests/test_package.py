"""The package in-process: dtype tuples, formats, zero-copy views, results, run()."""

from __future__ import annotations

import json
import mmap
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from conftest import SRC, gemm_op, worker_env

import qualify
import qualify.formats as qf
import qualify.worker as qw


@pytest.fixture(autouse=True)
def fresh_registry():
    saved = dict(qw._REGISTRY)
    qw.clear()
    yield
    qw.clear()
    qw._REGISTRY.update(saved)


def test_import_without_optional_packages():
    """numpy alone is enough; ml_dtypes, torch and jax are never imported eagerly."""
    code = textwrap.dedent("""
        import sys
        for m in ("ml_dtypes", "torch", "jax"):
            sys.modules[m] = None          # makes `import m` raise ImportError
        import qualify, qualify.worker, qualify.formats
        assert qualify.formats.numpy_dtype("bf16").name == "uint16"
        assert qualify.formats.numpy_dtype("e4m3").name == "uint8"
        assert qualify.formats.numpy_dtype("f32").name == "float32"
        try:
            qualify.worker.to_torch(None)
        except ImportError:
            print("lazy ok")
    """)
    r = subprocess.run([sys.executable, "-c", code], env=worker_env(), capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "lazy ok"


def test_formats_names():
    assert qf.canonical("BF16") == "bfloat16"
    assert qf.canonical("e4m3") == "float8_e4m3fn"
    assert qf.short_name("float32") == "f32"
    assert qf.short_name("bfloat16") == "bf16"
    assert qf.short_name("float8_e4m3fn") == "e4m3"
    with pytest.raises(ValueError, match="unknown format"):
        qf.lookup("float33")
    for f in qf.FORMATS:  # every view has the width of the codes (zero copy)
        assert qf.numpy_dtype(f.name).itemsize * 8 == f.storage


@pytest.mark.parametrize("op, label, ins, outs, acc", [
    ("gemm", "f32.f32.f32.f32", ["float32"] * 3, ["float32"], "float32"),
    ("gemm", "bf16.bf16.f32.bf16", ["bfloat16"] * 3, ["bfloat16"], "float32"),
    ("gemm", "f16.f16.f32.f32", ["float16", "float16", "float32"], ["float32"], "float32"),
    ("gemm", "f64", ["float64"] * 3, ["float64"], "float64"),
    ("gemm", "i8", ["int8"] * 3, ["int8"], "float64"),
    ("attention", "bf16.bf16.bf16.f32.bf16", ["bfloat16"] * 3, ["bfloat16", "float32"], "float32"),
    ("softmax", "f32.f32.f32", ["float32"], ["float32"], "float32"),
    ("rmsnorm", "bf16.f32.f32.bf16", ["bfloat16", "float32", "float32"], ["bfloat16"], "float32"),
    ("activation", "f32", ["float32", "float32"], ["float32"], "float32"),
    ("quantize", "f32.e4m3", ["float32"], ["float8_e4m3fn"], None),
])
def test_parse_dtype_labels(op, label, ins, outs, acc):
    t = qw.parse_dtype(op, label)
    assert t["name"] == label and t["in"] == ins and t["out"] == outs
    assert t["claim"].get("acc_format") == acc


def test_parse_dtype_errors():
    with pytest.raises(ValueError, match="4 roles"):
        qw.parse_dtype("gemm", "f32.f32")
    with pytest.raises(ValueError, match="acc_format"):
        qw.parse_dtype("gemm", "f32.f32.f32.f32", {"acc_format": "float64"})
    with pytest.raises(ValueError, match="needs 'out'"):
        qw.parse_dtype("quantize", "f32")
    with pytest.raises(ValueError, match="unknown op"):
        qw.parse_dtype("conv", "f32")
    with pytest.raises(ValueError, match="unknown format"):
        qw.parse_dtype("gemm", "f32.f32.f32.f31")


def test_parse_dtype_dict_merges_claim():
    t = qw.parse_dtype("gemm", {"name": "mine", "in": ["e4m3", "e4m3"], "out": ["bf16"],
                                "claim": {"block_fma": 32}}, {"acc_format": "f32", "sum_order": "any"})
    assert t == {"name": "mine", "in": ["float8_e4m3fn"] * 2, "out": ["bfloat16"],
                 "claim": {"acc_format": "float32", "sum_order": "any", "block_fma": 32}}


def test_256mib_operand_is_not_copied(shm_factory):
    """A 256 MiB operand reaches the kernel as a view of the shared mapping:
    the Python side allocates almost nothing while it runs (tracemalloc sees
    numpy's allocations), however large the tensors."""
    import tracemalloc

    K = 8192
    seen = {}

    @qw.kernel("gemm.big.f32", op="gemm", dtypes=["f32"])
    def k(a, b, d, **p):
        seen["nbytes"] = a.nbytes
        seen["owndata"] = a.flags.owndata
        d[...] = a[:, :1] * b[:1, :1]

    shm = shm_factory(K * K * 4 + (1 << 20))
    a = np.ones((K, K), np.float32)
    ta = shm.put("a", "float32", a)
    del a
    tb = shm.put("b", "float32", np.full((K, 1), 2, np.float32))
    td = shm.put("d", "float32", shape=(K, 1), dtype=np.float32)
    tracemalloc.start()
    try:
        done = qw.handle_run({"run": 1, "kernel": "gemm.big.f32", "dtype": "f32", "threads": 1, "seed": "0",
                              "op": gemm_op(K, 1, K), "shm": shm.name, "shm_bytes": shm.size,
                              "in": [ta, tb], "out": [td]})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert done == {"done": 1, "status": "ok"}
    assert seen == {"nbytes": 256 << 20, "owndata": False}
    assert peak < 4 << 20, f"{peak} bytes allocated while serving a 256 MiB operand"
    assert np.all(shm.get(td, np.float32) == 2)


def test_kernel_declaration_errors():
    with pytest.raises(ValueError, match="must start with its op"):
        qw.kernel("softmax.x", op="gemm", dtypes=["f32"])
    with pytest.raises(ValueError, match="kind"):
        qw.kernel("gemm.x", op="gemm", dtypes=["f32"], kind="fast")
    with pytest.raises(ValueError, match="twice"):
        qw.kernel("gemm.x", op="gemm", dtypes=["f32", "f32"])
    qw.kernel("gemm.x", op="gemm", dtypes=["f32"])(lambda *a, **p: None)
    with pytest.raises(ValueError, match="declared twice"):
        qw.kernel("gemm.x", op="gemm", dtypes=["f32"])(lambda *a, **p: None)


def _small_gemm(shm):
    """A 2x3 by 3x2 float32 GEMM placed in shm: a, b and their tensor records, and d's."""
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.ones((3, 2), np.float32)
    ta, tb = shm.put("a", "float32", a), shm.put("b", "float32", b)
    return a, b, ta, tb, shm.put("d", "float32", shape=(2, 2), dtype=np.float32)


def test_handle_run_is_zero_copy(shm_factory):
    """The arrays the kernel gets are views of the shared mapping itself."""
    seen = {}

    @qw.kernel("gemm.zc.f32", op="gemm", dtypes=["f32"])
    def k(a, b, d, **p):
        base = d
        while isinstance(base, np.ndarray):
            base = base.base
        seen["base"] = type(base)
        seen["owndata"] = d.flags.owndata
        seen["format"] = (a.format, d.slot)
        d[...] = a @ b

    shm = shm_factory()
    a, b, ta, tb, td = _small_gemm(shm)
    done = qw.handle_run({"run": 9, "kernel": "gemm.zc.f32", "dtype": "f32", "threads": 1, "seed": "0",
                          "op": gemm_op(2, 2, 3), "shm": shm.name, "shm_bytes": shm.size,
                          "in": [ta, tb], "out": [td]})
    assert done == {"done": 9, "status": "ok"}
    assert seen == {"base": mmap.mmap, "owndata": False, "format": ("float32", "d")}
    assert np.array_equal(shm.get(td, np.float32), a @ b)
    assert shm.canaries_intact([ta, tb, td])


def test_handle_run_through_shm_fd(shm_factory, monkeypatch):
    """A run that gives "shm_fd" (no name) maps the descriptor handed on."""

    @qw.kernel("gemm.fd.f32", op="gemm", dtypes=["f32"])
    def k(a, b, d, **p):
        d[...] = a @ b

    shm = shm_factory()
    a, b, ta, tb, td = _small_gemm(shm)
    fd = os.open(shm.path, os.O_RDWR)
    try:
        monkeypatch.setattr(qw, "_SHM_FD", fd)
        run = {"run": 4, "kernel": "gemm.fd.f32", "dtype": "f32", "threads": 1, "seed": "0",
               "op": gemm_op(2, 2, 3), "shm_fd": fd, "shm_bytes": shm.size, "in": [ta, tb], "out": [td]}
        assert qw.handle_run(run) == {"done": 4, "status": "ok"}
        assert np.array_equal(shm.get(td, np.float32), a @ b)
        assert shm.canaries_intact([ta, tb, td])
        os.fstat(fd)  # still open: the worker keeps it for the next run
        bad = qw.handle_run(dict(run, shm_fd=fd + 100))
        assert bad["status"] == "error" and "shm_fd" in bad["msg"]
    finally:
        os.close(fd)
    assert qw.hello_message("t", [], shm_fd=True)["shm_fd"] is True
    assert "shm_fd" not in qw.hello_message("t", [])


def test_scale_tensor_attached(shm_factory):
    got = {}

    @qw.kernel("gemm.sc.e4m3", op="gemm",
               dtypes=[{"name": "e4m3", "in": ["e4m3", "e4m3"], "out": ["f32"]}])
    def k(a, b, d, **p):
        got["kind"] = a.scale_kind
        got["scale"] = float(a.scale[0])
        got["dtype"] = a.dtype
        d[...] = 0

    shm = shm_factory()
    ta = shm.put("a", "float8_e4m3fn", np.zeros((2, 2), np.uint8))
    ts = shm.put("a.scale", "float32", np.array([0.5], np.float32))
    ta["scale"] = {"kind": "tensor", "format": "float32", "offset": ts["offset"], "bytes": 4, "count": 1}
    tb = shm.put("b", "float8_e4m3fn", np.zeros((2, 2), np.uint8))
    td = shm.put("d", "float32", shape=(2, 2), dtype=np.float32)
    done = qw.handle_run({"run": 1, "kernel": "gemm.sc.e4m3", "dtype": "e4m3", "threads": 1, "seed": "0",
                          "op": gemm_op(2, 2, 2), "shm": shm.name, "shm_bytes": shm.size,
                          "in": [ta, tb], "out": [td]})
    assert done["status"] == "ok", done
    assert got["kind"] == "tensor" and got["scale"] == 0.5
    assert got["dtype"] == qf.numpy_dtype("e4m3")


def test_parse_dtype_in_scale():
    """A dtype dict's in_scale: per input slot {kind, format, block}, as the
    host's hello reader takes it (qualify/worker_hello.c)."""
    t = qw.parse_dtype("gemm", {"name": "mx", "in": ["e4m3", "e4m3"], "out": ["bf16"],
                                "in_scale": [{"kind": "block", "format": "e8m0", "block": 32},
                                             {"kind": "block", "format": "float8_e8m0fnu", "block": 32}]})
    assert t["in_scale"] == [{"kind": "block", "format": "float8_e8m0fnu", "block": 32}] * 2
    t = qw.parse_dtype("gemm", {"name": "pt", "in": ["e4m3", "e4m3"], "out": ["bf16"],
                                "in_scale": [None, {"kind": "tensor", "format": "f32"}]})
    assert t["in_scale"] == [{"kind": "none"}, {"kind": "tensor", "format": "float32"}]
    assert "in_scale" not in qw.parse_dtype("gemm", {"name": "p", "in": ["f32"], "out": ["f32"]})
    qw.clear()
    qw.kernel("gemm.t.mx", op="gemm", dtypes=[{"name": "mx", "in": ["e4m3", "e4m3"], "out": ["bf16"],
                                               "in_scale": [{"kind": "row", "format": "f32"}]}])(lambda *a, **p: None)
    rec = qw.hello_message()["kernels"][0]["dtypes"][0]
    assert rec["in_scale"] == [{"kind": "row", "format": "float32"}]
    qw.clear()
    for bad in ([{"kind": "blocks", "format": "e8m0", "block": 32}], [{"kind": "block", "format": "e8m0"}],
                [{"kind": "tensor"}], [{"kind": "tensor", "format": "f32", "axis": 1}],
                [{"kind": "row", "format": "f32", "block": -1}], [None] * 4, {"kind": "tensor"}):
        with pytest.raises(ValueError, match="in_scale"):
            qw.parse_dtype("gemm", {"name": "x", "in": ["e4m3"], "out": ["bf16"], "in_scale": bad})


def test_ml_dtypes_extra_both_spellings(tmp_path):
    """`pip install './python[ml_dtypes]'` and `[ml-dtypes]` both pull
    ml_dtypes: pyproject declares both, and the built metadata provides
    both (where setuptools is at hand to build it)."""
    import tomllib

    root = SRC.parent
    extras = tomllib.loads((root / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert extras["ml_dtypes"] == extras["ml-dtypes"] and extras["ml_dtypes"][0].startswith("ml_dtypes")
    pytest.importorskip("setuptools")
    out = subprocess.run([sys.executable, "-c", "from setuptools import build_meta as b; import sys; "
                          "print(b.prepare_metadata_for_build_wheel(sys.argv[1]))", str(tmp_path)],
                         cwd=root, capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        pytest.skip(f"setuptools cannot build the metadata here: {out.stderr[-300:]}")
    meta = (tmp_path / out.stdout.strip().splitlines()[-1] / "METADATA").read_text()
    provided = {line.split(":", 1)[1].strip() for line in meta.splitlines() if line.startswith("Provides-Extra:")}
    # A setuptools that normalizes extras (PEP 685) writes one name,
    # ml-dtypes, which the pips of its time normalize too; one that writes
    # them as given must list both, as older pips look for the typed name.
    normalized = all(p == re.sub(r"[-_.]+", "-", p) for p in provided)
    assert ({"ml-dtypes"} if normalized else {"ml_dtypes", "ml-dtypes"}) <= provided, provided
    assert any("ml-dtypes" in ln or "ml_dtypes" in ln for ln in meta.splitlines() if ln.startswith("Requires-Dist"))


def test_operand_not_named_like_torch_tensor():
    """The worker's array class is not called Tensor (torch then said
    "must be Tensor, not Tensor"); the old name stays an alias that a star
    import does not bring in."""
    assert qw.Operand.__name__ == "Operand"
    assert "Operand" in qw.__all__ and "Tensor" not in qw.__all__
    assert qw.Tensor is qw.Operand
    ns: dict = {}
    exec("from qualify.worker import *", ns)
    assert "Tensor" not in ns and ns["Operand"] is qw.Operand


def test_assign_rounds_bf16_codes():
    out = np.zeros(4, np.uint16).view(qw.Operand)
    out.format = "bfloat16"
    vals = np.array([1.0, 1.00390625, 1.01171875, -3.0e38], np.float32)  # ties and a large value
    qw.assign(out, vals)
    # 1 + 2^-8 is a tie between 1 and 1 + 2^-7: even is 1.0 (0x3F80)
    # 1 + 3 * 2^-8 is a tie between 1 + 2^-7 and 1 + 2^-6: even is 1 + 2^-6 (0x3F82)
    assert list(np.asarray(out)) == [0x3F80, 0x3F80, 0x3F82, 0xFF62]


def _write_results(path, cases, verdicts=None):
    doc = {"schema_version": 1, "generator": "qualify test", "provenance": None, "cases": cases,
           "summary": {"cases": len(cases), "failed": 0, "groups": []}}
    if verdicts is not None:
        doc["summary"]["verdicts"] = verdicts
    path.write_text(json.dumps(doc))


CASES = [
    {"case_id": "gemm/M=1,N=2,K=3/f32.f32.f32.f32/normal/seed=0", "kernel": "gemm.numpy.f32", "op": "gemm",
     "dtype": "f32.f32.f32.f32", "shape": {"M": 1, "N": 2, "K": 3}, "seed": 0, "verdict": "QUALIFIED",
     "reason": "", "metrics": {"max_ulp": 0.5, "sqnr_db": "Infinity", "n": 2}, "reproduce": "qualify run"},
    {"case_id": "c2", "kernel": "gemm.numpy.f32", "verdict": "CRASHED", "reason": "died of signal 11",
     "metrics": None},
]


def test_load_results(tmp_path):
    p = tmp_path / "results.json"
    _write_results(p, CASES)
    r = qualify.load_results(tmp_path)  # a directory works too
    assert len(r) == 2
    a, b = r.pairs
    assert a.verdict == "QUALIFIED" and a.kernel == "gemm.numpy.f32" and a.shape["K"] == 3
    assert a.metrics["sqnr_db"] == float("inf") and a.metrics["max_ulp"] == 0.5
    assert b.metrics == {} and b.reason == "died of signal 11"
    assert r.summary["QUALIFIED"] == 1 and r.summary["CRASHED"] == 1 and r.summary["FAILED"] == 0
    assert [x.case_id for x in r.failed] == ["c2"]
    assert "gemm.numpy.f32" in r.table() and "CRASHED" in r.table()
    with pytest.raises(ValueError, match="not a qualify results.json"):
        (tmp_path / "bad.json").write_text("{}")
        qualify.load_results(tmp_path / "bad.json")


def test_run_with_fake_binary(tmp_path, monkeypatch):
    """qualify.run passes suite, -o and --worker, and reads results.json back."""
    fake = tmp_path / "qualify"
    log = tmp_path / "argv.json"
    cases = tmp_path / "cases.json"
    cases.write_text(json.dumps(CASES))
    fake.write_text(textwrap.dedent(f"""\
        #!{sys.executable}
        import json, sys, pathlib
        argv = sys.argv[1:]
        pathlib.Path({str(log)!r}).write_text(json.dumps(argv))
        if "bad.yaml" in argv:
            print("bad.yaml:1:1: no such file", file=sys.stderr); sys.exit(2)
        out = pathlib.Path(argv[argv.index("-o") + 1]); out.mkdir(parents=True, exist_ok=True)
        doc = {{"schema_version": 1, "cases": json.loads(pathlib.Path({str(cases)!r}).read_text()),
               "summary": {{"verdicts": {{"QUALIFIED": 1, "CRASHED": 1}}}}}}
        (out / "results.json").write_text(json.dumps(doc))
        sys.exit(1)
    """))
    fake.chmod(0o755)
    monkeypatch.setenv("QUALIFY_BIN", str(fake))
    r = qualify.run("shapes/quick.yaml", workers=["python3 my_kernels.py"], output=tmp_path / "out",
                    kernel="gemm.numpy.*", extra_args=["--seed", "3"])
    argv = json.loads(log.read_text())
    assert argv == ["run", "shapes/quick.yaml", "-o", str(tmp_path / "out"), "--worker", "python3 my_kernels.py",
                    "--kernel", "gemm.numpy.*", "-q", "--seed", "3"]
    assert r.returncode == 1 and r.summary["CRASHED"] == 1 and len(r.pairs) == 2
    with pytest.raises(qualify.QualifyError, match="no such file"):
        qualify.run("bad.yaml", output=tmp_path / "o2")


def test_kernel_layouts() -> None:
    """`layouts=` (docs/workers.md): dense only by default, nothing in the
    hello; the layouts beyond dense in the hello's record, in a fixed
    order; an unknown name refused at declaration."""
    qw.kernel("gemm.t.dense.f32", op="gemm", dtypes=["f32"])(lambda *a, **p: None)
    qw.kernel("gemm.t.strided.f32", op="gemm", dtypes=["f32"], layouts=["batch", "dense", "ld"])(lambda *a, **p: None)
    recs = {r["name"]: r for r in qw.hello_message("t")["kernels"]}
    assert "layouts" not in recs["gemm.t.dense.f32"]
    assert recs["gemm.t.strided.f32"]["layouts"] == ["ld", "batch"]
    with pytest.raises(ValueError, match="unknown layout 'row'"):
        qw.kernel("gemm.t.bad.f32", op="gemm", dtypes=["f32"], layouts=["row"])
