# The install tree of kinac (`cmake --install <build> --prefix P`):
#
#   P/bin/kinac                      (and the other command-line tools:
#                                    kina-run, kina-opt)
#   P/lib/libkina_runtime.a
#   P/include/kina/                  abi.h, runtime.h, RuntimeConfig.h
#   P/lib/cmake/Kina/                KinaConfig.cmake (+ version file), the
#                                    exported targets Kina::kinac and
#                                    Kina::runtime, kina_add_library()
#   P/lib/pkgconfig/kina.pc
#
# The tree is relocatable: kinac finds the runtime at ../lib beside itself,
# the CMake package computes its prefix from its own location, and kina.pc
# from ${pcfiledir}. LLVM's tools and libraries are the system's
# (/usr/lib/llvm-22), found through the configured absolute path and the
# tools' install RPATH. The directories are fixed (bin, lib, include, not
# GNUInstallDirs' lib/<multiarch>), because kinac looks for ../lib.
include(CMakePackageConfigHelpers)

set(KINA_INSTALL_CMAKEDIR lib/cmake/Kina)
# Code generation targets this kinac supports; kina_add_library(TARGET ...)
# accepts only these. The CUDA target is part of kinac when its sources are
# (src/targets/cuda); it needs the CUDA Toolkit's ptxas when compiling, and
# nothing CUDA when linking (the runtime loads the driver at run time).
set(KINA_CODEGEN_TARGETS cpu)
if(EXISTS ${PROJECT_SOURCE_DIR}/src/targets/cuda)
  list(APPEND KINA_CODEGEN_TARGETS cuda)
endif()
file(STRINGS ${PROJECT_SOURCE_DIR}/include/kina/abi.h _kina_abi_line
  REGEX "^#define KINA_ABI_VERSION [0-9]+$")
string(REGEX REPLACE ".* " "" KINA_ABI_VERSION "${_kina_abi_line}")

# Tools: kinac, and any other command-line tool the build defines. Their
# install RPATH keeps the LLVM/MLIR library directory they link from.
foreach(tool kinac kina-run kina-opt)
  if(TARGET ${tool})
    set_target_properties(${tool} PROPERTIES INSTALL_RPATH_USE_LINK_PATH TRUE)
    if(tool STREQUAL "kinac")
      install(TARGETS ${tool} EXPORT KinaTargets RUNTIME DESTINATION bin)
    else()
      install(TARGETS ${tool} RUNTIME DESTINATION bin)
    endif()
  endif()
endforeach()

install(TARGETS kina_runtime EXPORT KinaTargets ARCHIVE DESTINATION lib)
install(FILES
  ${PROJECT_SOURCE_DIR}/include/kina/abi.h
  ${PROJECT_SOURCE_DIR}/include/kina/runtime.h
  ${CMAKE_BINARY_DIR}/include/kina/RuntimeConfig.h
  DESTINATION include/kina)

install(EXPORT KinaTargets NAMESPACE Kina:: FILE KinaTargets.cmake
  DESTINATION ${KINA_INSTALL_CMAKEDIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/KinaConfig.cmake.in
  ${CMAKE_BINARY_DIR}/cmake/KinaConfig.cmake
  INSTALL_DESTINATION ${KINA_INSTALL_CMAKEDIR})
# 0.x releases: only the same minor version is compatible.
write_basic_package_version_file(${CMAKE_BINARY_DIR}/cmake/KinaConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES
  ${CMAKE_BINARY_DIR}/cmake/KinaConfig.cmake
  ${CMAKE_BINARY_DIR}/cmake/KinaConfigVersion.cmake
  ${CMAKE_CURRENT_LIST_DIR}/KinaFunctions.cmake
  DESTINATION ${KINA_INSTALL_CMAKEDIR})

configure_file(${CMAKE_CURRENT_LIST_DIR}/kina.pc.in ${CMAKE_BINARY_DIR}/cmake/kina.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/cmake/kina.pc DESTINATION lib/pkgconfig)
