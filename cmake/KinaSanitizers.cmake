# Sanitizer and fuzzing builds (docs/reliability.md).
#
# KINA_SANITIZE: empty (the default), or a -fsanitize= list applied to every
# target defined after this file is included: the compiler, the runtime and
# all tests. `address,undefined` is the configuration scripts/test.sh
# --sanitize runs the whole test suite under; `thread` also works. UBSan
# findings are fatal (-fno-sanitize-recover=all); its vptr check is off,
# since LLVM and MLIR are built without RTTI. Programs linking the sanitized
# runtime need the sanitizer runtime too, so the flag is added to
# KINA_SANITIZER_LINK_FLAGS, which the runtime appends to the link flags
# kinac prints and uses, and to the runtime target's interface link options,
# so installed CMake packages carry it too (runtime/CMakeLists.txt).
#
# KINA_FUZZ: build the fuzz targets of tests/fuzz as libFuzzer binaries.
# Needs clang (Debian's clang-22, as scripts/fuzz.sh configures it), adds
# -fsanitize=fuzzer-no-link (coverage feedback) to every target, and is
# meant to be combined with KINA_SANITIZE=address,undefined.
set(KINA_SANITIZE "" CACHE STRING
  "Sanitizers for every target, as a -fsanitize= list (e.g. address,undefined)")
option(KINA_FUZZ "Build the fuzz targets as libFuzzer binaries (clang only)" OFF)

set(KINA_SANITIZER_LINK_FLAGS "")
if(KINA_SANITIZE)
  add_compile_options(-fsanitize=${KINA_SANITIZE} -fno-sanitize-recover=all
    -fno-omit-frame-pointer -g)
  if(KINA_SANITIZE MATCHES "undefined")
    add_compile_options(-fno-sanitize=vptr)
  endif()
  add_link_options(-fsanitize=${KINA_SANITIZE})
  set(KINA_SANITIZER_LINK_FLAGS "-fsanitize=${KINA_SANITIZE}")
  # An uninstrumented program (python, a plain C host) that dlopens a
  # library holding the sanitized runtime needs ASan's runtime loaded first:
  # tests doing so preload this file (KINA_SANITIZER_PRELOAD).
  set(KINA_SANITIZER_PRELOAD "")
  if(KINA_SANITIZE MATCHES "address")
    execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libasan.so
      OUTPUT_VARIABLE KINA_SANITIZER_PRELOAD OUTPUT_STRIP_TRAILING_WHITESPACE)
  endif()
  message(STATUS "Sanitizers: ${KINA_SANITIZE}")
endif()

if(KINA_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "KINA_FUZZ needs clang with libFuzzer (e.g. "
      "-DCMAKE_CXX_COMPILER=clang++-22 -DCMAKE_C_COMPILER=clang-22)")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link)
  message(STATUS "Fuzzing build (libFuzzer)")
endif()
