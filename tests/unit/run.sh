#!/usr/bin/env bash
# Unit tests of the QEMU-free model code: meson + GLib's GTest, no QEMU build.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
. "$root/qemu/lib.sh"
build=${1:-$root/build}
need_debs gcc pkg-config ninja-build libglib2.0-dev
meson=$build/venv/bin/meson
[ -x "$meson" ] || "$root/qemu/setup-venv.sh" "$build/venv"
if [ ! -f "$build/unit/build.ninja" ]; then
    "$meson" setup "$build/unit" "$root" >/dev/null
fi
"$meson" test -C "$build/unit" --print-errorlogs
