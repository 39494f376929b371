#!/usr/bin/env bash
# gpu-qualify.sh OUTDIR: qualify the GPU kernels on the device of this
# machine and write the reports into OUTDIR (docs/gpu.md).
#
#   1. finds the device: nvidia-smi (compute capability -> sm_XY) or
#      rocminfo / amdgpu-arch / rocm-smi with the driver's topology (gfx
#      name), and says which;
#   2. builds qualify for that architecture only (CMAKE_CUDA_ARCHITECTURES
#      = XY, "90a" on Hopper; QF_HIP_ARCHS = gfx90a or gfx940 with hipcc;
#      gfx942 with clang-19, QF_HIP_GFX942), in build-gpu/;
#   3. runs the model-vs-hardware check (tests/cuda|hip/t-model-vs-hw), the
#      GPU suite shapes/gpu.yaml (qualify run -j jobs), `qualify probe` on
#      every GEMM kernel of the back end (probe/KERNEL.txt and .yaml), and
#      on a node of several devices the suite's GPU kernels again on every
#      one (--devices all: same verdicts expected; QF_DEVICES=0 skips it,
#      QF_DEVICES=1 runs it on one device too; QF_DEVICES_LIMIT seconds,
#      default 300);
#   4. writes into OUTDIR: gpu-info.md (hardware identity and software
#      revisions, the devices of --devices all), model-vs-hw.md,
#      results.json and report.md (qualify's reports of the suite),
#      results-devices.json (the --devices all run), and log.txt.
#
# Machines without the build dependencies (MPFR, GMP, Jansson, libyaml,
# Check; the lent GPU machines of docs/gpu.md have CMake and nvcc but can
# reach no package registry) take them from Debian packages carried in
# QF_DEB_DIR (default .debs/ in the source tree): `scripts/gpu-qualify.sh
# --fetch-debs` run beforehand on a Debian 12 machine downloads them there,
# and this script unpacks them with dpkg -x into build-gpu/deps.
#
# Exit status: 0 when everything ran (the verdicts are in the reports), 1
# when the model disagreed with the hardware or the suite had failures, 2
# when no device was found, the device found could not be used, or the
# build failed.
set -uo pipefail
cd "$(dirname "$0")/.."
SRC=$PWD
DEBS=${QF_DEB_DIR:-$SRC/.debs}
PKGS="libmpfr-dev libmpfr6 libgmp-dev libgmp10 libgmpxx4ldbl libjansson-dev libjansson4 libyaml-dev libyaml-0-2 check libsubunit-dev libsubunit0 pkg-config pkgconf pkgconf-bin libpkgconf3"

if [ "${1:-}" = "--fetch-debs" ]; then
    mkdir -p "$DEBS" && cd "$DEBS" && apt-get download $PKGS
    exit $?
fi
if [ $# -ne 1 ] || [ "${1#-}" != "$1" ]; then
    echo "usage: scripts/gpu-qualify.sh OUTDIR | --fetch-debs" >&2
    exit 2
fi
OUT=$(mkdir -p "$1" && cd "$1" && pwd) || { echo "gpu-qualify: cannot create $1" >&2; exit 2; }
LOG=$OUT/log.txt
: >"$LOG"
say() { echo "gpu-qualify: $*" | tee -a "$LOG"; }
t0=$(date +%s)

# ---- 1. the device ---------------------------------------------------------
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
    export PATH=/usr/local/cuda/bin:$PATH
fi
vendor="" arch="" cmake_gpu=()
# The AMD device's gfx name: rocminfo; else LLVM's amdgpu-arch (asks the
# HSA / HIP runtime); else, when rocm-smi sees a GPU, the kernel driver's
# topology (gfx_target_version 90402 -> gfx942).
amd_gfx() {
    local g="" t v
    command -v rocminfo >/dev/null 2>&1 && g=$(rocminfo 2>/dev/null | grep -o -m1 'gfx[0-9a-f]*')
    for t in amdgpu-arch amdgpu-arch-19; do
        [ -z "$g" ] && command -v $t >/dev/null 2>&1 && g=$($t 2>/dev/null | grep -o -m1 'gfx[0-9a-f]*')
    done
    if [ -z "$g" ] && command -v rocm-smi >/dev/null 2>&1 && rocm-smi >/dev/null 2>&1; then
        for t in /sys/class/kfd/kfd/topology/nodes/*/properties; do
            v=$(awk '$1 == "gfx_target_version" && $2 != 0 {print $2; exit}' "$t" 2>/dev/null)
            [ -n "$v" ] && g=$(printf 'gfx%d%x%x' $((v / 10000)) $((v / 100 % 100)) $((v % 100))) && break
        done
    fi
    echo "$g"
}
if command -v nvidia-smi >/dev/null 2>&1 && cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1) && [ -n "$cc" ]; then
    vendor=cuda
    cc=${cc//./}
    arch=sm_$cc
    # wgmma and the other Hopper-only instructions need the "a" target
    case $cc in 90) cuda_arch=90a ;; *) cuda_arch=$cc ;; esac
    cmake_gpu=(-DQF_ENABLE_CUDA=ON -DQF_REQUIRE_CUDA=ON -DQF_ENABLE_HIP=OFF "-DCMAKE_CUDA_ARCHITECTURES=$cuda_arch")
elif gfx=$(amd_gfx) && [ -n "$gfx" ]; then
    vendor=hip
    arch=$gfx
    cmake_gpu=(-DQF_ENABLE_HIP=ON -DQF_REQUIRE_HIP=ON -DQF_ENABLE_CUDA=OFF)
    case $gfx in
    gfx90a | gfx940) cmake_gpu+=("-DQF_HIP_ARCHS=$gfx" -DQF_HIP_GFX942=OFF) ;;
    gfx942) # hipcc builds the host side and gfx940; clang-19 the gfx942 code objects
        cmake_gpu+=(-DQF_HIP_ARCHS=gfx940 -DQF_HIP_GFX942=ON) ;;
    gfx95*)
        say "note: $gfx (MI350X/MI355X) needs LLVM 20, which Debian 12 does not have; its kernels will be UNSUPPORTED" ;;
    *) # built for the default targets: the kernels then say why they do not run here
        say "note: $gfx is not a target this build can make (gfx90a, gfx940 with hipcc; gfx942 with clang-19); its kernels will be UNSUPPORTED" ;;
    esac
else
    say "no GPU found (neither nvidia-smi nor rocminfo, amdgpu-arch or rocm-smi reports one)"
    exit 2
fi
say "device: $vendor $arch"

{
    echo "# GPU run: hardware and software"
    echo
    echo "- date (UTC): $(date -u '+%Y-%m-%d %H:%M:%S')"
    echo "- qualify revision: $(git -C "$SRC" rev-parse HEAD 2>/dev/null || echo unknown)$(git -C "$SRC" diff --quiet 2>/dev/null || echo ' (modified tree)')"
    echo "- host: $(uname -srm); $(nproc) CPUs"
    echo "- architecture: $arch"
    if [ "$vendor" = cuda ]; then
        echo "- GPU: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | head -1)"
        echo "- nvcc: $(nvcc --version 2>/dev/null | tail -1)"
    else
        echo "- GPU: $(rocminfo 2>/dev/null | grep -m1 'Marketing Name' | sed 's/.*: *//')"
        echo "- hipcc: $(hipcc --version 2>/dev/null | grep -m1 -i 'clang version')"
        [ "$arch" = gfx942 ] && echo "- clang-19 (gfx942 code objects): $(clang++-19 --version 2>/dev/null | head -1)"
    fi
    echo "- cmake: $(cmake --version | head -1)"
} >"$OUT/gpu-info.md"

# ---- 2. dependencies and build ------------------------------------------------
BUILD=$SRC/build-gpu
mkdir -p "$BUILD"
if ! pkg-config --exists mpfr gmp jansson yaml-0.1 check 2>/dev/null; then
    if ls "$DEBS"/*.deb >/dev/null 2>&1; then
        say "unpacking the carried Debian packages of $DEBS into $BUILD/deps"
        for d in "$DEBS"/*.deb; do dpkg -x "$d" "$BUILD/deps" || say "cannot unpack $d"; done
        ml=$(ls -d "$BUILD"/deps/usr/lib/*-linux-gnu 2>/dev/null | head -1)
        export PKG_CONFIG_PATH="$ml/pkgconfig:$BUILD/deps/usr/share/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
        export PKG_CONFIG_SYSROOT_DIR=$BUILD/deps
        export LD_LIBRARY_PATH="$ml${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
        export LIBRARY_PATH="$ml${LIBRARY_PATH:+:$LIBRARY_PATH}"
        [ -x "$BUILD/deps/usr/bin/pkgconf" ] && ! command -v pkg-config >/dev/null && export PATH="$BUILD/deps/usr/bin:$PATH" &&
            ln -sf pkgconf "$BUILD/deps/usr/bin/pkg-config"
    else
        say "missing build dependencies (pkg-config: mpfr gmp jansson yaml-0.1 check) and no packages in $DEBS"
        say "run 'scripts/gpu-qualify.sh --fetch-debs' on a Debian 12 machine and carry .debs/ along"
        exit 2
    fi
fi
gen=()
command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
say "configure and build (${cmake_gpu[*]})"
if ! cmake -S "$SRC" -B "$BUILD" "${gen[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DQF_BUILD_BENCH=OFF "${cmake_gpu[@]}" >>"$LOG" 2>&1 ||
    ! cmake --build "$BUILD" -j"$(nproc)" --target qualify "t-$vendor-decode" "t-$vendor-model-vs-hw" >>"$LOG" 2>&1; then
    say "the build failed; the end of $LOG says why"
    tail -30 "$LOG" >&2
    exit 2
fi
say "built in $(($(date +%s) - t0)) s"

# ---- 3. model vs hardware, device decode, the suite ----------------------------
rc=0
{
    echo "# Model vs hardware"
    echo
    echo "Single matrix-unit instructions on crafted and random inputs, compared bit for bit"
    echo "with the CPU model of the same architecture (tests/$vendor/t-model-vs-hw.c)."
} >"$OUT/model-vs-hw.md"
QF_MODEL_VS_HW_REPORT=$OUT/model-vs-hw.md CK_DEFAULT_TIMEOUT=120 "$BUILD/tests/t-$vendor-model-vs-hw" >>"$LOG" 2>&1
case $? in
0) say "model vs hardware: see model-vs-hw.md" ;;
77) say "model vs hardware: skipped, no usable device (log.txt says why)"
    echo "Not run: no usable device (log.txt)." >>"$OUT/model-vs-hw.md"
    rc=2 ;;
*) say "model vs hardware: DISAGREEMENT or error (see model-vs-hw.md and log.txt)"
   rc=1 ;;
esac
"$BUILD/tests/t-$vendor-decode" >>"$LOG" 2>&1
case $? in
0) say "device FP8 decode agrees with precision/ on all codes" ;;
77) say "device FP8 decode: skipped, no usable device" ;;
*) say "device FP8 decode: FAILED (log.txt)"
   rc=1 ;;
esac
say "running shapes/gpu.yaml"
"$BUILD/qualify" run "$SRC/shapes/gpu.yaml" -o "$BUILD/run" -q -j "${QF_JOBS:-8}" --timeout 120 >>"$LOG" 2>&1
run_rc=$?
[ $run_rc -ne 0 ] && rc=1
for f in results.json report.md; do
    [ -f "$BUILD/run/$f" ] && cp "$BUILD/run/$f" "$OUT/$f"
done
if [ -f "$OUT/results.json" ] && command -v python3 >/dev/null; then
    python3 - "$OUT/results.json" <<'EOF' | tee -a "$LOG" >>"$OUT/gpu-info.md"
import collections, json, sys
r = json.load(open(sys.argv[1]))
c = collections.Counter((x["kernel"], x["verdict"]) for x in r["cases"])
print("\n## Verdicts per kernel\n\n| kernel | verdict | cases |\n| --- | --- | --- |")
for (k, v), n in sorted(c.items()):
    print(f"| {k} | {v} | {n} |")
print("\nGPU in provenance:", r.get("provenance", {}).get("gpu"))
EOF
fi
# The probe of the matrix units (docs/probe.md): every GEMM kernel of this
# back end, its revealed arithmetic and claim next to the models'.
if [ $rc -ne 2 ] && command -v python3 >/dev/null; then
    mkdir -p "$OUT/probe"
    kernels=$("$BUILD/qualify" list kernels --op gemm --json 2>>"$LOG" | python3 -c '
import json, sys
for k in json.load(sys.stdin):
    if k.get("backend") == sys.argv[1]:
        print(k["name"])' "$vendor")
    for k in $kernels; do
        timeout 300 "$BUILD/qualify" probe "$k" -o "$OUT/probe/$k.yaml" >"$OUT/probe/$k.txt" 2>>"$LOG"
        prc=$?
        say "probe $k: exit $prc; $(grep -m1 'order:' "$OUT/probe/$k.txt" | sed 's/^ *//')"
        echo "- \`$k\`: exit $prc, $(grep -m1 'order:' "$OUT/probe/$k.txt" | sed 's/^ *//'), $(grep -m1 'validation:' "$OUT/probe/$k.txt" | sed 's/^ *//')" >>"$OUT/gpu-info.md"
    done
fi
# Every device of the node (docs/runner.md "Devices"): the suite's GPU
# kernels again with --devices all, whose verdicts must be those of the
# device-0 run above; the devices, the pairs each ran and any taken out of
# the rotation go into gpu-info.md.  After the probe, since it repeats the
# sweep: run only where there is more than one device (on one, the
# device-0 run above is the same sweep; QF_DEVICES=1 forces it, 0 skips
# it), with a usable device and the device-0 run's results.
ndev=$( ([ "$vendor" = cuda ] && nvidia-smi -L 2>/dev/null || rocm-smi --showuniqueid 2>/dev/null) | grep -cE '^GPU[ \[]')
if [ $rc -ne 2 ] && [ "${QF_DEVICES:-auto}" != 0 ] && { [ "$ndev" -gt 1 ] || [ "${QF_DEVICES:-auto}" = 1 ]; } &&
    [ -f "$OUT/results.json" ] && command -v python3 >/dev/null; then
    # the back end's kernels: gemm.cuda.*, gemm.cublas*.* (no CPU kernel or
    # model has ".cu" or ".hip" in its name)
    dev_glob=$([ "$vendor" = cuda ] && echo '*.cu*' || echo '*.hip*')
    say "running shapes/gpu.yaml --devices all (kernels $dev_glob)"
    timeout "${QF_DEVICES_LIMIT:-300}" "$BUILD/qualify" run "$SRC/shapes/gpu.yaml" -o "$BUILD/run-devices" -q \
        -j "${QF_JOBS:-8}" --timeout 120 --devices all --kernel "$dev_glob" >>"$LOG" 2>&1
    dev_rc=$?
    say "--devices all: exit $dev_rc"
    if [ -f "$BUILD/run-devices/results.json" ]; then
        cp "$BUILD/run-devices/results.json" "$OUT/results-devices.json"
        python3 - "$OUT/results.json" "$OUT/results-devices.json" <<'EOF' | tee -a "$LOG" >>"$OUT/gpu-info.md"
import json, sys
one, many = (json.load(open(p)) for p in sys.argv[1:3])
v1 = {(c["kernel"], c["case_id"]): c["verdict"] for c in one["cases"]}
devs = (many.get("provenance") or {}).get("devices") or {"list": [], "retries": 0}
print("\n## All devices (--devices all)\n\n| index | UUID | name | pairs | faults | out |\n| --- | --- | --- | --- | --- | --- |")
for d in devs["list"]:
    print(f"| {d['index']} | {d['uuid']} | {d['name']} | {d['pairs']} | {d['faults']} | {d['why'] if d['out'] else 'no'} |")
diff = [(k, v1.get(k), c["verdict"]) for c in many["cases"] for k in [(c["kernel"], c["case_id"])] if v1.get(k) != c["verdict"]]
print(f"\n{len(many['cases'])} pairs, {devs['retries']} run again after a device fault; "
      f"{len(diff)} verdict(s) differ from the device-0 run")
for k, a, b in diff[:20]:
    print(f"- {k[0]} {k[1]}: device 0 {a}, --devices all {b}")
sys.exit(1 if diff else 0)
EOF
        [ "${PIPESTATUS[0]}" -ne 0 ] && rc=1
    fi
elif [ $rc -ne 2 ]; then
    say "--devices all: not run ($ndev device(s) listed; QF_DEVICES=1 runs it anyway)"
fi
python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null && say "torch worker on cuda (python/examples/torch.yaml, $OUT/torch): $(QUALIFY_TORCH_DEVICE=cuda PYTHONPATH="$SRC/python/src" "$BUILD/qualify" run "$SRC/python/examples/torch.yaml" --worker "python3 $SRC/python/examples/torch_kernels.py" -o "$OUT/torch" --timeout 120 2>>"$LOG" | grep 'case(s)')"
say "suite exit status $run_rc; total $(($(date +%s) - t0)) s; reports in $OUT"
[ $rc -eq 2 ] && say "the GPU that $([ "$vendor" = cuda ] && echo nvidia-smi || echo rocminfo) reports was not usable: its kernels are UNSUPPORTED in the reports"
exit $rc
