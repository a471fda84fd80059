#!/bin/bash
# FDP: NVMe Flexible Data Placement on a page-level FTL with GC (namespace 1 in endurance
# group 1, four Initially Isolated reclaim unit handles unless --dev says fdp_ruh_types=).
# All options: --help.
FEMU_PROG=$(basename "$0") exec "$(dirname "$0")/femu-launch.sh" --mode 4 "$@"
