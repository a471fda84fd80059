#!/bin/bash
# Build the FEMU guest: OUTDIR/vmlinuz + OUTDIR/initramfs.cpio.gz (+ the
# kernel's /lib/modules tree in OUTDIR/lib/modules), from Debian trixie
# packages (packages.txt may take some from another suite).
# Usage: images/build-image.sh [OUTDIR]   (default build/image)
#
# .debs are fetched with `apt-get download` into
# ${XDG_CACHE_HOME:-$HOME/.cache}/femu/debs, so a rebuild needs no network.
# The image is rebuilt only when the recipe (files in images/) changes.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
out=${1:-$repo/build/image}
mkdir -p "$out"
out=$(cd "$out" && pwd)
femu_cache=${FEMU_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/femu}
cache=$femu_cache/debs
kernel_pkg=linux-image-cloud-amd64
# The Debian release the whole guest comes from (programs, libraries and
# kernel alike, so that they fit together); packages.txt may name another
# for a package.
suite=trixie

say() { echo "build-image: $*" >&2; }
die() { echo "build-image: error: $*" >&2; exit 1; }

recipe_files=("$here/build-image.sh" "$here/init" "$here/nsdev" "$here/packages.txt" "$here/modules.txt")
# the guest programs built from this repository (guest/: ocssd, hostftl, plp) too
mapfile -t guest_files < <(cd "$repo" && find guest -type f \( -name '*.[ch]' -o -name '*.sh' \) | LC_ALL=C sort)
recipe_hash=$( (cat "${recipe_files[@]}"; for f in "${guest_files[@]}"; do echo "== $f"; cat "$repo/$f"; done) |
	sha256sum | cut -c1-16)
# One build at a time per OUTDIR (several launchers may start at once).
exec 8>"$out/.lock"
flock 8
if [[ -f $out/.recipe-hash && $(cat "$out/.recipe-hash") == "$recipe_hash" &&
	-f $out/vmlinuz && -f $out/initramfs.cpio.gz ]]; then
	[[ -n ${FEMU_IMAGE_QUIET:-} ]] || say "up to date ($out)"
	exit 0
fi
say "building the guest image in $out"

# Host tools: dpkg-deb, apt-get (Debian base), cpio, readelf (binutils), and
# gcc + the static libc for the guest programs of guest/.
need=()
command -v cpio >/dev/null || need+=(cpio)
command -v readelf >/dev/null || need+=(binutils)
command -v xz >/dev/null || need+=(xz-utils) # trixie's kernel modules are .ko.xz
command -v gcc >/dev/null || need+=(gcc)
[[ -f /usr/lib/x86_64-linux-gnu/libc.a ]] || need+=(libc6-dev)
if ((${#need[@]})); then
	[[ $(id -u) == 0 ]] || die "please install: ${need[*]}"
	say "installing host tools with apt-get: ${need[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${need[@]}" >&2 ||
		{ apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${need[@]}" >&2; }
fi

# packages.txt lines: PACKAGE[/SUITE] [PROGRAM...]
roots=()
declare -A suite_of=() progs_of=()
while read -r spec plist; do
	[[ -n $spec ]] || continue
	p=${spec%%/*}
	roots+=("$p")
	[[ $spec == */* ]] && suite_of[$p]=${spec#*/}
	[[ -z $plist ]] || progs_of[$p]=" $plist "
done < <(sed 's/#.*//' "$here/packages.txt")
# modules.txt lines: NAME [on-demand]
boot_mods=() demand_mods=()
while read -r m how; do
	[[ -n $m ]] || continue
	case $how in
	"") boot_mods+=("$m") ;;
	on-demand) demand_mods+=("$m") ;;
	*) die "modules.txt: '$how' after $m (only 'on-demand' is known)" ;;
	esac
done < <(sed 's/#.*//' "$here/modules.txt")
mkdir -p "$cache"

# --- 1. package list: roots + kernel + the lib* packages they depend on ---
# The resolved list (package, .deb file) is cached per recipe, so an
# offline rebuild does not even need apt's package lists.
list=$cache/closure-$recipe_hash.txt
have_all() {
	[[ -s $list ]] || return 1
	local p f
	while read -r p f; do [[ -f $cache/$f ]] || return 1; done <"$list"
}

# Packages come through a private apt configuration per suite under
# $femu_cache/apt-SUITE: the machine's apt setup is left alone (it may be
# another release), and the archive addresses are taken from its own Debian
# sources.
machine_archives() { # "URI security|main" per Debian archive the machine uses
	local f
	for f in /etc/apt/sources.list.d/*.sources; do
		[[ -f $f ]] || continue
		awk 'BEGIN {RS = ""; FS = "\n"}
			{ u = s = t = ""
			  for (i = 1; i <= NF; i++) {
				if ($i ~ /^URIs:/) u = substr($i, 6)
				if ($i ~ /^Suites:/) s = substr($i, 8)
				if ($i ~ /^Types:/) t = substr($i, 7) }
			  if (t !~ /(^| )deb( |$)/ || s !~ /(bookworm|trixie|sid|forky)/) next
			  n = split(u, a, " ")
			  for (j = 1; j <= n; j++) print a[j], (s ~ /security/ ? "security" : "main") }' "$f"
	done
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[[ -f $f ]] || continue
		awk '$1 == "deb" { i = 2; if ($2 ~ /^\[/) { while ($i !~ /\]$/) i++; i++ }
			if ($(i + 1) !~ /(bookworm|trixie|sid|forky)/) next
			print $i, ($(i + 1) ~ /security/ ? "security" : "main") }' "$f"
	done
}
apt_in() { # SUITE apt-get|apt-cache ARGS...
	local d=$femu_cache/apt-$1 tool=$2
	shift 2
	"$tool" -q -o Dir::Etc::SourceList="$d/sources.list" -o Dir::Etc::SourceParts=/dev/null \
		-o Dir::State::Lists="$d/lists" -o Dir::Cache="$d/cache" \
		-o APT::Sandbox::User=root "$@"
}
apt_in_update() { # SUITE: write the private source list and fetch its indexes
	local s=$1 d=$femu_cache/apt-$1 uri kind
	mkdir -p "$d/lists/partial" "$d/cache/archives/partial"
	while read -r uri kind; do
		# only the Packages indexes (no translations, no AppStream data)
		local o="[signed-by=/usr/share/keyrings/debian-archive-keyring.gpg target=Packages]"
		if [[ $kind == security ]]; then
			echo "deb $o $uri $s-security main"
		else
			echo "deb $o $uri $s main"
			echo "deb $o $uri $s-updates main"
		fi
	done < <(machine_archives | sort -u) >"$d/sources.list"
	[[ -s $d/sources.list ]] || die "no Debian archive in /etc/apt/sources.list* to fetch $s from"
	say "apt-get update ($s, private lists in $d)"
	apt_in "$s" apt-get update >"$d/update.log" 2>&1
}
declare -A updated=()
suite_ready() { # SUITE: fresh lists once per resolution (old ones do offline)
	[[ -n ${updated[$1]:-} ]] && return 0
	updated[$1]=1
	apt_in_update "$1" && return 0
	apt_in "$1" apt-cache show base-files >/dev/null 2>&1 ||
		die "apt-get update for $1 failed: see $femu_cache/apt-$1/update.log"
	say "apt-get update for $1 failed (offline?): using the lists from before"
}
cand_of() { # SUITE PACKAGES...: print "package candidate"
	local s=$1
	shift
	apt_in "$s" apt-cache policy "$@" |
		awk '/^[^ ]/ {sub(":$", "", $1); p = $1} $1 == "Candidate:" {print p, $2}'
}

if ! have_all; then
	suite_ready "$suite"
	# The kernel metapackage points at the versioned image package.
	kpkg=$(apt_in "$suite" apt-cache depends "$kernel_pkg" | awk '$1 == "Depends:" && $2 ~ /^linux-image-/ {print $2; exit}')
	[[ -n $kpkg ]] || die "cannot resolve $kernel_pkg"
	# Breadth first, one apt-cache call per level (each call costs ~0.5 s).
	declare -A seen=()
	# A package from another suite takes its libraries from $suite when
	# $suite's versions satisfy its Depends, otherwise from its own suite
	# too (then every program in the image uses that newer library).
	level=(ncurses-base) # terminfo for the shell
	from_suite() { # PACKAGE SUITE
		local p=$1 s=$2 v dep alt name op ver have
		[[ -n ${seen[$p]:-} ]] && return 0
		seen[$p]=1 suite_of[$p]=$s
		suite_ready "$s"
		v=$(cand_of "$s" "$p" | awk '{print $2}')
		[[ -n $v && $v != "(none)" ]] || die "$p is not in $s"
		while read -r dep; do
			alt=${dep%%|*} # first alternative
			read -r name op ver <<<"$(sed 's/[()]/ /g' <<<"$alt")"
			[[ $name =~ ^(lib|zlib1g$) ]] || continue
			name=${name%%:*}
			have=$(cand_of "$suite" "$name" | awk '{print $2}')
			if [[ -n $have && $have != "(none)" ]] &&
				{ [[ -z $op ]] || dpkg --compare-versions "$have" "$op" "$ver"; }; then
				level+=("$name")
			elif [[ -z ${seen[$name]:-} ]]; then
				say "$p ($s) needs $name $op $ver, $suite has ${have:-none}: taking $name from $s"
				from_suite "$name" "$s"
			fi
		done < <(apt_in "$s" apt-cache show "$p=$v" |
			awk '/^(Pre-)?Depends:/ {sub(/^[^:]*: */, ""); gsub(/, */, "\n"); print}')
	}
	for p in "${roots[@]}"; do
		if [[ -n ${suite_of[$p]:-} ]]; then from_suite "$p" "${suite_of[$p]}"; else level+=("$p"); fi
	done
	pkgs=("$kpkg")
	while ((${#level[@]})); do
		for p in "${level[@]}"; do seen[$p]=1; done
		pkgs+=("${level[@]}")
		# Only libraries are followed: programs' other deps (python3 for
		# fio's helper scripts, debconf, ...) are not needed in the guest.
		mapfile -t level < <(apt_in "$suite" apt-cache depends --no-recommends --no-suggests --no-conflicts \
			--no-breaks --no-replaces --no-enhances "${level[@]}" |
			awk '$1 ~ /^\|?(Pre)?Depends:$/ && $2 ~ /^(lib|zlib1g$)/ {print $2}' | sort -u)
		next=()
		for p in "${level[@]}"; do [[ -n ${seen[$p]:-} ]] || next+=("$p"); done
		level=("${next[@]}")
	done
	# the other suites' packages (and the libraries taken with them) last:
	# they are unpacked over $suite's
	main=() other=()
	for p in "${pkgs[@]}"; do [[ -z ${suite_of[$p]:-} ]] && main+=("$p"); done
	for p in "${!suite_of[@]}"; do other+=("$p"); done
	: >"$list.tmp"
	declare -A cand=() missing=()
	while read -r p v; do cand[$p]=$v; done < <(cand_of "$suite" "${main[@]}")
	for p in "${other[@]}"; do cand[$p]=$(cand_of "${suite_of[$p]}" "$p" | awk '{print $2}'); done
	for p in "${main[@]}" "${other[@]}"; do
		v=${cand[$p]:-}
		[[ -n $v && $v != "(none)" ]] || die "no candidate version for $p"
		f=$(cd "$cache" && ls "${p}_${v/:/%3a}_"*.deb 2>/dev/null | head -1 || true)
		[[ -n $f ]] || missing[${suite_of[$p]:-$suite}]+=" $p=$v"
		echo "$p ${f:-${p}_${v/:/%3a}_?}" >>"$list.tmp"
	done
	for s in "${!missing[@]}"; do
		say "apt-get download from $s into $cache:${missing[$s]}"
		(cd "$cache" && apt_in "$s" apt-get download ${missing[$s]} >&2)
	done
	# fill in the real file names (architecture part)
	while read -r p f; do
		[[ $f == *_\? ]] && f=$(cd "$cache" && ls ${f%\?}*.deb | head -1)
		echo "$p $f"
	done <"$list.tmp" >"$list"
	rm -f "$list.tmp"
	for f in "$cache"/closure-*.txt; do [[ $f == "$list" ]] || rm -f "$f"; done
	have_all || die "some packages are missing from $cache"
fi

# --- 2. unpack everything into a sysroot ---
work=$(mktemp -d "$out/.work.XXXXXX")
trap 'rm -rf "$work"' EXIT
sys=$work/sysroot root=$work/root
mkdir -p "$sys" "$root"
kdeb=
while read -r p f; do
	if [[ $p == linux-image-* ]]; then kdeb=$cache/$f; continue; fi
	dpkg-deb -x "$cache/$f" "$sys"
done <"$list"
[[ -n $kdeb ]] || die "kernel package missing from $list"

# --- 3. kernel and its module tree ---
kroot=$work/kernel
dpkg-deb -x "$kdeb" "$kroot"
kmods=$kroot/usr/lib/modules # /usr-merged since trixie
[[ -d $kmods ]] || kmods=$kroot/lib/modules
kver=$(ls "$kmods" | head -1)
rm -rf "$out/lib" "$out/vmlinuz"
cp "$kroot/boot/vmlinuz-$kver" "$out/vmlinuz"
cp "$kroot/boot/config-$kver" "$out/config"
mkdir -p "$out/lib/modules"
mv "$kmods/$kver" "$out/lib/modules/"
echo "$kver" >"$out/kernel-version"
mdir=$out/lib/modules/$kver

# --- 4. initramfs tree ---
# /usr-merged like trixie itself: its packages install into usr/, while
# programs' interpreter (/lib64/ld-linux-x86-64.so.2) and scripts'
# #!/bin/... use the old paths.
mkdir -p "$root"/{usr/bin,usr/sbin,usr/lib,usr/lib64,etc/femu,proc,sys,dev,tmp,run,root,mnt,var/tmp}
for d in bin sbin lib lib64; do ln -s "usr/$d" "$root/$d"; done
ln -s /proc/mounts "$root/etc/mtab"

copy_file() { # copy sysroot path $1 (following symlinks) into the root
	mkdir -p "$root/$(dirname "$1")"
	cp -L "$sys/$1" "$root/$1"
}

# Every ELF program of the root packages (symlinks to them too).
progs=()
for p in "${roots[@]}"; do
	f=$(awk -v p="$p" '$1 == p {print $2}' "$list")
	while read -r path; do
		path=${path#./}
		[[ $path =~ ^(usr/)?s?bin/[^/]+$ ]] || continue
		[[ -z ${progs_of[$p]:-} || ${progs_of[$p]} == *" ${path##*/} "* ]] || continue
		[[ -f $sys/$path ]] || continue
		head -c4 "$sys/$path" | grep -q $'^\x7fELF' || continue
		mkdir -p "$root/$(dirname "$path")"
		cp -P "$sys/$path" "$root/$path" # keeps symlinks (rbash -> bash)
		[[ -L $sys/$path ]] || progs+=("$path")
	done < <(dpkg-deb --fsys-tarfile "$cache/$f" | tar -t)
done

# Shared libraries, resolved from DT_NEEDED the way ld.so does (RUNPATH,
# then Debian's multiarch dirs), all inside the sysroot.
declare -A done_lib=()
libdirs=(lib/x86_64-linux-gnu usr/lib/x86_64-linux-gnu lib64 lib usr/lib)
resolve() { # $1: sysroot path of an ELF file
	local elf=$1 dyn needed runpath d lib found
	dyn=$(readelf -d "$sys/$elf" 2>/dev/null) || return 0
	runpath=$(sed -n 's/.*(R\(UN\)\?PATH).*\[\(.*\)\]/\2/p' <<<"$dyn" | tr ':' ' ')
	runpath=${runpath//\$ORIGIN/$(dirname "$elf")}
	for lib in $(sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' <<<"$dyn"); do
		[[ -n ${done_lib[$lib]:-} ]] && continue
		found=
		for d in $runpath "${libdirs[@]}"; do
			d=${d#/}
			if [[ -e $sys/$d/$lib ]]; then found=$d/$lib; break; fi
		done
		[[ -n $found ]] || die "$elf needs $lib, which no package provides"
		done_lib[$lib]=$found
		copy_file "$found"
		resolve "$found"
	done
}
for p in "${!progs_of[@]}"; do
	for a in ${progs_of[$p]}; do
		[[ -e $root/bin/$a || -e $root/sbin/$a || -e $root/usr/bin/$a || -e $root/usr/sbin/$a ]] ||
			die "$p has no program $a"
	done
done
for p in "${progs[@]}"; do resolve "$p"; done
# glibc dlopens libgcc_s for thread cancellation/unwinding.
for lib in libgcc_s.so.1; do
	[[ -n ${done_lib[$lib]:-} ]] && continue
	for d in "${libdirs[@]}"; do
		[[ -e $sys/$d/$lib ]] || continue
		done_lib[$lib]=$d/$lib
		copy_file "$d/$lib" && resolve "$d/$lib"
		break
	done
	[[ -n ${done_lib[$lib]:-} ]] || die "no package provides $lib"
done
# the programs' interpreter is /lib64/...; a /usr-merged libc6 (trixie's)
# has it in usr/lib64
ld=lib64/ld-linux-x86-64.so.2
[[ -e $sys/$ld ]] || ld=usr/$ld
cp -L "$sys/$ld" "$root/lib64/"

# busybox applets for whatever the real packages do not provide
bb=$(ls "$root"/bin/busybox)
for a in $("$bb" --list); do
	[[ -e $root/bin/$a || -e $root/sbin/$a || -e $root/usr/bin/$a || -e $root/usr/sbin/$a ]] && continue
	ln -s busybox "$root/bin/$a"
done
ln -sf busybox "$root/bin/sh"

# terminfo for the usual terminals only (in usr/share since trixie)
for t in d/dumb l/linux v/vt100 v/vt102 v/vt220 x/xterm x/xterm-256color s/screen s/screen-256color; do
	copy_file "usr/share/terminfo/$t"
done

# kernel modules named in modules.txt, dependencies first: /init loads
# etc/femu/modules; /sbin/modprobe (below) loads etc/femu/modules.demand
# when the kernel asks for one of them (request_module).
modinfo_field() { readelf -p .modinfo "$1" | sed -n "s/.*] *$2=//p"; }
declare -A mod_path=() mod_done=()
while read -r ko; do
	n=$(basename "${ko%.xz}" .ko)
	mod_path[$n]=$ko
	mod_path[${n//-/_}]=$ko
done < <(cd "$mdir" && find kernel -name '*.ko' -o -name '*.ko.xz')
for f in modules modules.demand modules.demand.names static-nodes; do : >"$root/etc/femu/$f"; done
add_module() { # NAME LISTFILE
	local m=${1//-/_} list=$2 ko dst dep a node= nums=
	[[ -n ${mod_done[$m]:-} ]] && return 0
	ko=${mod_path[$m]:-}
	[[ -n $ko ]] || die "kernel module $1 not found in $kver"
	# Uncompressed in the initramfs (the packages' are .ko.xz): nothing has
	# to inflate them at every boot, and the cpio's gzip compresses them.
	dst=lib/modules/$kver/${ko%.xz}
	mkdir -p "$root/$(dirname "$dst")"
	if [[ $ko == *.xz ]]; then xz -dc "$mdir/$ko" >"$root/$dst"; else cp "$mdir/$ko" "$root/$dst"; fi
	for dep in $(modinfo_field "$root/$dst" depends | tr ',' ' '); do add_module "$dep" "$list"; done
	echo "/$dst" >>"$root/etc/femu/$list"
	mod_done[$m]=1
	[[ $list == modules.demand ]] || return 0
	# The names the kernel asks modprobe for: the module's, its file system
	# type's, its device numbers'. A device node made at boot loads the
	# module when opened (like kmod's static nodes).
	echo "$m" >>"$root/etc/femu/modules.demand.names"
	for a in $(modinfo_field "$root/$dst" alias); do
		case $a in
		fs-* | char-major-* | block-major-*) echo "${a//-/_}" >>"$root/etc/femu/modules.demand.names" ;;
		esac
		case $a in
		devname:*) node=${a#devname:} ;;
		char-major-*) nums="c ${a#char-major-}" ;;
		block-major-*) nums="b ${a#block-major-}" ;;
		esac
	done
	[[ -z $node || -z $nums ]] || echo "$node ${nums//-/ }" >>"$root/etc/femu/static-nodes"
}
for m in "${boot_mods[@]}"; do add_module "$m" modules; done
for m in "${demand_mods[@]}"; do add_module "$m" modules.demand; done
# The kernel runs /sbin/modprobe NAME for an unknown file system type or
# device number.
cat >"$root/sbin/modprobe" <<'EOF'
#!/bin/sh
# FEMU guest modprobe: any name of the on-demand modules (module, fs-TYPE,
# char-major-M-N) loads all of them, in order; other names fail.
name=
for a; do
	case $a in
	-r | --remove) echo "modprobe: not supported, use rmmod" >&2; exit 1 ;;
	-*) ;;
	*) name=$a; break ;;
	esac
done
[ -n "$name" ] || { echo "usage: modprobe [-q] NAME" >&2; exit 1; }
grep -qxF "$(echo "$name" | tr - _)" /etc/femu/modules.demand.names || exit 1
st=0
while read -r ko; do
	m=$(basename "$ko" .ko | tr - _)
	# a concurrent modprobe may have loaded it meanwhile
	[ -d "/sys/module/$m" ] || insmod "$ko" || [ -d "/sys/module/$m" ] || st=1
done </etc/femu/modules.demand
exit $st
EOF
chmod 0755 "$root/sbin/modprobe"
rm -f "$root/bin/modprobe" # busybox's: needs a modules.dep

# minimal /etc
printf 'root:x:0:0:root:/root:/bin/bash\n' >"$root/etc/passwd"
printf 'root:x:0:\ntty:x:5:\ndisk:x:6:\n' >"$root/etc/group"
printf 'femu\n' >"$root/etc/hostname"
cat >"$root/etc/profile" <<'EOF'
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
PS1='\u@\h:\w\$ '
EOF
install -m 0755 "$here/init" "$root/init"
mkdir -p "$root/usr/local/bin"
install -m 0755 "$here/nsdev" "$root/usr/local/bin/nsdev"

# This repository's guest programs (guest/build.sh: static, so no libraries)
say "compiling the guest programs (guest/: ocssd, hostftl, plp-write, plp-load)"
"$repo/guest/build.sh" "$root/usr/local/bin" || die "compiling guest/ failed"
echo "$recipe_hash" >"$root/etc/femu/recipe-hash"

# Sanity check on the host: the programs must find all their libraries.
if [[ $(id -u) == 0 ]] && command -v chroot >/dev/null; then
	for t in "/bin/bash -c true" "/usr/bin/fio --version" "/usr/sbin/nvme version" \
		"/sbin/blkzone --version" "/bin/lsblk --version" \
		"/usr/sbin/mkzonefs --help" "/sbin/mkfs.btrfs --version" "/bin/btrfs --version" \
		"/sbin/mkfs.ext4 -V" "/usr/local/bin/ocssd help" "/usr/local/bin/hostftl help" \
		"/usr/local/bin/plp-write help" "/usr/local/bin/plp-load help" \
		"/usr/bin/db_bench --version" "/usr/bin/ldb --version"; do
		chroot "$root" $t >/dev/null || die "'$t' does not run in the initramfs tree"
	done
fi

# --- 5. cpio (newc) + gzip ---
(cd "$root" && find . -print0 | LC_ALL=C sort -z |
	cpio --null -o -H newc --owner=0:0 --quiet) | gzip -6 >"$out/initramfs.cpio.gz.tmp"
mv "$out/initramfs.cpio.gz.tmp" "$out/initramfs.cpio.gz"
echo "$recipe_hash" >"$out/.recipe-hash"
say "built $out (kernel $kver, initramfs $(du -k "$out/initramfs.cpio.gz" | cut -f1) KiB)"
