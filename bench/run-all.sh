#!/bin/bash
# Every benchmark in bench/, one after another, each with its wall time. They
# print figures; they are not tests and never fail on a number. Then the kill
# campaign (kill-loop.py), which fails on a violation.
# By default each runs in its short form (--short, about 49 minutes in all on
# 2 cores, plus about 8 for the femu-sim ones, sim-*.py); FEMU_BENCH_FULL=1 runs them at
# full length (about 90 minutes, plus the femu-sim ones' hours: see docs/benchmarks-sim.md). The
# sim-* ones run femu-sim (build/femu-sim).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# they need qemu.qmp and matplotlib: the project's venv
py=$here/../build/venv/bin/python3
[[ -x $py ]] || py=${PYTHON:-python3}
short=(--short)
[[ ${FEMU_BENCH_FULL:-0} == 1 ]] && short=()
for b in nand-booking ftl-write nossd-vs-stock bb-latency bb-parallelism bb-gc-waf zns-vs-blackbox zns-stripe \
	zns-gc-free wb-pu-scaling wb-vs-modes wb-gc sra-readahead plp-flush-time plp-dbbench \
	plp-size-sweep presets fdp-hotcold fdp-cachelib fdp-warp sim-zns-fig1 sim-gc-collapse \
	sim-speed sim-sra-qd sim-plp sim-fdp write-buffer; do
	echo
	echo "=== $b ${short[*]}"
	start=$SECONDS
	"$py" "$here/$b.py" "${short[@]}"
	echo "=== $b: $((SECONDS - start)) s"
done
# The GC policy study (sweep.py): the short grid (about 20 s), or with FEMU_BENCH_FULL=1 the
# full one (about 20 min on 2 cores); --fresh, so that a second run measures again instead
# of resuming the first's results.
grid=policy-study-short
[[ ${FEMU_BENCH_FULL:-0} == 1 ]] && grid=policy-study
echo
echo "=== sweep $grid"
start=$SECONDS
"$py" "$here/sweep.py" "$here/grids/$grid.toml" --fresh
echo "=== sweep $grid: $((SECONDS - start)) s"
# The kill campaign last: it checks rather than measures, and exits non-zero (ending this
# script) on a violation. Short: 10 kills per kind (about a minute); full: 100 (about 7).
echo
echo "=== kill-loop ${short[*]}"
start=$SECONDS
"$py" "$here/kill-loop.py" "${short[@]}"
echo "=== kill-loop: $((SECONDS - start)) s"
