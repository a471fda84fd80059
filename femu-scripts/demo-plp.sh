#!/bin/bash
# Selective power-loss protection (PLP) in one command: boot a guest with a zoned drive
# (plp=selective, zones 0-1 protected, file backend), write four small blocks
#   A  with the protected flag (CDW3 bit 0), zone 2
#   C  without it, then a Flush, zone 4
#   D  without it, in zone 0 (listed in plp_zones, so protected anyway)
#   B  without it and after the Flush, zone 3
# cut the power over QMP (femu-power-cut.py), start QEMU again on the same file, and look
# at what survived (blkzone, nvme-cli, hexdump, plp-write check). A, C and D must be
# there and B must be gone: the verdict line says whether that is what happened.
#
# Usage: femu-scripts/demo-plp.sh [--dir DIR] [--keep] [--dev "k=v,..."]
#   --dir DIR   work directory (default: a new one under /tmp, removed after unless --keep)
#   --keep      keep the backing file and the logs
#   --dev ...   extra femu properties (e.g. plp_flush=normal)
# Exit status: 0 the verdict is PASS, 1 FAIL, 2 the demo could not run.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
prog=$(basename "$0")
dir= keep= extra_dev=
while (($#)); do
	case $1 in
	--dir) dir=${2:?--dir needs a value}; shift 2 ;;
	--keep) keep=1; shift ;;
	--dev) extra_dev=${2:?--dev needs a value}; shift 2 ;;
	--help | -h) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "$prog: unknown option '$1' (see --help)" >&2; exit 2 ;;
	esac
done

say() { printf '\n==> %s\n' "$*"; }
die() { echo "$prog: $*" >&2; exit 2; }

# Does this QEMU's femu have PLP? (the same QEMU the launcher picks)
build=$repo/build
[[ ! -f $repo/config.mk ]] || build=$(sed -n 's/^BUILD := //p' "$repo/config.mk" | tail -1)
qemu=${FEMU_QEMU:-$build/qemu-system-x86_64}
[[ -x $qemu ]] || make -C "$repo" qemu >&2 || die "'make qemu' failed"
"$qemu" -device femu,help 2>/dev/null | grep -q 'power-cut' ||
	die "$qemu: the femu device has no power-loss protection (plp=, power-cut); rebuild with 'make qemu'"

if [[ -z $dir ]]; then
	dir=$(mktemp -d /tmp/femu-plp-demo.XXXXXX)
	[[ -n $keep ]] || trap 'rm -rf "$dir"' EXIT
else
	mkdir -p "$dir"
fi
backing=$dir/drive.img sock=$dir/qmp.sock
rm -f "$backing" "$sock"
# 64 MiB, 32 zones of 2 MiB (4096 LBAs of 512 bytes); the default buffers (PLP 32 MiB,
# non-PLP 64 MiB: the launcher makes room for the PLP store in the backing file)
dev="zns_zone_size_mb=2,plp=selective,plp_zones=0-1${extra_dev:+,$extra_dev}"
run=("$here/run-zns.sh" --size 64 --backing "$backing" --dev "$dev" --timeout 300)
cut=(python3 "$here/femu-power-cut.py" --qmp "$sock")

# block: name lba generation what
blocks=("A 8192 101 protected-flag" "C 16384 103 flushed" "D 0 104 plp-zone" "B 12288 102 unprotected")

write_cmd='set -e
d=/dev/ng0n1
echo "-- zones before:"; plp-write zones $d --count 5
echo "-- A: Write with the protected flag, zone 2"
plp-write write $d --lba 8192 --nlb 8 --gen 101 --durable
echo "-- C: Write without the flag, zone 4, then Flush"
plp-write write $d --lba 16384 --nlb 8 --gen 103 --flush
echo "-- D: Write without the flag, zone 0 (in plp_zones)"
plp-write write $d --lba 0 --nlb 8 --gen 104
echo "-- B: Write without the flag, zone 3, no Flush after it"
plp-write write $d --lba 12288 --nlb 8 --gen 102
echo "-- all four read back before the cut:"
for b in "A 8192 101" "C 16384 103" "D 0 104" "B 12288 102"; do
	set -- $b
	echo "$1: $(plp-write check $d --lba $2 --nlb 8 --gen $3 | tail -1)"
done
echo "-- zones before the cut:"; plp-write zones $d --count 5
echo @@READY@@
sleep 600'

say "1. boot with $dev (backing file $backing) and write A, C, D, B"
: >"$dir/boot1.log"
"${run[@]}" --qmp "$sock" --cmd "$write_cmd" >"$dir/boot1.log" 2>&1 &
pid=$!
for ((i = 0; i < 600; i++)); do
	grep -q '@@READY@@' "$dir/boot1.log" && break
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.2
done
sed '/@@READY@@/d' "$dir/boot1.log"
if ! grep -q '@@READY@@' "$dir/boot1.log"; then
	kill "$pid" 2>/dev/null || true
	die "the first boot did not get to the cut (log above)"
fi

say "2. cut the power (femu-power-cut.py --cut), then end QEMU"
"${cut[@]}" --cut --status
"${cut[@]}" --quit >/dev/null
wait "$pid" || true # the guest never finished its command: the launcher says so

check_cmd='d=/dev/ng0n1
echo "-- blkzone report (512-byte sectors, wptr relative to the zone):"
blkzone report -c 5 /dev/nvme0n1
echo "-- nvme zns report-zones:"
nvme zns report-zones /dev/nvme0n1 --descs=5 | sed -n "1,7p"
for b in "A 8192 101" "C 16384 103" "D 0 104" "B 12288 102"; do
	set -- $b
	echo "-- $1 at LBA $2, first 48 bytes:"
	dd if=/dev/nvme0n1 bs=512 skip=$2 count=1 iflag=direct 2>/dev/null | hexdump -C | head -3
	echo "RESULT_$1=$(plp-write check $d --lba $2 --nlb 8 --gen $3 | tail -1 | cut -d= -f2)"
done
echo "-- the device after power-up (vendor log 0xCA):"
nvme get-log /dev/nvme0 --log-id=0xca --log-len=65536 --xfer-len=65536 --raw-binary 2>/dev/null | tr -d "\0" |
	grep -E "^plp_(spor|lost|loss_pages|power_losses)" || true'

say "3. start QEMU again on the same file: what survived?"
"${run[@]}" --cmd "$check_cmd" | tee "$dir/boot2.log" | grep -v '^RESULT_' || true
grep -q '^RESULT_B=' "$dir/boot2.log" || die "the second boot did not report (see above)"

say "4. verdict"
fail=0
printf '%-50s %-9s %-9s\n' "block" "expected" "found"
for b in "${blocks[@]}"; do
	read -r name lba gen what <<<"$b"
	res=$(sed -n "s/^RESULT_$name=//p" "$dir/boot2.log")
	case $res in
	intact) found=survived ;;
	zero) found=lost ;;
	*) found="damaged($res)" ;;
	esac
	want=survived
	case $what in
	protected-flag) label="A: protected flag, zone 2" ;;
	flushed) label="C: no flag, Flush completed, zone 4" ;;
	plp-zone) label="D: no flag, zone 0 in plp_zones" ;;
	unprotected) label="B: no flag, no Flush, zone 3"; want=lost ;;
	esac
	mark=ok
	[[ $found == "$want" ]] || { mark=WRONG; fail=1; }
	printf '%-50s %-9s %-9s %s\n' "$label (LBA $lba)" "$want" "$found" "$mark"
done
if ((fail)); then
	echo "VERDICT: FAIL - what survived the power cut is not what selective PLP promises"
else
	echo "VERDICT: PASS - the protected, plp_zones and flushed writes survived the power cut; the unprotected one was lost"
fi
[[ -z $keep ]] || echo "(kept: $dir)"
exit $fail
