# disasm.cmake: OUT = llvm-objdump --disassemble of the code object for
# TARGET inside the HIP object OBJ, as the runtime would receive it: the
# .hip_fatbin section is dumped (llvm-objcopy), unbundled
# (clang-offload-bundler) and disassembled.  Used by kernels/hip/CMakeLists.txt
# for tests/hip/t-gfx942-isa.
set(fb ${OUT}.fatbin)
set(co ${OUT}.co)
execute_process(COMMAND ${OBJCOPY} --dump-section .hip_fatbin=${fb} ${OBJ} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${OBJ}: no .hip_fatbin section")
endif()
execute_process(COMMAND ${BUNDLER} --unbundle --type=o --targets=${TARGET} --input=${fb} --output=${co} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${OBJ}: no code object for ${TARGET}")
endif()
execute_process(COMMAND ${OBJDUMP} --disassemble --no-show-raw-insn ${co} OUTPUT_FILE ${OUT} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "llvm-objdump failed on ${co}")
endif()
file(REMOVE ${fb})
