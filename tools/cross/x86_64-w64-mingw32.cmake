# Cross build for 64-bit Windows with Debian's MinGW-w64 (the posix thread model, for std::thread
# and std::mutex); tools/cross/windows.sh installs it and prepares the staging folder.
#
# The header-only dependencies (Vulkan headers, volk, nlohmann-json, CLI11) are the Debian ones,
# but /usr/include cannot be on a MinGW include path (glibc's headers would shadow MinGW's): the
# staging folder RILL_CROSS_STAGING holds links to just those headers and copies of their CMake
# package files, and is the only root searched for packages, headers and libraries.
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(CMAKE_C_COMPILER x86_64-w64-mingw32-gcc-posix)
set(CMAKE_CXX_COMPILER x86_64-w64-mingw32-g++-posix)
set(CMAKE_RC_COMPILER x86_64-w64-mingw32-windres)

list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES RILL_CROSS_STAGING)
if(NOT RILL_CROSS_STAGING)
  message(FATAL_ERROR "the Windows cross build needs -DRILL_CROSS_STAGING=<folder> (tools/cross/windows.sh sets it)")
endif()
set(CMAKE_FIND_ROOT_PATH ${RILL_CROSS_STAGING} /usr/x86_64-w64-mingw32)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)  # glslangValidator, spirv-val: the host's
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# The programs and librill.dll carry the GCC runtime, so they run without MinGW's DLLs beside them.
set(CMAKE_EXE_LINKER_FLAGS_INIT "-static")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "-static-libgcc -static-libstdc++ -Wl,-Bstatic,--whole-archive -lwinpthread -Wl,--no-whole-archive")

# GCC 12 reports a false -Wrestrict inside std::string's inlined copies at -O3 (GCC bug 105329).
set(CMAKE_CXX_FLAGS_INIT "-Wno-restrict")

# Tests run under Wine (tools/cross/windows.sh test installs it); a build alone needs none.
set(CMAKE_CROSSCOMPILING_EMULATOR ${CMAKE_CURRENT_LIST_DIR}/wine.sh)
