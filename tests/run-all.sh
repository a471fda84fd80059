#!/usr/bin/env bash
# The whole test suite (`make check`): unit tests of the QEMU-free model, qtest device tests,
# and guest tests with the real tools. One pytest run prints the summary line.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
. "$root/qemu/lib.sh"
cd "$root"
step "unit tests of the QEMU-free model (meson + GTest)"
bash tests/unit/run.sh "$build"
step "device and guest tests (pytest)"
export FEMU_BUILD=$build
exec "$build/venv/bin/python3" -m pytest tests -v
