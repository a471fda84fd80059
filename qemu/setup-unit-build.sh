#!/usr/bin/env bash
# The meson build directory of the QEMU-free unit tests (BUILD_DIR/unit), set up with the
# configured sanitizer choice (FEMU_SANITIZERS=yes: b_sanitize=address,undefined). A change
# of the choice reconfigures it; tests/unit/run.sh then builds and runs the tests.
#
#   qemu/setup-unit-build.sh BUILD_DIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
root=$(repo_root)
build=${1:?usage: setup-unit-build.sh BUILD_DIR}
unit=$build/unit
sanitizers=$(femu_yes_no FEMU_SANITIZERS)
need_debs gcc pkg-config ninja-build libglib2.0-dev
meson=$build/venv/bin/meson
[ -x "$meson" ] || "$here/setup-venv.sh" "$build/venv"

if [ "$sanitizers" = yes ]; then
    # Undefined behaviour stops the test like an ASan error does, whatever UBSAN_OPTIONS say.
    opts=(-Db_sanitize=address,undefined -Dc_args=-fno-sanitize-recover=undefined)
else
    opts=(-Db_sanitize=none -Dc_args=)
fi
want=$(printf '%s\n' "${opts[@]}")
if [ ! -f "$unit/build.ninja" ]; then
    "$meson" setup "$unit" "$root" "${opts[@]}" >/dev/null
elif [ "$(cat "$unit/.femu-options" 2>/dev/null)" != "$want" ]; then
    step "reconfiguring the unit tests: ${opts[*]}"
    "$meson" configure "$unit" "${opts[@]}" >/dev/null
    done_step
fi
echo "$want" > "$unit/.femu-options"
