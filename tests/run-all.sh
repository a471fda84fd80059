#!/usr/bin/env bash
# The whole test suite (`make check`): unit tests of the QEMU-free model, qtest device tests,
# and guest tests with the real tools, all in one pytest run that prints one summary line
# (pytest builds the unit tests with meson: tests/unit/conftest.py).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
. "$root/qemu/lib.sh"
cd "$root"
bash tests/unit/run.sh "$build" --prepare
step "unit, device and guest tests (pytest)"
export FEMU_BUILD=$build
exec "$build/venv/bin/python3" -m pytest tests -v
