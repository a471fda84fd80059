#!/usr/bin/env bash
# Unit tests of the QEMU-free model code: GLib's GTest binaries, built with meson and run
# by pytest (tests/unit/conftest.py), no QEMU build. `run.sh BUILD --prepare` only installs
# what they need (run-all.sh then runs them in its single pytest session).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
. "$root/qemu/lib.sh"
build=${1:-$root/build}
need_debs gcc pkg-config ninja-build libglib2.0-dev
[ -x "$build/venv/bin/meson" ] || "$root/qemu/setup-venv.sh" "$build/venv"
[ "${2:-}" = --prepare ] && exit 0
cd "$root"
FEMU_BUILD=$build exec "$build/venv/bin/python3" -m pytest tests/unit
