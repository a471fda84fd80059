#!/bin/bash
# Every benchmark in bench/, one after another. They print figures; they
# are not tests and never fail on a number.
# FEMU_BENCH_FULL=1 runs the blackbox benchmarks at full length (about 20
# minutes more); by default they run short so that the whole takes ~15.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
py=${PYTHON:-python3}
"$py" "$here/nossd-vs-stock.py" "$@"

# the blackbox benchmarks need qemu.qmp and matplotlib: the project's venv
bbpy=$here/../build/venv/bin/python3
[[ -x $bbpy ]] || bbpy=$py
short=(--short)
[[ ${FEMU_BENCH_FULL:-0} == 1 ]] && short=()
for b in bb-latency bb-parallelism bb-gc-waf; do
	echo
	"$bbpy" "$here/$b.py" "${short[@]}"
done

# zoned vs blackbox (short: a few minutes in all)
for b in zns-vs-blackbox zns-stripe zns-gc-free; do
	echo
	"$bbpy" "$here/$b.py" "${short[@]}"
done
