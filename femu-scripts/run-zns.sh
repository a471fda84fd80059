#!/bin/bash
# ZNS: zoned namespace on the NAND model. All options: --help.
FEMU_PROG=$(basename "$0") exec "$(dirname "$0")/femu-launch.sh" --mode 3 "$@"
