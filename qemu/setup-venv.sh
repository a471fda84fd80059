#!/usr/bin/env bash
# The project's Python venv: meson (QEMU 10 needs >= 1.5, Debian 12 has 1.0) and the test
# and benchmark packages, all from PyPI by name.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
venv=${1:?usage: setup-venv.sh VENV}
packages=('meson>=1.5,<2' 'pytest>=7' 'qemu.qmp>=0.0.3' 'matplotlib>=3.5' 'psutil>=5.9'
          'dask[distributed]>=2023.1')
need_debs python3-venv
if [ ! -x "$venv/bin/python3" ]; then
    step "creating Python venv $venv"
    /usr/bin/python3 -m venv "$venv" || die "python3 -m venv failed"
    done_step
fi
stamp=$venv/.femu-packages
want=$(printf '%s\n' "${packages[@]}")
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    step "installing Python packages from PyPI: ${packages[*]}"
    "$venv/bin/pip" install -q "${packages[@]}" || die "pip could not install ${packages[*]} (no network to PyPI?)"
    echo "$want" > "$stamp"
    done_step
fi
