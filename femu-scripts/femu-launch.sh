#!/bin/bash
# The one FEMU launcher: boots the guest image (build/image) in QEMU with a
# femu NVMe device (or QEMU's stock nvme with --stock-nvme, or both with
# --with-stock). The run-*.sh scripts are thin wrappers that only choose --mode.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
prog=${FEMU_PROG:-$(basename "$0")}

usage() {
	cat <<EOF
Usage: $prog [options] [-- extra QEMU arguments]

Boot a Linux guest with an emulated NVMe SSD. Without --cmd you get a root
shell on the serial console (Ctrl-A x quits QEMU, 'exit' powers off).

  --cmd "COMMAND"   run COMMAND in the guest as root (bash), print its output,
                    power off, and exit with COMMAND's status
  --dev "k=v,..."   extra properties for the -device femu line (they replace
                    the launcher's femu_mode/devsz_mb/memdev if given)
  --mem MiB         guest memory, 128..16384 (default $def_mem)
  --smp N           guest CPUs, 1..32 (default $def_smp)
  --size MiB        device capacity (devsz_mb), 1..1048576 (default $def_size,
                    or the size of an existing --backing file)
  --backing FILE    keep the device's data in FILE (created sparse if missing,
                    --size MiB plus 16 MiB for the device's metadata such as
                    zone state, 64 MiB with --mode 0 for chunk state and OOB,
                    16 MiB + 1/512 of --size with --mode 1 and 4 for the FTL's
                    state (blackbox, FDP), plus plp_buf_mb * 17/16 + 4 MiB with
                    plp= in --dev for the PLP store; shared file backend, so data
                    and FTL state survive restarts; without --size, an existing
                    FILE's length gives it)
  --stock-nvme      use QEMU's own 'nvme' device on an equivalent raw file
                    (the reference for benchmarks); --dev then adds nvme props
  --with-stock      keep the femu device and add QEMU's stock 'nvme' next to it
                    (serial femu-stock, its own RAM-backed file of --size MiB):
                    both in one guest, for benchmarks that compare them
  --stock-ns "k=v,..."  with --stock-nvme or --with-stock: extra properties for
                    the stock controller's namespace
                    (-device nvme-ns,drive=...,bus=stock0,nsid=1,shared=false),
                    e.g. zoned=true,zoned.zone_size=4M for QEMU's own ZNS
  --qmp PATH        QMP server on unix socket PATH
  --timeout SEC     with --cmd: give up after SEC seconds, 1..86400
                    (default $def_timeout); without --cmd: no limit unless given
  --mode N          femu_mode (set by the run-*.sh wrappers): 0 whitebox,
                    1 blackbox, 2 nossd, 3 zns, 4 fdp
  --help            this text
  -- ARGS...        pass the rest to QEMU (e.g. -- -pidfile F -trace 'femu_*')

Exit status with --cmd: COMMAND's status; 124 if the timeout expired; 125 if
the guest stopped without reporting a status; QEMU's own status if QEMU
refused to start (its message is on stderr).

Environment: FEMU_QEMU (QEMU binary, default build/qemu-system-x86_64, where
build/ is the directory ./configure --build-dir chose), FEMU_IMAGE_DIR (guest
image, default build/image), FEMU_BIOS_DIR (firmware directory for -L,
default Debian's seabios + qemu-system-data files), FEMU_ACCEL (kvm or tcg:
skip detection).
EOF
}

def_mem=1024 def_smp=2 def_size=1024 def_timeout=600

die() {
	echo "$prog: $*" >&2
	exit 125
}

# Integer option check: name value min max
check_int() {
	[[ $2 =~ ^[0-9]+$ ]] && (($2 >= $3 && $2 <= $4)) ||
		die "$1 must be an integer in $3..$4 (got '$2')"
}

# MiB after the data in a femu --backing file for the device's metadata (zone state)
meta_mb=16
mode=2 cmd= cmd_set= dev= mem=$def_mem smp=$def_smp size= backing= stock= with_stock= stock_ns= qmp= timeout=
extra=()
need_arg() { (($2 >= 2)) || die "$1 needs a value (see --help)"; }
while (($#)); do
	case $1 in
	--help | -h) usage; exit 0 ;;
	--cmd) need_arg "$1" $#; cmd=$2 cmd_set=1; shift 2 ;;
	--dev) need_arg "$1" $#; dev=$2; shift 2 ;;
	--mem) need_arg "$1" $#; mem=$2; shift 2 ;;
	--smp) need_arg "$1" $#; smp=$2; shift 2 ;;
	--size) need_arg "$1" $#; size=$2; shift 2 ;;
	--backing) need_arg "$1" $#; backing=$2; shift 2 ;;
	--stock-nvme) stock=1; shift ;;
	--with-stock) with_stock=1; shift ;;
	--stock-ns) need_arg "$1" $#; stock_ns=$2; shift 2 ;;
	--qmp) need_arg "$1" $#; qmp=$2; shift 2 ;;
	--timeout) need_arg "$1" $#; timeout=$2; shift 2 ;;
	--mode) need_arg "$1" $#; mode=$2; shift 2 ;;
	--) shift; extra=("$@"); break ;;
	*) die "unknown option '$1' (see --help)" ;;
	esac
done

check_int --mem "$mem" 128 16384
check_int --smp "$smp" 1 32
[[ -z $size ]] || check_int --size "$size" 1 1048576
[[ -z $timeout ]] || check_int --timeout "$timeout" 1 86400
check_int --mode "$mode" 0 4
# whitebox keeps 16 bytes of OOB per 4 KiB sector after the data too (64 MiB: 12 GiB)
((mode != 0)) || meta_mb=64
# blackbox and fdp keep their FTL's mapping (8 bytes per 4 KiB page), lines or reclaim
# units and statistics after the data: their metadata grows with the size (ftl_meta_mb SIZE)
ftl_meta_mb() { echo $((16 + ($1 + 511) / 512)); }     # (also in the loop below)
ftl_mode() { ((mode == 1 || mode == 4)); }
! ftl_mode || meta_mb=$(ftl_meta_mb "${size:-$def_size}")
# with plp= the protected region is mirrored after the zone state: its size, 1/16 more for
# the sectors' OOB records (512-byte LBAs) and a little for the zones' durable ends
if [[ ,$dev, =~ ,plp=[^,]+, ]]; then
	plp_mb=32
	[[ ! ,$dev, =~ ,plp_buf_mb=([0-9]+), ]] || plp_mb=${BASH_REMATCH[1]}
	meta_mb=$((meta_mb + plp_mb + plp_mb / 16 + 4))
fi
[[ -z $cmd_set || -n $cmd ]] || die "--cmd needs a non-empty command"
prop='[A-Za-z_][A-Za-z0-9_.-]*=[^,]*'
[[ -z $dev || $dev =~ ^$prop(,$prop)*$ ]] ||
	die "--dev must be a comma-separated list of key=value (got '$dev')"
[[ -z $stock_ns || $stock_ns =~ ^$prop(,$prop)*$ ]] ||
	die "--stock-ns must be a comma-separated list of key=value (got '$stock_ns')"
[[ -z $stock_ns || -n $stock || -n $with_stock ]] || die "--stock-ns needs --stock-nvme or --with-stock"
[[ -z $stock || -z $with_stock ]] || die "--with-stock adds the stock nvme to femu; --stock-nvme replaces femu: give one"
if [[ -n $qmp ]]; then
	[[ -d $(dirname "$qmp") ]] || die "--qmp: directory $(dirname "$qmp") does not exist"
fi
if [[ -n $backing ]]; then
	[[ -d $(dirname "$backing") ]] || die "--backing: directory $(dirname "$backing") does not exist"
	if [[ -e $backing ]]; then
		[[ -f $backing ]] || die "--backing: $backing is not a regular file"
		bsize=$(stat -c %s "$backing")
		((bsize % 1048576 == 0 && bsize > 0)) || die "--backing: size of $backing is not a whole number of MiB"
		# a femu backing file ends with room for the device's own metadata (zone state)
		tail_mb=$meta_mb
		[[ -z $stock ]] || tail_mb=0
		((bsize / 1048576 > tail_mb)) || die "--backing: $backing is too small"
		if [[ -z $size ]] && ftl_mode && [[ -z $stock ]]; then
			# the largest size whose metadata fills the rest of the file (from just above it)
			size=$(((bsize / 1048576 - 16) * 512 / 513 + 2))
			while ((size > 1 && size + 16 + (size + 511) / 512 > bsize / 1048576)); do
				size=$((size - 1))
			done
			meta_mb=$(ftl_meta_mb "$size")
			tail_mb=$meta_mb
			((size + meta_mb == bsize / 1048576)) ||
				die "--backing: $backing ($((bsize / 1048576)) MiB) is no $prog drive of a whole size: give --size"
		elif [[ -z $size ]]; then
			size=$((bsize / 1048576 - tail_mb))
		elif ((size != bsize / 1048576 - tail_mb)); then
			die "--backing: $backing holds a $((bsize / 1048576 - tail_mb)) MiB drive but --size says $size"
		fi
	fi
fi
size=${size:-$def_size}
[[ -n $cmd_set ]] && timeout=${timeout:-$def_timeout}

# --- QEMU, guest image, firmware: build or install what is missing ---
# The build directory ./configure recorded in config.mk, else build/.
build=$repo/build
[[ ! -f $repo/config.mk ]] || build=$(sed -n 's/^BUILD := //p' "$repo/config.mk" | tail -1)
qemu=${FEMU_QEMU:-$build/qemu-system-x86_64}
if [[ ! -x $qemu ]]; then
	[[ -z ${FEMU_QEMU:-} ]] || die "FEMU_QEMU=$qemu is not an executable"
	echo "$prog: $qemu missing, building it: make -C $repo qemu" >&2
	make -C "$repo" qemu >&2 || die "'make qemu' failed"
fi
image=${FEMU_IMAGE_DIR:-$build/image}
if [[ -z ${FEMU_IMAGE_DIR:-} ]]; then
	# No-op (a hash check) when the image matches the recipe.
	FEMU_IMAGE_QUIET=1 "$repo/images/build-image.sh" "$image" || die "guest image build failed"
fi
for f in vmlinuz initramfs.cpio.gz; do
	[[ -f $image/$f ]] || die "guest image file $image/$f missing (make image)"
done

bios_args=()
if [[ -n ${FEMU_BIOS_DIR:-} ]]; then
	bios_args=(-L "$FEMU_BIOS_DIR")
else
	# QEMU's source build has no firmware blobs: SeaBIOS from 'seabios',
	# the option ROMs (linuxboot_dma.bin, kvmvapic.bin) from 'qemu-system-data'.
	if [[ ! -f /usr/share/seabios/bios-256k.bin || ! -f /usr/share/qemu/linuxboot_dma.bin ]]; then
		[[ $(id -u) == 0 ]] || die "install Debian's seabios and qemu-system-data (or set FEMU_BIOS_DIR)"
		echo "$prog: installing firmware with apt-get: seabios qemu-system-data" >&2
		DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends seabios qemu-system-data >&2 ||
			{ apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends seabios qemu-system-data >&2; } ||
			die "cannot install seabios qemu-system-data"
	fi
	bios_args=(-L /usr/share/seabios -L /usr/share/qemu)
fi

# --- KVM or TCG ---
# /dev/kvm may exist and still hang in nested setups (here it stops while the
# kernel enters long mode), so boot the real kernel under KVM for a few
# seconds and look for its first message. The answer is kept until reboot.
probe_kvm() {
	[[ -r /dev/kvm && -w /dev/kvm ]] || return 1
	local log pid i ok=1
	log=$(mktemp)
	"$qemu" -accel kvm -cpu host -machine q35 -m 256 -nodefaults -display none \
		-monitor none "${bios_args[@]}" -kernel "$image/vmlinuz" \
		-append "console=ttyS0 earlyprintk=ttyS0 panic=-1" -no-reboot \
		-serial "file:$log" </dev/null >/dev/null 2>&1 &
	pid=$!
	for ((i = 0; i < 50; i++)); do
		grep -q 'Linux version' "$log" 2>/dev/null && { ok=0; break; }
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -9 "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	rm -f "$log"
	return $ok
}
accel=${FEMU_ACCEL:-}
if [[ -z $accel ]]; then
	boot_id=$(cat /proc/sys/kernel/random/boot_id 2>/dev/null || echo none)
	accel_cache=${XDG_RUNTIME_DIR:-/tmp}/femu-accel-$(id -u)-$boot_id
	accel=$(cat "$accel_cache" 2>/dev/null || true)
	if [[ $accel != kvm && $accel != tcg ]]; then
		if probe_kvm; then accel=kvm; else accel=tcg; fi
		echo "$accel" >"$accel_cache" 2>/dev/null || true
	fi
fi
case $accel in
kvm) accel_args=(-accel kvm -cpu host) ;;
tcg) accel_args=(-accel tcg -cpu max) ;;
*) die "FEMU_ACCEL must be kvm or tcg (got '$accel')" ;;
esac

# --- the device ---
tmpfiles=()
cleanup() { ((${#tmpfiles[@]} == 0)) || rm -f "${tmpfiles[@]}"; }
trap cleanup EXIT
dev_args=()
# QEMU's stock nvme (id stock0, serial femu-stock) on drive file $1, with extra
# controller properties $2, appended to dev_args.
add_stock() {
	# An explicit namespace, so that --stock-ns can give it properties.
	# shared=false: private to the controller like the one its drive= makes
	# (identify then differs only in endgid and the Copy limits).
	local -A nsval=([drive]=femu-drive [bus]=stock0 [nsid]=1 [shared]=false)
	local nskeys=(drive bus nsid shared) kvs kv k nsline=nvme-ns
	if [[ -n $stock_ns ]]; then
		IFS=, read -ra kvs <<<"$stock_ns"
		for kv in "${kvs[@]}"; do
			k=${kv%%=*}
			[[ -n ${nsval[$k]+x} ]] || nskeys+=("$k")
			nsval[$k]=${kv#*=}
		done
	fi
	for k in "${nskeys[@]}"; do nsline+=",$k=${nsval[$k]}"; done
	dev_args+=(-drive "file=$1,if=none,id=femu-drive,format=raw,discard=unmap"
		-device "nvme,id=stock0,serial=femu-stock${2:+,$2}"
		-device "$nsline")
}
# A sparse RAM-backed /dev/shm file of --size MiB for the stock drive, like
# femu's default: unlinked at once and handed over as an open fd, so nothing
# is left behind.
stock_ram_file() {
	local f
	f=$(mktemp /dev/shm/femu-stock.XXXXXX)
	truncate -s "${size}M" "$f"
	exec 9<>"$f"
	rm -f "$f"
}
if [[ -n $stock ]]; then
	if [[ -n $backing ]]; then
		[[ -e $backing ]] || truncate -s "${size}M" "$backing"
		add_stock "$backing" "$dev"
	else
		stock_ram_file
		add_stock /dev/fd/9 "$dev"
	fi
else
	# Launcher defaults first; a key repeated in --dev replaces its value.
	keys=(id femu_mode devsz_mb)
	declare -A val=([id]=femu0 [femu_mode]=$mode [devsz_mb]=$size)
	if ((mode == 0)); then
		# whitebox: 4 KiB sectors, 4 groups x 4 PUs, 1 MiB chunks (16 KiB write units),
		# so a host FTL has lines of 16 MiB and many chunks per PU
		keys+=(lnum_ch lnum_lun lnum_pln lpgs_per_blk lsecs_per_pg)
		val+=([lnum_ch]=4 [lnum_lun]=4 [lnum_pln]=1 [lpgs_per_blk]=64 [lsecs_per_pg]=4)
		# the sector size (FEMU's name; it sets the LBA size), unless --dev gives either
		if [[ ! ,$dev =~ ,(lba_index|lsec_size)= ]]; then
			keys+=(lsec_size)
			val[lsec_size]=4096
		fi
	fi
	if [[ -n $backing ]]; then
		[[ -e $backing ]] || truncate -s "$((size + meta_mb))M" "$backing"
		dev_args=(-object "memory-backend-file,id=femu-mem,mem-path=$backing,size=$((size + meta_mb))M,share=on")
		keys+=(memdev)
		val[memdev]=femu-mem
	fi
	if [[ -n $dev ]]; then
		IFS=, read -ra kvs <<<"$dev"
		for kv in "${kvs[@]}"; do
			k=${kv%%=*}
			[[ -n ${val[$k]+x} ]] || keys+=("$k")
			val[$k]=${kv#*=}
		done
	fi
	line=femu
	for k in "${keys[@]}"; do line+=",$k=${val[$k]}"; done
	dev_args+=(-device "$line")
	if [[ -n $with_stock ]]; then
		stock_ram_file
		add_stock /dev/fd/9 ""
	fi
fi

# no_timer_check: under TCG on a busy host the kernel's IO-APIC timer check can
# miss its ticks and panic at boot ("IO-APIC + timer doesn't work").
# cryptomgr.notests: the kernel's crypto self-tests cost 6.12 ~1 s of CPU per
# boot under TCG (the guest's boot as quick as 6.1's without them).
append="console=ttyS0 quiet panic=-1 no_timer_check cryptomgr.notests=1"
args=(-machine q35 "${accel_args[@]}" -smp "$smp" -m "$mem" -nodefaults -nic none
	-display none -no-reboot "${bios_args[@]}"
	-kernel "$image/vmlinuz" -initrd "$image/initramfs.cpio.gz"
	"${dev_args[@]}")
[[ -z $qmp ]] || args+=(-qmp "unix:$qmp,server=on,wait=off")

if [[ -z $cmd_set ]]; then
	# Interactive: serial and monitor muxed on stdio, Ctrl-C goes to the guest.
	if [[ -t 0 ]] && size_rc=$(stty size 2>/dev/null); then
		append+=" femu.rows=${size_rc% *} femu.cols=${size_rc#* }"
	fi
	[[ -z ${TERM:-} ]] || append+=" femu.term=$TERM"
	args+=(-append "$append" -chardev stdio,id=con0,mux=on,signal=off
		-serial chardev:con0 -mon chardev=con0,mode=readline)
	if [[ -n $timeout ]]; then
		exec timeout --foreground -k 10 "$timeout" "$qemu" "${args[@]}" "${extra[@]}"
	fi
	exec "$qemu" "${args[@]}" "${extra[@]}"
fi

# Non-interactive: the command goes in through fw_cfg; the guest's /init
# prints it between marker lines that the filter below turns into our output
# and exit status. Boot messages are kept aside and shown only on failure.
cmdfile=$(mktemp) bootlog=$(mktemp) statefile=$(mktemp) pidfile=$(mktemp) settled=$(mktemp -u)
tmpfiles+=("$cmdfile" "$bootlog" "$statefile" "$pidfile" "$settled")
printf '%s\n' "$cmd" >"$cmdfile"
args+=(-append "$append" -fw_cfg "name=opt/femu/cmd,file=$cmdfile"
	-chardev stdio,id=con0,signal=off -serial chardev:con0 -monitor none)

# Serial output -> our stdout, line by line as it comes (a shell loop: awk
# implementations differ in when they flush a pipe).
filter() {
	local state=0 line status=0 re='@@FEMU-CMD-EXIT ([0-9]+)@@$'
	while IFS= read -r line || [[ -n $line ]]; do
		line=${line%$'\r'}
		if ((state == 0)); then
			if [[ $line == *@@FEMU-CMD-BEGIN@@ ]]; then
				state=1
				: >"$settled"
			else
				printf '%s\n' "$line" >>"$bootlog"
			fi
		elif ((state == 1)); then
			if [[ $line =~ $re ]]; then
				# the marker may follow output that had no final newline
				printf '%s' "${line%@@FEMU-CMD-EXIT *}"
				status=${BASH_REMATCH[1]} state=2
			else
				printf '%s\n' "$line"
			fi
		fi
	done
	echo "$state $status" >"$statefile"
}

# A guest that never reaches its command (no output at all) is a hang of QEMU or of the
# guest's boot: shortly before the timeout, QEMU's threads' stacks go to stderr (with gdb),
# so that the report says which. $settled appears when the command begins or QEMU ends.
stacks_if_stuck() {
	local i
	for ((i = 0; i < $1; i++)); do
		sleep 1
		[[ -e $settled ]] && return
	done
	local pid
	pid=$(cat "$pidfile" 2>/dev/null) && [[ -n $pid ]] || return
	command -v gdb >/dev/null || { echo "$prog: no guest output yet; gdb is not installed for QEMU's stacks" >&2; return; }
	echo "$prog: no guest output after $1 s: QEMU's threads (gdb)" >&2
	timeout 60 gdb -p "$pid" -batch -ex "thread apply all bt" 2>&1 | grep -E '^(Thread|#)' >&2
}
set +e
stacks_if_stuck $((timeout > 20 ? timeout - 10 : timeout / 2)) &
watch=$!
# our -pidfile first: one given after -- wins (then no stacks)
timeout --foreground -k 10 "$timeout" "$qemu" "${args[@]}" -pidfile "$pidfile" "${extra[@]}" \
	</dev/null | filter
st=("${PIPESTATUS[@]}")
: >"$settled"
wait "$watch" 2>/dev/null
set -e
qemu_st=${st[0]}
read -r state status <"$statefile" || state=0
# state: 0 no BEGIN marker seen, 1 command started, 2 command finished
if ((state == 2)); then
	exit "$status"
fi
if ((qemu_st == 124 || qemu_st == 137)); then
	echo "$prog: guest timed out after $timeout s (--timeout)" >&2
	((state == 0)) && { echo "--- guest boot log ---" >&2; tail -n 40 "$bootlog" >&2; }
	exit 124
fi
if ((qemu_st != 0)); then
	exit "$qemu_st" # QEMU refused to start; its message is on stderr
fi
echo "$prog: guest stopped without reporting the command's status" >&2
echo "--- guest boot log ---" >&2
tail -n 40 "$bootlog" >&2
exit 125
