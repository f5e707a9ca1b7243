#!/usr/bin/env bash
# Runs a command, then prints its exit status: CTest ignores the exit code of a test that matches
# its output (PASS_REGULAR_EXPRESSION), so a crash after the matched line would pass. Every test
# fails on a nonzero "[exit status N]" (tests/CMakeLists.txt, at the end).
#   tests/exit_status.sh COMMAND [ARGS...]
"$@"
status=$?
echo "[exit status $status]"
exit "$status"
