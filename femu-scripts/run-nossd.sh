#!/bin/bash
# NoSSD: plain NVMe namespace, no media model. All options: --help.
FEMU_PROG=$(basename "$0") exec "$(dirname "$0")/femu-launch.sh" --mode 2 "$@"
