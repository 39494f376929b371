#!/usr/bin/env python3
"""Validate every JSON output of qualify against its schema in docs/schema/.

Run by tests/schema/run-validate from CTest (schema/outputs).  It checks each
schema against the JSON Schema 2020-12 meta-schema, then runs the commands
that write JSON and validates what they wrote:

  run      every shipped suite (shapes/*.yaml, one seed: --seed 1; a suite
           of more than 200 cases by the smallest case of each group):
           results.json, every journal.jsonl line, show --json
  run      a plugin kernel whose message carries terminal controls
           (QF_HOSTILE_MSG_PLUGIN): the one-line reason pattern
  enable   enable.json over all the results above
  audit    audit.json (-o) and --json, with an all-NaN tensor among others
  workload --json, a small model
  probe    --json of gemm.cpu.naive.f32 at a small K
  list kernels --json, formats --json

Environment: QF_QUALIFY_BIN (the qualify to run), QF_SOURCE_DIR (the tree
with docs/schema and shapes), QF_HOSTILE_MSG_PLUGIN (optional).
Exit: 0 all valid, 1 an invalid output or a command that failed, 77 no
jsonschema module (run-validate checks that first).
"""
import glob
import json
import os
import struct
import subprocess
import sys
import tempfile
import time

try:
    import jsonschema
    from jsonschema import Draft202012Validator
except ImportError:
    print("validate.py: no jsonschema module; skipped", file=sys.stderr)
    sys.exit(77)

BIN = os.environ.get("QF_QUALIFY_BIN")
SRC = os.environ.get("QF_SOURCE_DIR") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SCHEMA_DIR = os.path.join(SRC, "docs", "schema")

failures = []
checked = {}


def load_schemas():
    schemas = {}
    for path in sorted(glob.glob(os.path.join(SCHEMA_DIR, "*.schema.json"))):
        with open(path) as f:
            s = json.load(f)
        Draft202012Validator.check_schema(s)
        schemas[os.path.basename(path)[: -len(".schema.json")]] = s
    return schemas


def make_validators(schemas):
    """One validator per schema, resolving the urn: references between them
    (jsonschema >= 4.18 through referencing, older ones through RefResolver,
    as Debian 12's python3-jsonschema 4.10)."""
    try:
        from referencing import Registry, Resource
        from referencing.jsonschema import DRAFT202012

        registry = Registry().with_resources(
            (s["$id"], Resource.from_contents(s, default_specification=DRAFT202012)) for s in schemas.values()
        )
        return {k: Draft202012Validator(s, registry=registry) for k, s in schemas.items()}
    except ImportError:
        store = {s["$id"]: s for s in schemas.values()}
        return {
            k: Draft202012Validator(s, resolver=jsonschema.RefResolver.from_schema(s, store=store))
            for k, s in schemas.items()
        }


def validate(validators, kind, doc, where):
    errors = sorted(validators[kind].iter_errors(doc), key=lambda e: list(e.absolute_path))
    checked[kind] = checked.get(kind, 0) + 1
    for e in errors[:5]:
        path = "/".join(str(p) for p in e.absolute_path)
        failures.append(f"{where}: {kind} schema: at /{path}: {e.message[:300]}")
    if len(errors) > 5:
        failures.append(f"{where}: {len(errors) - 5} more errors")


NO_PAIR = b"no (case, kernel) pair selected"


def run(args, ok=(0,), stdout=None, env=None):
    t0 = time.monotonic()
    try:
        p = subprocess.run([BIN] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    except OSError as e:
        failures.append(f"qualify {' '.join(args)}: cannot run: {e}")
        return None, 0.0
    dt = time.monotonic() - t0
    # In a sanitizer build an error report may come with exit 1, which a
    # run with FAILED cases also has: read stderr for it.
    for mark in (b"ERROR: AddressSanitizer", b"ERROR: LeakSanitizer", b"runtime error:"):
        if mark in p.stderr:
            failures.append(f"qualify {' '.join(args)}: {mark.decode()}: {p.stderr.decode(errors='replace')[:800]}")
    if p.returncode == 2 and NO_PAIR in p.stderr and args[0] == "run" and "--list" not in args:
        # A group for kernels this build does not have (GPU kernels without
        # a back end), or a shape library like workloads.yaml: no output.
        return None, dt
    if p.returncode not in ok:
        failures.append(f"qualify {' '.join(args)}: exit {p.returncode}: {p.stderr.decode(errors='replace')[-500:]}")
        return None, dt
    return p.stdout, dt


def plugin_run(validators, tmp, var, name, kernel, shapes, args, ok=(0,), env=None):
    """Run a float32 GEMM suite of one kernel of the test plugin $var and
    validate its outputs; the output directory, or None."""
    plugin = os.environ.get(var)
    if not plugin:
        return None
    suite = os.path.join(tmp, name + ".yaml")
    with open(suite, "w") as f:
        f.write(f"suite: {name}\nrefute: false\nop: gemm\nkernels: [{kernel}]\n"
                f"dtypes: [float32]\nshapes: {shapes}\n")
    out = os.path.join(tmp, "run-" + name)
    text, _ = run(["run", suite, "-q", "--plugin", plugin, "-o", out] + args, ok=ok, env=env)
    if text is None:
        return None
    validate_run(validators, out)
    return out


def validate_file(validators, kind, path):
    with open(path) as f:
        validate(validators, kind, json.load(f), path)


def validate_run(validators, out):
    validate_file(validators, "results", os.path.join(out, "results.json"))
    with open(os.path.join(out, "journal.jsonl")) as f:
        for n, line in enumerate(f, 1):
            validate(validators, "journal", json.loads(line), f"{out}/journal.jsonl:{n}")
    text, _ = run(["show", os.path.join(out, "results.json"), "--json"], ok=(0, 1, 3))
    if text is not None:
        validate(validators, "show", json.loads(text), f"show --json {out}")


SMALL_SUITE = 200


def case_size(case_id):
    """The product of a case id's dimension values (M=16,N=32,K=64 -> 32768)."""
    size = 1
    for tok in case_id.replace("/", ",").split(","):
        key, _, val = tok.rpartition("=")
        if key and val.isdigit() and not key.endswith("seed"):
            size *= max(int(val), 1)
    return size


def smallest_per_group(ids):
    """The smallest case of each group (the id up to its op's '/')."""
    best = {}
    for case in ids:
        group = case.split("/", 1)[0]
        if group not in best or case_size(case) < case_size(best[group]):
            best[group] = case
    return sorted(best.values())


def write_npy(path, values, rows, cols):
    hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }" % (rows, cols)
    hdr += " " * ((64 - (10 + len(hdr) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode())
        f.write(struct.pack("<%df" % len(values), *values))


def main():
    if not BIN:
        print("validate.py: QF_QUALIFY_BIN is not set (CTest sets it)", file=sys.stderr)
        return 1
    schemas = load_schemas()
    validators = make_validators(schemas)
    print(f"schemas: {', '.join(sorted(schemas))} (jsonschema {jsonschema_version()})")
    with tempfile.TemporaryDirectory(prefix="qf-schema-") as tmp:
        results = []
        for suite in sorted(glob.glob(os.path.join(SRC, "shapes", "*.yaml"))):
            name = os.path.basename(suite)[:-5]
            text, _ = run(["run", suite, "--seed", "1", "--list"])
            if text is None:
                continue
            ids = text.decode().split()
            # A small suite runs whole; a large one, its smallest case of each
            # group (every op, dtype group and kernel family the suite has,
            # at the cost of the least work; quick.yaml alone is 1,498 cases).
            cases = [None] if len(ids) <= SMALL_SUITE else smallest_per_group(ids)
            t0 = time.monotonic()
            for i, case in enumerate(cases):
                out = os.path.join(tmp, f"run-{name}-{i}")
                args = ["run", suite, "-q", "--seed", "1", "--jobs", "2", "-o", out]
                # 3: nothing ran (a GPU case without its device): its
                # outputs are written all the same, and validated
                if run(args + (["--case", case] if case else []), ok=(0, 1, 3))[0] is not None:
                    validate_run(validators, out)
                    results.append(os.path.join(out, "results.json"))
            print(f"run {name}: {len(ids)} cases, {'all' if cases == [None] else len(cases)} run, "
                  f"{time.monotonic() - t0:.1f} s")
        out = plugin_run(validators, tmp, "QF_HOSTILE_MSG_PLUGIN", "hostile", "gemm.hostile.msg",
                         "{M: [4], N: [4], K: [4]}", [], ok=(1,))
        if out:
            results.append(os.path.join(out, "results.json"))
        # --devices on plugin_vdev's virtual devices, device 1 failing: the
        # records' device and provenance.devices (docs/runner.md "Devices").
        plugin_run(validators, tmp, "QF_VDEV_PLUGIN", "vdev", "gemm.vdev.naive",
                   "{M: [3, 8], N: [4], K: [5]}\nseeds: [1, 2, 3]", ["--devices", "all"],
                   env=dict(os.environ, QF_VDEV_FAIL="1", QF_VDEV_FAIL_MODE="lost", QF_VDEV_FAIL_AFTER="2"))
        # A 2-shard sweep and its merge (docs/cluster.md): each shard's
        # outputs carry "shard", the merged ones "shards" and "merged".
        suite = os.path.join(tmp, "sharded.yaml")
        with open(suite, "w") as f:
            f.write("suite: sharded\nrefute: false\nop: gemm\nkernels: [gemm.cpu.*]\n"
                    "dtypes: [float32]\nshapes: {M: [3, 8], N: [4], K: [5]}\n")
        shards = []
        for i in range(2):
            out = os.path.join(tmp, f"shard-{i}")
            if run(["run", suite, "-q", "--shard", f"{i}/2", "--jobs", "2", "-o", out], ok=(0, 1))[0] is not None:
                validate_run(validators, out)
                shards.append(out)
        if len(shards) == 2:
            out = os.path.join(tmp, "merged")
            if run(["merge"] + shards + ["-q", "-o", out], ok=(0, 1, 3))[0] is not None:
                validate_run(validators, out)
        if results:
            out = os.path.join(tmp, "enable")
            if run(["enable"] + results + ["-o", out])[0] is not None:
                validate_file(validators, "enable", os.path.join(out, "enable.json"))
        nan = os.path.join(tmp, "allnan.npy")
        good = os.path.join(tmp, "good.npy")
        write_npy(nan, [float("nan")] * 64, 8, 8)
        write_npy(good, [i / 7.0 - 4.0 for i in range(64)], 8, 8)
        out = os.path.join(tmp, "audit")
        formats = "bf16,e4m3:per_channel:mse,mxfp4,nvfp4,int4:g32:asym"
        if run(["audit", nan, good, "--formats", formats, "-o", out], ok=(1,))[0] is not None:
            validate_file(validators, "audit", os.path.join(out, "audit.json"))
        text, _ = run(["audit", good, "--formats", formats, "--json"])
        if text is not None:
            validate(validators, "audit", json.loads(text), "audit --json")
        text, _ = run(["workload", "--json", "--layers", "1", "--dim", "32", "--ffn", "64", "--vocab", "32", "--seq", "4"])
        if text is not None:
            validate(validators, "workload", json.loads(text), "workload --json")
        text, _ = run(["probe", "gemm.cpu.naive.f32", "--k", "16", "--json"])
        if text is not None:
            validate(validators, "probe", json.loads(text), "probe --json")
        text, _ = run(["list", "kernels", "--json"])
        if text is not None:
            validate(validators, "kernels", json.loads(text), "list kernels --json")
        # --status probes the GPU back ends (UNSUPPORTED without a device).
        text, _ = run(["list", "kernels", "--json", "--status"])
        if text is not None:
            validate(validators, "kernels", json.loads(text), "list kernels --json --status")
        text, _ = run(["formats", "--json"])
        if text is not None:
            validate(validators, "formats", json.loads(text), "formats --json")
    unused = sorted(set(schemas) - set(checked))
    if unused:
        failures.append(f"schemas no output was validated against: {', '.join(unused)}")
    print("validated: " + ", ".join(f"{k} {v}" for k, v in sorted(checked.items())))
    for f in failures:
        print("FAIL " + f)
    return 1 if failures else 0


def jsonschema_version():
    try:
        from importlib.metadata import version

        return version("jsonschema")
    except Exception:
        return "?"


if __name__ == "__main__":
    sys.exit(main())
