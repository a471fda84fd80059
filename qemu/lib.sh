# Shared shell helpers for the build scripts: progress messages with timings, clear failures.
femu_t0=$(date +%s)
step() { femu_step_t=$(date +%s); printf '==> %s\n' "$*"; }
done_step() { printf '    done in %ss\n' "$(( $(date +%s) - femu_step_t ))"; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }
repo_root() { cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd; }
femu_cache_dir() { printf '%s\n' "${FEMU_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/femu}"; }

# Install Debian packages that are missing, saying which.
need_debs() {
    local missing=() p
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    [ "$(id -u)" -eq 0 ] || die "missing packages: ${missing[*]} (run as root, or install them: apt-get install ${missing[*]})"
    step "installing Debian packages: ${missing[*]}"
    if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null; }; then
        die "apt-get could not install: ${missing[*]} (no network, or the packages are unknown to this machine's apt sources)"
    fi
    done_step
}

# The choices ./configure records (config.mk, passed on by make as FEMU_* variables).
# Unset means the default; anything else is refused naming the variable and what it allows.
femu_yes_no() {
    local name=$1 value=${!1:-no}
    case $value in yes|no) printf '%s\n' "$value" ;;
        *) die "$name=$value: allowed are yes and no (set by ./configure)" ;; esac
}

# clang with libFuzzer, for QEMU's --enable-fuzzing. Debian's clang recommends the runtime
# package that holds libFuzzer; it is installed explicitly in case recommends are off.
need_clang_fuzzer() {
    need_debs clang
    local major probe
    major=$(clang -dumpversion | cut -d. -f1)
    probe=$(mktemp -d)
    printf '#include <stddef.h>\n#include <stdint.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { return 0; }\n' > "$probe/f.c"
    if ! clang -fsanitize=fuzzer "$probe/f.c" -o "$probe/f" 2>/dev/null; then
        need_debs "libclang-rt-$major-dev"
        clang -fsanitize=fuzzer "$probe/f.c" -o "$probe/f" 2>"$probe/err" || \
            { cat "$probe/err" >&2; rm -rf "$probe"; die "clang $major cannot link -fsanitize=fuzzer (libFuzzer missing)"; }
    fi
    rm -rf "$probe"
}
