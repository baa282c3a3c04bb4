# kina_add_library(): compile Kina IR modules into a static library, from a
# CMake project that found an installed kinac with
# `find_package(Kina CONFIG REQUIRED)` (KinaConfig.cmake includes this file).
#
#   kina_add_library(<target>
#     SOURCES a.kir [b.kir ...]   # relative to the current source dir
#     [TARGET cpu|cuda]           # code generation target (default cpu)
#     [GPU_ARCH sm_90]            # TARGET cuda only
#     [OPT_LEVEL 0..3]            # kinac -O (default 2)
#     [SYMBOL_PREFIX p_]          # kinac --symbol-prefix for every module
#     [OPTIONS ...])              # more kinac flags, verbatim
#
# At build time each module `<stem>.kir` becomes an object and a generated C
# header `<stem>.h` (kinac and kinac --emit=header). TARGET cuda objects
# carry their GPU kernels (compiled with the CUDA Toolkit's ptxas when the
# module is compiled) and link exactly like cpu ones: nothing CUDA-specific
# on the link line. Their entries take CUDA managed or device memory. The headers lie in
# <binary dir>/kina_include/<target>/; both that folder and its parent are on
# <target>'s PUBLIC include path, so a C file includes "<stem>.h", or
# "<target>/<stem>.h" when two libraries have modules of the same stem.
# <target> is a STATIC library of the objects that links Kina::runtime
# PUBLIC (so the runtime is linked once however many libraries use it). A
# module is recompiled when its .kir file or kinac changes, and only then.
# Two modules with the same stem in one library are an error (their outputs
# would collide); put them in two libraries with distinct SYMBOL_PREFIX
# values when their functions share names.
include_guard(GLOBAL)

function(kina_add_library target)
  set(where "kina_add_library(${target})")
  cmake_parse_arguments(PARSE_ARGV 1 arg ""
    "TARGET;GPU_ARCH;OPT_LEVEL;SYMBOL_PREFIX" "SOURCES;OPTIONS")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "${where}: unknown arguments: ${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT arg_SOURCES)
    message(FATAL_ERROR "${where}: SOURCES must name at least one .kir file")
  endif()
  if(NOT TARGET Kina::kinac OR NOT TARGET Kina::runtime)
    message(FATAL_ERROR "${where}: call find_package(Kina CONFIG REQUIRED) first")
  endif()

  if(NOT DEFINED arg_TARGET)
    set(arg_TARGET cpu)
  endif()
  if(NOT arg_TARGET MATCHES "^(cpu|cuda)$")
    message(FATAL_ERROR "${where}: TARGET must be cpu or cuda, not '${arg_TARGET}'")
  endif()
  if(NOT arg_TARGET IN_LIST KINA_CODEGEN_TARGETS)
    message(FATAL_ERROR "${where}: TARGET ${arg_TARGET} is not supported by "
      "this kinac (version ${Kina_VERSION}), which generates code for: "
      "${KINA_CODEGEN_TARGETS}. Use TARGET cpu, or a kinac with the "
      "${arg_TARGET} target.")
  endif()
  if(DEFINED arg_GPU_ARCH AND NOT arg_TARGET STREQUAL "cuda")
    message(FATAL_ERROR "${where}: GPU_ARCH applies to TARGET cuda only")
  endif()
  if(NOT DEFINED arg_OPT_LEVEL)
    set(arg_OPT_LEVEL 2)
  endif()
  if(NOT arg_OPT_LEVEL MATCHES "^[0-3]$")
    message(FATAL_ERROR "${where}: OPT_LEVEL must be 0, 1, 2 or 3, not '${arg_OPT_LEVEL}'")
  endif()

  set(flags --target=${arg_TARGET} -O${arg_OPT_LEVEL})
  if(arg_GPU_ARCH)
    list(APPEND flags --gpu-arch=${arg_GPU_ARCH})
  endif()
  if(arg_SYMBOL_PREFIX)
    list(APPEND flags --symbol-prefix=${arg_SYMBOL_PREFIX})
  endif()
  list(APPEND flags ${arg_OPTIONS})

  set(include_root ${CMAKE_CURRENT_BINARY_DIR}/kina_include)
  set(header_dir ${include_root}/${target})
  set(object_dir ${CMAKE_CURRENT_BINARY_DIR}/kina_objects/${target})
  file(MAKE_DIRECTORY ${header_dir} ${object_dir})

  set(objects "")
  set(headers "")
  set(stems "")
  foreach(source IN LISTS arg_SOURCES)
    get_filename_component(path "${source}" ABSOLUTE BASE_DIR ${CMAKE_CURRENT_SOURCE_DIR})
    get_filename_component(stem "${source}" NAME_WLE)
    if(NOT path MATCHES "\\.kir$")
      message(FATAL_ERROR "${where}: '${source}' is not a .kir file")
    endif()
    if(stem IN_LIST stems)
      message(FATAL_ERROR "${where}: two modules named '${stem}'; put them in "
        "two libraries (with distinct SYMBOL_PREFIX values if their "
        "functions share names)")
    endif()
    list(APPEND stems ${stem})
    set(object ${object_dir}/${stem}.o)
    set(header ${header_dir}/${stem}.h)
    file(RELATIVE_PATH shown ${CMAKE_BINARY_DIR} ${object})
    add_custom_command(
      OUTPUT ${object} ${header}
      COMMAND Kina::kinac ${path} ${flags} -o ${object}
      COMMAND Kina::kinac ${path} ${flags} --emit=header -o ${header}
      DEPENDS ${path} $<TARGET_FILE:Kina::kinac>
      COMMENT "Compiling Kina module ${source} to ${shown}"
      VERBATIM)
    list(APPEND objects ${object})
    list(APPEND headers ${header})
  endforeach()

  add_library(${target} STATIC ${objects} ${headers})
  # Only objects: the archive is made with the C (else C++) rules.
  get_property(languages GLOBAL PROPERTY ENABLED_LANGUAGES)
  if("C" IN_LIST languages)
    set_target_properties(${target} PROPERTIES LINKER_LANGUAGE C)
  elseif("CXX" IN_LIST languages)
    set_target_properties(${target} PROPERTIES LINKER_LANGUAGE CXX)
  else()
    message(FATAL_ERROR "${where}: enable the C or CXX language first")
  endif()
  target_include_directories(${target} PUBLIC ${header_dir} ${include_root})
  # The same for both targets: Kina::runtime links nothing CUDA, even for
  # TARGET cuda objects (the runtime dlopens the CUDA driver at run time).
  target_link_libraries(${target} PUBLIC Kina::runtime)
  set_target_properties(${target} PROPERTIES KINA_HEADERS "${headers}")
endfunction()
