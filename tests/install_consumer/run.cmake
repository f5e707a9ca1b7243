# Installs the build into a scratch prefix, moves the installed tree (an install must not depend on
# where it was put), then checks it as applications and users would: the installed tool starts with
# no LD_LIBRARY_PATH; the shared library exports only rill's API; the consumer project builds with
# find_package(rill) against the moved install tree and against the build tree, linking the shared
# and the static library; and builds by hand with pkg-config (rill.pc, rill-c.pc, both --static),
# the C++ consumer also with clang.
file(REMOVE_RECURSE ${RILL_WORK_DIR})
set(installed ${RILL_WORK_DIR}/installed)
set(prefix ${RILL_WORK_DIR}/moved)
separate_arguments(flags UNIX_COMMAND "${RILL_CONSUMER_FLAGS}")
# The consumers prove that installing and linking work; leaks are checked by rill's own executables,
# which keep the Vulkan libraries mapped (tests/sanitizers/pin_vulkan.c) — these cannot, so the
# unloaded driver's memory would look leaked.
set(ENV{ASAN_OPTIONS} "detect_leaks=0")
unset(ENV{LD_LIBRARY_PATH})

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "command failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  message("${out}")
  set(run_output "${out}" PARENT_SCOPE)
endfunction()

run(${CMAKE_COMMAND} --install ${RILL_BUILD_DIR} --prefix ${installed})
file(RENAME ${installed} ${prefix})
file(GLOB_RECURSE pc_files ${prefix}/*/rill.pc)
list(LENGTH pc_files pc_count)
if(NOT pc_count EQUAL 1)
  message(FATAL_ERROR "expected one installed rill.pc, found: ${pc_files}")
endif()
get_filename_component(pc_dir ${pc_files} DIRECTORY)
get_filename_component(libdir ${pc_dir} DIRECTORY)

# The tool: starts from the moved tree through its RPATH.
if(EXISTS ${prefix}/bin/rill)
  run(${prefix}/bin/rill --version)
endif()

# Exports: every strong symbol the shared library defines is rill's (C++ namespace rill or the C
# API's rill_ prefix); weak ones are template instances the compiler may emit anywhere.
if(EXISTS ${libdir}/librill.so)
  find_program(NM nm REQUIRED)
  run(${NM} -D --defined-only ${libdir}/librill.so)
  string(REPLACE "\n" ";" symbols "${run_output}")
  foreach(line IN LISTS symbols)
    if(line MATCHES "^[0-9a-f]+ ([A-Za-z]) (.+)$")
      set(kind ${CMAKE_MATCH_1})
      set(name ${CMAKE_MATCH_2})
      if(NOT kind MATCHES "^[WVuw]$" AND NOT name MATCHES "^(rill_|_Z[A-Z]*N4rill|_ZNK4rill)")
        message(FATAL_ERROR "librill.so exports a symbol outside rill's API: ${line}")
      endif()
    endif()
  endforeach()
endif()

function(build_and_run_consumer label)
  set(dir ${RILL_WORK_DIR}/consumer-${label})
  run(${CMAKE_COMMAND} -S ${RILL_CONSUMER_DIR} -B ${dir} -G ${RILL_GENERATOR} ${ARGN}
      -DCMAKE_BUILD_TYPE=Release
      # Same sanitizer flags as the library under test, so an ASan build links and runs.
      "-DCMAKE_C_FLAGS=${RILL_CONSUMER_FLAGS}" "-DCMAKE_CXX_FLAGS=${RILL_CONSUMER_FLAGS}"
      "-DCMAKE_EXE_LINKER_FLAGS=${RILL_CONSUMER_FLAGS}")
  run(${CMAKE_COMMAND} --build ${dir})
  file(GLOB consumers ${dir}/consumer_*)
  if(NOT consumers)
    message(FATAL_ERROR "the consumer project (${label}) built no executables")
  endif()
  foreach(exe IN LISTS consumers)
    run(${exe})
  endforeach()
endfunction()
build_and_run_consumer(install-tree -DCMAKE_PREFIX_PATH=${prefix})
build_and_run_consumer(build-tree -Drill_DIR=${RILL_BUILD_DIR})

# pkg-config, as a Makefile would use it.
find_program(PKG_CONFIG pkg-config REQUIRED)
find_program(READELF readelf REQUIRED)
set(ENV{PKG_CONFIG_PATH} ${pc_dir})
function(pkg_flags out)
  execute_process(COMMAND ${PKG_CONFIG} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE text ERROR_VARIABLE err
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "pkg-config ${ARGN} failed: ${err}")
  endif()
  separate_arguments(list UNIX_COMMAND "${text}")
  set(${out} ${list} PARENT_SCOPE)
endfunction()
pkg_flags(cxx_cflags --cflags rill)
set(include_dir "")
foreach(flag IN LISTS cxx_cflags)
  if(flag MATCHES "^-I(.+)$")
    file(REAL_PATH "${CMAKE_MATCH_1}" include_dir)
  endif()
endforeach()
if(NOT "${cxx_cflags}" MATCHES "-std=c\\+\\+20" OR NOT include_dir STREQUAL "${prefix}/include")
  message(FATAL_ERROR "rill.pc's Cflags (${cxx_cflags}) should name ${prefix}/include and -std=c++20")
endif()
foreach(api c cpp)
  if(api STREQUAL "c")
    set(compiler ${RILL_C_COMPILER})
    set(pc rill-c)
  else()
    set(compiler ${RILL_CXX_COMPILER})
    set(pc rill)
  endif()
  set(out ${RILL_WORK_DIR}/pkg-config-${api})
  if(EXISTS ${libdir}/librill.so)
    pkg_flags(cflags --cflags ${pc})
    pkg_flags(libs --libs ${pc})
    run(${compiler} ${flags} ${cflags} ${RILL_CONSUMER_DIR}/consumer.${api} -o ${out}-shared ${libs}
        -Wl,-rpath,${libdir})
    run(${out}-shared)
  endif()
  if(EXISTS ${libdir}/librill.a)
    pkg_flags(cflags --static --cflags ${pc})
    pkg_flags(libs --static --libs ${pc})
    list(TRANSFORM libs REPLACE "^-lrill$" "-l:librill.a")  # the archive, though librill.so is there too
    run(${compiler} ${flags} ${cflags} ${RILL_CONSUMER_DIR}/consumer.${api} -o ${out}-static ${libs})
    run(${READELF} -d ${out}-static)
    if(run_output MATCHES "librill\\.so")
      message(FATAL_ERROR "${out}-static should not need librill.so:\n${run_output}")
    endif()
    run(${out}-static)
  endif()
endforeach()

# The C++ consumer built by clang (with the system's libstdc++) against the same library: the public
# headers must not lean on what only GCC supports (std::source_location needed clang 15 there).
# A sanitized library needs its own runtime, which only the build's compiler links: those builds
# leave this to the plain ones.
if(NOT RILL_CONSUMER_FLAGS MATCHES "sanitize" AND EXISTS ${libdir}/librill.so)
  if(NOT RILL_CLANG_CXX)
    message(FATAL_ERROR "no clang++ to build the consumer with (tools/quickstart.sh test installs clang)")
  endif()
  pkg_flags(cflags --cflags rill)  # PKG_CONFIG_PATH is still the moved tree's (above)
  pkg_flags(libs --libs rill)
  # Every installed header on its own line of one file, compiled by clang with warnings as errors.
  file(GLOB_RECURSE headers RELATIVE ${prefix}/include ${prefix}/include/rill/*.hpp)
  list(LENGTH headers header_count)
  if(header_count LESS 10)
    message(FATAL_ERROR "expected rill's installed C++ headers, found: ${headers}")
  endif()
  set(every_header ${RILL_WORK_DIR}/every_header.cpp)
  file(WRITE ${every_header} "")
  foreach(header IN LISTS headers)
    file(APPEND ${every_header} "#include <${header}>\n")
  endforeach()
  run(${RILL_CLANG_CXX} -fsyntax-only -Wall -Wextra -Werror ${cflags} ${every_header})
  set(out ${RILL_WORK_DIR}/clang-cpp-shared)
  run(${RILL_CLANG_CXX} -Wall -Wextra -Werror ${cflags} ${RILL_CONSUMER_DIR}/consumer.cpp -o ${out} ${libs}
      -Wl,-rpath,${libdir})
  run(${out})
endif()
