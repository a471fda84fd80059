#!/usr/bin/env bash
# Builds femu-sim in the unit tests' meson build (BUILD_DIR/unit) and puts it at
# BUILD_DIR/femu-sim.
#
#   sim/build-sim.sh BUILD_DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/qemu/lib.sh"
build=${1:?usage: build-sim.sh BUILD_DIR}
step "building femu-sim ($build/femu-sim)"
ninja -C "$build/unit" sim/femu-sim >/dev/null
cp "$build/unit/sim/femu-sim" "$build/femu-sim.tmp"
mv "$build/femu-sim.tmp" "$build/femu-sim"
done_step
