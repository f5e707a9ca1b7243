#!/usr/bin/env bash
# Runs a Windows program under Wine: the test emulator of the Windows cross build
# (x86_64-w64-mingw32.cmake). tools/cross/windows.sh test makes the Wine prefix and starts the X
# server that winevulkan needs (WINEPREFIX, DISPLAY); Wine's own diagnostics stay off unless
# WINEDEBUG asks for them.
set -euo pipefail
export WINEDEBUG="${WINEDEBUG:--all}"
# No .NET or HTML engines (neither is installed): a prefix made without them asks for nothing.
export WINEDLLOVERRIDES="${WINEDLLOVERRIDES:-mscoree,mshtml=}"
wine=$(command -v wine64 || command -v wine || echo /usr/lib/wine/wine64)
exec "$wine" "$@"
