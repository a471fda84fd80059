# FEMU: `make` builds QEMU with the femu device and the guest image; `make check` runs every
# test. Each step installs what it needs (apt-get, pip) and says what it is doing.
# ./configure records other choices in config.mk (./configure --help); without it, the defaults.
SHELL := /bin/bash
-include config.mk
BUILD ?= $(CURDIR)/build
FEMU_QEMU_SOURCE ?= debian
FEMU_DEBUG ?= no
FEMU_SANITIZERS ?= no
FEMU_FUZZING ?= no
FEMU_QEMU_ARGS ?=
export FEMU_QEMU_SOURCE FEMU_DEBUG FEMU_SANITIZERS FEMU_FUZZING FEMU_QEMU_ARGS
VENV := $(BUILD)/venv
PYTHON := $(VENV)/bin/python3
# The tests, benchmarks and run scripts find QEMU and the image here (unless set already).
export FEMU_BUILD ?= $(BUILD)
export FEMU_QEMU ?= $(BUILD)/qemu-system-x86_64
export FEMU_IMAGE_DIR ?= $(BUILD)/image
ifeq ($(FEMU_SANITIZERS),yes)
# A sanitizer build of QEMU reports leaks of QEMU's own allocations at every exit, which would
# fail every QEMU run: off for what runs QEMU (`make unit` keeps meson's defaults, leaks on).
# `make check-sanitizers` sets its own, stricter options.
qtest guest check demo bench: export ASAN_OPTIONS ?= detect_leaks=0
qtest guest check demo bench: export UBSAN_OPTIONS ?= print_stacktrace=1
endif
# check-sanitizers uses the configured build when it has the sanitizers, otherwise its own
# directory so that the normal build is not disturbed.
SAN_BUILD := $(if $(filter yes,$(FEMU_SANITIZERS)),$(BUILD),$(BUILD)/sanitizers)

.PHONY: all qemu image sim demo demo-plp unit unit-build qtest guest check check-sanitizers bench venv clean help

all: qemu image sim

help:
	@echo "./configure   choose the build directory, QEMU source, debug/sanitizer/fuzzing builds (--help)"
	@echo "make demo     boot a guest with an emulated zoned NVMe SSD and show it working"
	@echo "make demo-plp a selective-PLP zoned drive: write, cut power, restart, show what survived"
	@echo "make          build QEMU with FEMU ($(BUILD)/qemu-system-x86_64) and the guest image"
	@echo "make qemu     build only QEMU (incremental after edits to hw/femu)"
	@echo "make image    build only the guest image ($(BUILD)/image)"
	@echo "make sim      build only femu-sim ($(BUILD)/femu-sim): the models in virtual time"
	@echo "make unit     unit tests of the QEMU-free model code (no QEMU needed)"
	@echo "make qtest    device tests through QEMU's qtest accelerator"
	@echo "make guest    tests in a booted Linux guest with real tools"
	@echo "make check    all of the above"
	@echo "make check-sanitizers   unit and qtest tests on QEMU built with ASan+UBSan ($(SAN_BUILD))"
	@echo "make bench    benchmarks (print figures; not tests)"

qemu:
	@bash qemu/build-qemu.sh "$(BUILD)"

image:
	@bash images/build-image.sh "$(BUILD)/image"

# femu-sim is built with the unit tests' meson project (the same QEMU-free model code).
sim: unit-build
	@bash sim/build-sim.sh "$(BUILD)"

# Boots a zoned drive (1 GiB, 256 zones of 4 MiB), shows it, and writes and verifies data.
demo: qemu image
	@femu-scripts/run-zns.sh --size 1024 --dev zns_zone_size_mb=4 --cmd "$$(cat femu-scripts/demo-guest.sh)"

demo-plp: qemu image
	@femu-scripts/demo-plp.sh

# The venv comes from Debian's python3 so that it is the same on every machine.
venv:
	@bash qemu/setup-venv.sh "$(VENV)"

# The unit tests' meson build directory, set up with the configured sanitizer choice.
unit-build: venv
	@bash qemu/setup-unit-build.sh "$(BUILD)"

unit: unit-build
	@bash tests/unit/run.sh "$(BUILD)"

qtest: qemu venv sim
	@$(PYTHON) -m pytest tests/qtest

guest: qemu image venv
	@$(PYTHON) -m pytest tests/guest

check: qemu image unit-build sim
	@bash tests/run-all.sh "$(BUILD)"

check-sanitizers: venv
	@bash tests/run-sanitizers.sh "$(SAN_BUILD)" "$(VENV)"

bench: qemu image venv
	@PYTHON=$(PYTHON) bash bench/run-all.sh

clean:
	rm -rf "$(BUILD)"
