#!/usr/bin/env bash
# Build qemu-system-x86_64 with FEMU grafted in, into BUILD_DIR (default: <repo>/build).
# Each step runs only when needed: an edit to hw/femu rebuilds just what changed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
root=$(repo_root)
build=${1:-$root/build}
src=$build/qemu-src
obj=$build/qemu-build
mkdir -p "$build"

# What QEMU needs to configure and build (Debian 12 package names).
need_debs gcc make ninja-build pkg-config python3-venv libglib2.0-dev libpixman-1-dev \
          libfdt-dev zlib1g-dev flex bison patch

# QEMU 10 wants meson >= 1.5; Debian 12 has 1.0, so meson comes from PyPI into our venv.
venv=$build/venv
"$here/setup-venv.sh" "$venv"

graft_id=$(cat "$root/qemu/femu-graft.patch" "$root/qemu/VERSION" | sha1sum | cut -c1-12)
if [ ! -f "$src/.femu-source" ] || [ "$(cat "$src/.femu-graft" 2>/dev/null)" != "$graft_id" ]; then
    "$here/fetch-source.sh" "$src"
    echo "$graft_id" > "$src/.femu-graft"
    rm -rf "$obj"
fi
ln -sfn "$root/hw/femu" "$src/hw/femu"

# Only what FEMU needs: x86_64 system emulation with TCG and KVM, no docs, GUI or network
# backends. This keeps the build to a few minutes on 2 cores.
config_args=(--python="$venv/bin/python3" --target-list=x86_64-softmmu
             --without-default-features --enable-tcg --enable-kvm --enable-fdt=system
             --enable-trace-backends=log --disable-download --disable-docs
             --disable-install-blobs --disable-werror)
config_id=$(printf '%s\n' "${config_args[@]}" | sha1sum | cut -c1-12)
if [ ! -f "$obj/build.ninja" ] || [ "$(cat "$obj/.femu-config" 2>/dev/null)" != "$config_id" ]; then
    step "configuring QEMU ($(cat "$src/.femu-source"))"
    rm -rf "$obj"; mkdir -p "$obj"
    (cd "$obj" && "$src/configure" "${config_args[@]}" >configure.log 2>&1) || \
        { tail -20 "$obj/configure.log" >&2; die "QEMU configure failed: see $obj/configure.log"; }
    echo "$config_id" > "$obj/.femu-config"
    done_step
fi

step "building qemu-system-x86_64 (first build: about 4 minutes on 2 cores)"
if ! ninja -C "$obj" qemu-system-x86_64 >"$obj/ninja.log" 2>&1; then
    grep -E -A5 'error:|Error|FAILED' "$obj/ninja.log" | head -40 >&2
    die "QEMU build failed: see $obj/ninja.log"
fi
ln -sfn qemu-build/qemu-system-x86_64 "$build/qemu-system-x86_64"
done_step
"$build/qemu-system-x86_64" -device help 2>/dev/null | grep -q '"femu"' || \
    die "the built QEMU has no femu device (graft failed?)"
echo "==> $build/qemu-system-x86_64 is ready"
