#!/usr/bin/env bash
# `make check-sanitizers`: the unit tests and the qtest suite with AddressSanitizer and
# UndefinedBehaviorSanitizer, QEMU built with QEMU's own --enable-asan --enable-ubsan and the
# unit tests with meson's b_sanitize=address,undefined. Any sanitizer report fails the test
# that caused it (tests/sanitizer_reports.py for QEMU) and so the run.
#
#   tests/run-sanitizers.sh SAN_BUILD_DIR [VENV]
#
# SAN_BUILD_DIR gets QEMU, its source and the unit tests; VENV (default SAN_BUILD_DIR/venv) is
# shared with the normal build. The other recorded choices (QEMU source, debug, fuzzing,
# extra QEMU arguments) come from the environment as make passes them.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/qemu/lib.sh"
build=${1:-$root/build/sanitizers}
venv=${2:-$build/venv}
cd "$root"
export FEMU_SANITIZERS=yes
t0=$(date +%s)

mkdir -p "$build"
"$root/qemu/setup-venv.sh" "$venv"
[ "$(realpath -m "$build/venv")" = "$(realpath -m "$venv")" ] || ln -sfn "$venv" "$build/venv"
bash qemu/build-qemu.sh "$build"
bash qemu/setup-unit-build.sh "$build"
step "building the unit tests with ASan+UBSan"
ninja -C "$build/unit" >"$build/unit/ninja.log" 2>&1 || { tail -30 "$build/unit/ninja.log" >&2; die "unit test build failed: see $build/unit/ninja.log"; }
done_step

logs=$build/sanitizer-logs
rm -rf "$logs"; mkdir -p "$logs"
# halt_on_error: the first error stops the process (UBSan would go on otherwise), so the test
# that caused it fails. LeakSanitizer checks every process at exit; QEMU's own leaks are listed
# in lsan-suppressions.txt. The slow unwinder gives allocation stacks through GLib (built
# without frame pointers) down to the caller in QEMU or FEMU.
export ASAN_OPTIONS="halt_on_error=1:abort_on_error=0:detect_leaks=1:fast_unwind_on_malloc=0:print_summary=1"
export LSAN_OPTIONS="suppressions=$root/tests/lsan-suppressions.txt:print_suppressions=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:print_summary=1"
# QEMU through a wrapper that keeps its stderr in $logs (see sanitizer_reports.py).
export FEMU_SANITIZER_LOGS=$logs FEMU_SANITIZER_QEMU=$build/qemu-system-x86_64
export FEMU_BUILD=$build FEMU_QEMU=$root/tests/sanitizer-qemu.sh
export PYTHONPATH=$root/tests${PYTHONPATH:+:$PYTHONPATH}
step "unit and qtest tests under ASan+UBSan (reports: $logs)"
status=0
"$build/venv/bin/python3" -m pytest -p sanitizer_reports tests/unit tests/qtest -v || status=$?
echo "==> check-sanitizers took $(( $(date +%s) - t0 ))s"
exit $status
