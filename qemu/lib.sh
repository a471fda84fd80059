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
