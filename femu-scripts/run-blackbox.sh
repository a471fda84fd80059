#!/bin/bash
# Blackbox: conventional SSD with FTL, GC and NAND timing. All options: --help.
FEMU_PROG=$(basename "$0") exec "$(dirname "$0")/femu-launch.sh" --mode 1 "$@"
