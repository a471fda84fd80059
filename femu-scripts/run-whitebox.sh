#!/bin/bash
# Whitebox: Open-Channel SSD, the host runs the FTL. All options: --help.
FEMU_PROG=$(basename "$0") exec "$(dirname "$0")/femu-launch.sh" --mode 0 "$@"
