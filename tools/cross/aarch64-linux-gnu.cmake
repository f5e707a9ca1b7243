# Cross build for 64-bit ARM Linux with Debian's cross toolchain and arm64 multiarch packages
# (tools/cross/arm64.sh installs them). Debian's multiarch layout is found through
# CMAKE_LIBRARY_ARCHITECTURE, so no CMAKE_FIND_ROOT_PATH: a root path would hide the
# architecture-independent headers (volk, nlohmann-json, CLI11, Catch2) that both builds share.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# Tests and test discovery run under user-mode emulation; the build-time tool spirv_embed is built
# for the host instead (CMakeLists.txt).
find_program(RILL_QEMU_AARCH64 qemu-aarch64 REQUIRED)
set(CMAKE_CROSSCOMPILING_EMULATOR ${RILL_QEMU_AARCH64})

# pkg-config reads the arm64 .pc files only. libsentencepiece-dev cannot be installed beside the
# native one (Debian does not mark it Multi-Arch), so arm64.sh unpacks it into a staging folder
# given as RILL_CROSS_STAGING; the libraries found there are also on the build tree's RPATH.
# try_compile re-reads this file in the same process: pass the staging folder on, or the
# environment set below would lose it.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES RILL_CROSS_STAGING)
set(pc_dirs /usr/lib/aarch64-linux-gnu/pkgconfig /usr/share/pkgconfig)
if(RILL_CROSS_STAGING)
  list(PREPEND pc_dirs ${RILL_CROSS_STAGING}/usr/lib/aarch64-linux-gnu/pkgconfig)
  set(CMAKE_BUILD_RPATH ${RILL_CROSS_STAGING}/usr/lib/aarch64-linux-gnu)
endif()
list(JOIN pc_dirs ":" pc_path)
set(ENV{PKG_CONFIG_LIBDIR} "${pc_path}")
set(ENV{PKG_CONFIG_PATH} "")
