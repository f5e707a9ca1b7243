# Installs the build into a scratch prefix, then configures, builds and runs the consumer project
# against it with find_package(rill), and checks the pkg-config file.
file(REMOVE_RECURSE ${RILL_WORK_DIR})
set(prefix ${RILL_WORK_DIR}/prefix)
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "command failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  message("${out}")
endfunction()
run(${CMAKE_COMMAND} --install ${RILL_BUILD_DIR} --prefix ${prefix})
run(${CMAKE_COMMAND} -S ${RILL_CONSUMER_DIR} -B ${RILL_WORK_DIR}/build -G ${RILL_GENERATOR}
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release
    # Same sanitizer flags as the library under test, so an ASan build links and runs.
    "-DCMAKE_C_FLAGS=${RILL_CONSUMER_FLAGS}" "-DCMAKE_CXX_FLAGS=${RILL_CONSUMER_FLAGS}"
    "-DCMAKE_EXE_LINKER_FLAGS=${RILL_CONSUMER_FLAGS}")
run(${CMAKE_COMMAND} --build ${RILL_WORK_DIR}/build)
# The consumers prove that installing and linking work; leaks are checked by rill's own executables,
# which keep the Vulkan libraries mapped (tests/sanitizers/pin_vulkan.c) — these cannot, so the
# unloaded driver's memory would look leaked.
set(ENV{ASAN_OPTIONS} "detect_leaks=0")
run(${RILL_WORK_DIR}/build/consumer_cpp)
run(${RILL_WORK_DIR}/build/consumer_c)
file(GLOB pc ${prefix}/lib*/pkgconfig/rill.pc ${prefix}/lib/*/pkgconfig/rill.pc)
if(NOT pc)
  message(FATAL_ERROR "rill.pc was not installed")
endif()
find_program(PKG_CONFIG pkg-config)
if(PKG_CONFIG)
  get_filename_component(pc_dir ${pc} DIRECTORY)
  set(ENV{PKG_CONFIG_PATH} ${pc_dir})
  run(${PKG_CONFIG} --cflags --libs rill)
endif()
