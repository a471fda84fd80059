#!/usr/bin/env bash
# Obtain Debian's QEMU 10.0 source package through a private apt configuration and unpack it
# (dpkg-source applies Debian's patches), then graft hw/femu in.
#
#   qemu/fetch-source.sh SRC_DIR
#
# Downloads are cached in $(femu_cache_dir)/qemu-source, so a rebuild needs no network. The
# machine's apt configuration is never changed: the deb-src entries are derived from the
# Debian archives the machine already uses.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
. "$here/VERSION"
root=$(repo_root)
src_dir=${1:?usage: fetch-source.sh SRC_DIR}
cache=$(femu_cache_dir)/qemu-source
apt_dir=$(femu_cache_dir)/apt
mkdir -p "$cache" "$apt_dir"

# Print "URI SUITE-KIND" for each Debian archive the machine uses; KIND is main or security.
machine_debian_archives() {
    local f
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        # deb822 stanzas: keep those that carry Debian suites and are signed by Debian's keyring.
        awk 'BEGIN{RS=""; FS="\n"}
             { uris=""; suites=""; keyring="";
               for (i=1;i<=NF;i++) {
                 if ($i ~ /^URIs:/) uris=substr($i,6);
                 if ($i ~ /^Suites:/) suites=substr($i,8);
                 if ($i ~ /^Signed-By:/) keyring=substr($i,11) }
               if (keyring !~ /debian-archive-keyring/ && suites !~ /(bookworm|trixie|bullseye|sid)/) next;
               n=split(uris,u," ");
               for (j=1;j<=n;j++) print u[j], (suites ~ /security/ ? "security" : "main") }' "$f"
    done
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -f "$f" ] || continue
        awk '$1=="deb" || $1=="deb-src" {
               i=2; if ($2 ~ /^\[/) { while ($i !~ /\]$/) i++; i++ }
               uri=$i; suite=$(i+1);
               if (suite !~ /(bookworm|trixie|bullseye|sid)/) next;
               print uri, (suite ~ /security/ ? "security" : "main") }' "$f"
    done
}

write_private_sources() {
    local list=$apt_dir/sources.list uri kind suite
    : > "$list"
    while read -r uri kind; do
        for suite in $QEMU_SUITES; do
            # security suites live in their own archive
            if [[ "$suite" == *-security ]]; then [ "$kind" = security ] || continue
            else [ "$kind" = main ] || continue; fi
            echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $uri $suite main" >> "$list"
        done
    done < <(machine_debian_archives | sort -u)
    [ -s "$list" ] || die "no Debian archive found in /etc/apt/sources.list* to derive deb-src entries from"
}

apt_private() {
    local tool=apt-get
    [ "$1" = showsrc ] && tool=apt-cache
    "$tool" -q -o Dir::Etc::SourceList="$apt_dir/sources.list" -o Dir::Etc::SourceParts=/dev/null \
        -o Dir::State::Lists="$apt_dir/lists" -o Dir::Cache="$apt_dir/cache" \
        -o APT::Get::List-Cleanup=0 -o Debug::NoDropPrivs=1 -o APT::Sandbox::User=root "$@"
}

# A cached .dsc whose files are all present needs no network at all.
cached_dsc() {
    local dsc
    for dsc in $(ls -1 "$cache"/qemu_*.dsc 2>/dev/null | sort -Vr); do
        if awk '/^Files:/{f=1;next} /^[^ ]/{f=0} f{print $3}' "$dsc" | (cd "$cache" && xargs -r ls >/dev/null 2>&1); then
            echo "$dsc"; return 0
        fi
    done
    return 1
}

fetch_source() {
    step "finding Debian's QEMU ${QEMU_VERSION_PATTERN}x source package (suites: $QEMU_SUITES)"
    need_debs dpkg-dev xz-utils debian-archive-keyring
    write_private_sources
    mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
    apt_private update >"$apt_dir/update.log" 2>&1 || \
        die "apt-get update on the private source list failed (no network?): see $apt_dir/update.log"
    local versions v
    versions=$(apt_private showsrc qemu 2>/dev/null | awk '/^Package: qemu$/{p=1} /^Version:/{if(p)print $2; p=0}' |
               grep -F "$QEMU_VERSION_PATTERN" | sort -Vru || true)
    [ -n "$versions" ] || die "no qemu source package matching version ${QEMU_VERSION_PATTERN}x in suites $QEMU_SUITES (wrong QEMU version on the mirror?)"
    for v in $versions; do
        echo "    trying qemu $v"
        if (cd "$cache" && apt_private source --download-only "qemu=$v" >"$apt_dir/source.log" 2>&1); then
            done_step; return 0
        fi
        echo "    qemu $v could not be downloaded (a file is missing on the mirror?): $(grep -m1 -E 'Err|E:' "$apt_dir/source.log" || true)"
    done
    die "no qemu ${QEMU_VERSION_PATTERN}x source package could be downloaded; last log: $apt_dir/source.log"
}

dsc=$(cached_dsc || true)
if [ -z "$dsc" ]; then
    fetch_source
    dsc=$(cached_dsc) || die "download finished but no complete qemu .dsc is in $cache"
else
    echo "==> using cached QEMU source $(basename "$dsc")"
fi

step "unpacking $(basename "$dsc") into $src_dir (dpkg-source applies Debian's patches)"
rm -rf "$src_dir" "$src_dir.tmp"
dpkg-source --no-check -x "$dsc" "$src_dir.tmp" >"$(dirname "$src_dir")/dpkg-source.log" 2>&1 || \
    die "dpkg-source failed: see $(dirname "$src_dir")/dpkg-source.log"
grep -q "^10\.0\." "$src_dir.tmp/VERSION" || die "unpacked QEMU is version $(cat "$src_dir.tmp/VERSION"), 10.0.x expected"
done_step

step "grafting hw/femu into QEMU"
(cd "$src_dir.tmp" && patch -p1 --quiet --forward < "$root/qemu/femu-graft.patch") || \
    die "qemu/femu-graft.patch does not apply to $(basename "$dsc")"
# A link, not a copy: edits to hw/femu rebuild incrementally.
ln -sfn "$root/hw/femu" "$src_dir.tmp/hw/femu"
basename "$dsc" > "$src_dir.tmp/.femu-source"
mv "$src_dir.tmp" "$src_dir"
done_step
