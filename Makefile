# FEMU: `make` builds QEMU with the femu device and the guest image; `make check` runs every
# test. Each step installs what it needs (apt-get, pip) and says what it is doing.
SHELL := /bin/bash
BUILD ?= $(CURDIR)/build
VENV := $(BUILD)/venv
PYTHON := $(VENV)/bin/python3

.PHONY: all qemu image demo unit qtest guest check bench venv clean help

all: qemu image

help:
	@echo "make demo     boot a guest with an emulated zoned NVMe SSD and show it working"
	@echo "make          build QEMU with FEMU ($(BUILD)/qemu-system-x86_64) and the guest image"
	@echo "make qemu     build only QEMU (incremental after edits to hw/femu)"
	@echo "make image    build only the guest image ($(BUILD)/image)"
	@echo "make unit     unit tests of the QEMU-free model code (no QEMU needed)"
	@echo "make qtest    device tests through QEMU's qtest accelerator"
	@echo "make guest    tests in a booted Linux guest with real tools"
	@echo "make check    all of the above"
	@echo "make bench    benchmarks (print figures; not tests)"

qemu:
	@bash qemu/build-qemu.sh "$(BUILD)"

image:
	@bash images/build-image.sh "$(BUILD)/image"

# Boots a zoned drive (1 GiB, 256 zones of 4 MiB), shows it, and writes and verifies data.
demo: qemu image
	@femu-scripts/run-zns.sh --size 1024 --dev zns_zone_size_mb=4 --cmd "$$(cat femu-scripts/demo-guest.sh)"

# The venv comes from Debian's python3 so that it is the same on every machine.
venv:
	@bash qemu/setup-venv.sh "$(VENV)"

unit: venv
	@bash tests/unit/run.sh "$(BUILD)"

qtest: qemu venv
	@$(PYTHON) -m pytest tests/qtest

guest: qemu image venv
	@$(PYTHON) -m pytest tests/guest

check: qemu image venv
	@bash tests/run-all.sh "$(BUILD)"

bench: qemu image venv
	@bash bench/run-all.sh

clean:
	rm -rf "$(BUILD)"
