; oclc_isa_version_942.ll: the one device-library piece Debian 12's
; rocm-device-libs (ROCm 5.2) lacks for gfx942.  clang links
; oclc_isa_version_<gfx>.bc beside ocml.bc and ockl.bc; it holds a single
; constant, __oclc_ISA_version, which the libraries read to pick code paths
; (LLVM AMDGPU documentation, "AMDGPU Device Library" / ROCm-Device-Libs
; README, "oclc_isa_version_XXX.bc").  This file is Debian's
; oclc_isa_version_940.bc (llvm-dis) with 9400 -> 9402, the major, minor,
; stepping of gfx942 as the other files encode theirs.
;
; Why it is sound: every use of the constant in Debian's ocml.bc and ockl.bc
; is a comparison (< 8000, > 8999, < 9006, == 9010, (v & ~2) == 9008) that
; decides the same for 9400 and 9402, so gfx942 takes exactly gfx940's
; library code.  This is checked, not assumed: the build compiles
; kernels.hip for gfx942 twice, once with this file and once with Debian's
; 940 file, and tests/hip/t-gfx942-isa compares the two disassemblies
; (kernels/hip/CMakeLists.txt, docs/gpu.md "gfx942 through clang-19").
target datalayout = "e-p:64:64-p1:64:64-p2:32:32-p3:32:32-p4:64:64-p5:32:32-p6:32:32-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-v512:512-v1024:1024-v2048:2048-n32:64-S32-A5-G1-ni:7:8:9-p7:160:256:256:32-p8:128:128-p9:192:256:256:32"
target triple = "amdgcn-amd-amdhsa"

@__oclc_ISA_version = linkonce_odr protected local_unnamed_addr addrspace(4) constant i32 9402, align 4

!llvm.module.flags = !{!0}
!0 = !{i32 1, !"wchar_size", i32 4}
