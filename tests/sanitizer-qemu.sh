#!/usr/bin/env bash
# QEMU as `make check-sanitizers` starts it (FEMU_QEMU): a copy of QEMU's stderr goes to
# FEMU_SANITIZER_LOGS/qemu.PID for tests/sanitizer_reports.py. exec keeps the pid, so the
# tests' signals reach QEMU itself.
exec "${FEMU_SANITIZER_QEMU:?}" "$@" 2> >(tee "${FEMU_SANITIZER_LOGS:?}/qemu.$$" >&2)
