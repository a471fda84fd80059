#!/bin/bash
# Build the guest programs of this repository: static binaries in OUTDIR
# (images/build-image.sh puts them in the initramfs's /usr/local/bin).
# Usage: guest/build.sh OUTDIR
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=${1:?usage: guest/build.sh OUTDIR}
mkdir -p "$out"
cc=${CC:-gcc}
cflags=(-static -O2 -Wall -s)
# ocssd: the OCSSD 2.0 command-line tool
cli=$here/cli/cli.c     # the command-line helpers they share
"$cc" "${cflags[@]}" -o "$out/ocssd" "$here/ocssd/ocssd.c" "$here/ocssd/oc-nvme.c" "$cli" -lpthread
# hostftl: the host FTL behind an NBD device (uses ocssd's passthrough library)
"$cc" "${cflags[@]}" -o "$out/hostftl" "$here"/hostftl/*.c "$here/ocssd/oc-nvme.c" "$cli" -lpthread
# plp-write, plp-load: writes with the power-loss protection flag, and the power-cut test load
"$cc" "${cflags[@]}" -o "$out/plp-write" "$here/plp/plp-write.c" "$here/plp/plp-nvme.c" "$here/plp/plp-pattern.c" "$cli"
"$cc" "${cflags[@]}" -o "$out/plp-load" "$here/plp/plp-load.c" "$here/plp/plp-nvme.c" "$here/plp/plp-pattern.c" "$cli"
