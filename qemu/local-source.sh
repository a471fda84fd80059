#!/usr/bin/env bash
# A local QEMU 10.0 source tree instead of Debian's source package (./configure --qemu-source=PATH).
#
#   qemu/local-source.sh check PATH   is PATH a QEMU 10.0 tree that the graft applies to (or has it)?
#   qemu/local-source.sh graft PATH   apply qemu/femu-graft.patch unless it is applied already,
#                                     and link PATH/hw/femu to this repository's hw/femu
#
# The tree is changed in place (three lines and a link), as a graft onto Debian's source is.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
root=$(repo_root)
action=${1:?usage: local-source.sh check|graft PATH}
tree=${2:?usage: local-source.sh check|graft PATH}
patch_file=$root/qemu/femu-graft.patch
what="--qemu-source=$tree"

[ -d "$tree" ] || die "$what: no such directory (give a QEMU 10.0 source tree, or --qemu-source=debian)"
for f in VERSION configure meson.build hw/nvme/ctrl.c python/qemu; do
    [ -e "$tree/$f" ] || die "$what: not a QEMU source tree ($f is missing)"
done
version=$(head -1 "$tree/VERSION")
[[ $version == 10.0.* ]] || die "$what: this is QEMU $version; FEMU is built on QEMU 10.0.x"

# Applied already when the reverse patch applies cleanly; otherwise it must apply forward.
graft_state() {
    if (cd "$tree" && patch -p1 -R --dry-run --force --quiet <"$patch_file" >/dev/null 2>&1); then
        echo applied
    elif (cd "$tree" && patch -p1 --dry-run --forward --quiet <"$patch_file" >/dev/null 2>&1); then
        echo clean
    else
        die "$what: qemu/femu-graft.patch neither applies to this QEMU $version tree nor is applied already (a changed hw/Kconfig, hw/meson.build or meson.build?)"
    fi
}
state=$(graft_state)
link=$tree/hw/femu
if [ -e "$link" ] && [ ! -L "$link" ]; then
    die "$what: $link exists and is not a link; FEMU links its own hw/femu there (move it away)"
fi

case $action in
check) ;;
graft)
    if [ "$state" = clean ]; then
        step "grafting hw/femu into $tree (qemu/femu-graft.patch)"
        (cd "$tree" && patch -p1 --forward --quiet <"$patch_file") || die "$what: applying qemu/femu-graft.patch failed"
        done_step
    fi
    # A link, not a copy: edits to hw/femu rebuild incrementally.
    ln -sfn "$root/hw/femu" "$link"
    ;;
*) die "local-source.sh: unknown action '$action' (check or graft)" ;;
esac
