#!/usr/bin/env bash
# Build qemu-system-x86_64 with FEMU grafted in, into BUILD_DIR (default: <repo>/build).
# Each step runs only when needed: an edit to hw/femu rebuilds just what changed, and a
# change of the choices below reconfigures and rebuilds QEMU.
#
# The choices (./configure records them in config.mk; make passes them on; unset: default):
#   FEMU_QEMU_SOURCE  debian (Debian's source package) or the path of a QEMU 10.0 tree
#   FEMU_DEBUG, FEMU_SANITIZERS, FEMU_FUZZING   yes or no
#   FEMU_QEMU_ARGS    more arguments for QEMU's configure, one per line
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
root=$(repo_root)
build=${1:-$root/build}
src=$build/qemu-src
obj=$build/qemu-build
mkdir -p "$build"
source_choice=${FEMU_QEMU_SOURCE:-debian}
debug=$(femu_yes_no FEMU_DEBUG)
sanitizers=$(femu_yes_no FEMU_SANITIZERS)
fuzzing=$(femu_yes_no FEMU_FUZZING)
extra_args=()
while IFS= read -r arg; do [ -z "$arg" ] || extra_args+=("$arg"); done <<<"${FEMU_QEMU_ARGS:-}"
flavour=""
[ "$debug" = no ] || flavour+=" debug"
[ "$sanitizers" = no ] || flavour+=" ASan+UBSan"
[ "$fuzzing" = no ] || flavour+=" libFuzzer"

# What QEMU needs to configure and build (Debian 12 package names).
need_debs gcc make ninja-build pkg-config python3-venv libglib2.0-dev libpixman-1-dev \
          libfdt-dev zlib1g-dev flex bison patch
# gdb: femu-launch.sh prints QEMU's thread stacks with it when a guest's boot hangs
need_debs gdb
[ "$fuzzing" = no ] || need_clang_fuzzer

# QEMU 10 wants meson >= 1.5; Debian 12 has 1.0, so meson comes from PyPI into our venv.
venv=$build/venv
"$here/setup-venv.sh" "$venv"

graft_id=$(cat "$root/qemu/femu-graft.patch" "$root/qemu/VERSION" | sha1sum | cut -c1-12)
if [ "$source_choice" = debian ]; then
    # A link left by an earlier local tree is replaced, never followed.
    [ ! -L "$src" ] || rm -f "$src"
    if [ ! -f "$src/.femu-source" ] || [ "$(cat "$src/.femu-graft" 2>/dev/null)" != "$graft_id" ]; then
        "$here/fetch-source.sh" "$src"
        echo "$graft_id" > "$src/.femu-graft"
        rm -rf "$obj"
    fi
    if [ "$(readlink "$src/hw/femu" 2>/dev/null)" != "$root/hw/femu" ]; then
        # Another checkout's files may be older than the objects built from the last one:
        # make would keep those objects, so the device code is compiled again.
        find "$obj" -name '*hw_femu*' -delete 2>/dev/null || true
    fi
    ln -sfn "$root/hw/femu" "$src/hw/femu"
    source_id="debian $(cat "$src/.femu-source") $graft_id"
else
    tree=$(cd "$source_choice" 2>/dev/null && pwd -P) || \
        die "FEMU_QEMU_SOURCE=$source_choice: no such directory (see ./configure --help)"
    "$here/local-source.sh" graft "$tree"
    # $src stays where the source is found (the qtest suite loads QEMU's python/ from it).
    if [ -L "$src" ]; then rm -f "$src"; elif [ -e "$src" ]; then rm -rf "$src"; fi
    ln -s "$tree" "$src"
    source_id="local $tree $(cat "$tree/VERSION") $graft_id"
fi

# Only what FEMU needs: x86_64 system emulation with TCG and KVM, no docs, GUI or network
# backends. This keeps the build to a few minutes on 2 cores.
config_args=(--python="$venv/bin/python3" --target-list=x86_64-softmmu
             --without-default-features --enable-tcg --enable-kvm --enable-fdt=system
             --enable-trace-backends=log --disable-download --disable-docs
             --disable-install-blobs --disable-werror)
# FEMU_DEBUG: the models abort on what can only be their own bug (e.g. an SRA transition
# outside its table) instead of counting it.
[ "$debug" = no ] || config_args+=(--enable-debug --extra-cflags=-DFEMU_DEBUG)
# Frame pointers give ASan's allocation and free stacks (taken with its fast unwinder) all frames.
[ "$sanitizers" = no ] || config_args+=(--enable-asan --enable-ubsan --extra-cflags=-fno-omit-frame-pointer)
# libFuzzer needs clang; QEMU then also builds its fuzzer, qemu-fuzz-x86_64.
[ "$fuzzing" = no ] || config_args+=(--cc=clang --cxx=clang++ --enable-fuzzing)
# Last, so that they can override the above.
config_args+=("${extra_args[@]}")
targets=(qemu-system-x86_64)
[ "$fuzzing" = no ] || targets+=(qemu-fuzz-x86_64)
# Any change of the arguments or of a local tree configures QEMU afresh (a new Debian source
# does so above); for Debian's source the id is what it was before ./configure existed.
config_id=$( { [ "$source_choice" = debian ] || echo "$source_id"; printf '%s\n' "${config_args[@]}"; } |
            sha1sum | cut -c1-12)
if [ ! -f "$obj/build.ninja" ] || [ "$(cat "$obj/.femu-config" 2>/dev/null)" != "$config_id" ]; then
    step "configuring QEMU (${source_id% *})"
    printf '    %s\n' "configure ${config_args[*]}"
    rm -rf "$obj"; mkdir -p "$obj"
    (cd "$obj" && "$src/configure" "${config_args[@]}" >configure.log 2>&1) || \
        { tail -20 "$obj/configure.log" >&2; die "QEMU configure failed: see $obj/configure.log"; }
    echo "$config_id" > "$obj/.femu-config"
    done_step
fi

step "building ${targets[*]} (first build: about 4 minutes on 2 cores, more with sanitizers)"
if ! ninja -C "$obj" "${targets[@]}" >"$obj/ninja.log" 2>&1; then
    grep -E -A5 'error:|Error|FAILED' "$obj/ninja.log" | head -40 >&2
    die "QEMU build failed: see $obj/ninja.log"
fi
for t in "${targets[@]}"; do ln -sfn "qemu-build/$t" "$build/$t"; done
[ "$fuzzing" = yes ] || rm -f "$build/qemu-fuzz-x86_64"
done_step
# (LeakSanitizer would fail this quick run on QEMU's allocations kept until exit.)
ASAN_OPTIONS=detect_leaks=0 "$build/qemu-system-x86_64" -device help 2>/dev/null | grep '"femu"' >/dev/null || \
    die "the built QEMU has no femu device (graft failed?)"
echo "==> $build/qemu-system-x86_64 is ready${flavour:+ (build:$flavour)}"
