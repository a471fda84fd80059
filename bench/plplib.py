"""Shared by the PLP benchmarks: the paper's flash, the db_bench run in the guest (two
zoned namespaces with a zoned btrfs each: data on ns1, WAL on ns2, both made afresh
before every run) and its result lines, and the buffer split of each PLP configuration.
"""

import re
import sys

CITATION = ("selective power-loss protection for ZNS write buffers with balanced flush, "
            "on FEMU's zoned mode")

ZONE_MB = 16
# 8 channels x 8 chips, 4 KiB pages, 1024-page (4 MiB) blocks, read/program/transfer
# 40/100/40 us (SLC: one latency for every page), 16 MiB zones
PAPER_FLASH = dict(zns_zone_size_mb=ZONE_MB, zns_num_ch=8, zns_num_lun=8, pgs_per_blk=1024,
                   zns_flash_type=1, zns_pg_rd_lat=40000, zns_pg_wr_lat=100000,
                   zns_blk_er_lat=3000000, ch_xfer_lat=40000)
NS_MB = 1024
TWO_NS = dict(namespaces=2, ns_sizes_mb=f"{NS_MB}:{NS_MB}")
DRIVE_MB = 2 * NS_MB
# the guest's ceiling: the same zoned drive with (almost) no media time, no plp
NO_MEDIA_TIME = dict(zns_pg_rd_lat=1, zns_pg_wr_lat=1, ch_xfer_lat=0, zns_blk_er_lat=1)

RESULT = re.compile(r"^(fillseq|overwrite)\s*:\s*([\d.]+) micros/op (\d+) ops/sec", re.M)


def mode_props(mode, w_mb, plp_mb):
    """A write buffer of w_mb MiB in all: none volatile, full protected, selective plp_mb
    protected (the WAL namespace's) and the rest volatile (the data namespace's)."""
    if mode == "none":
        return dict(plp="none", plp_buf_mb=0, buf_mb=w_mb)
    if mode == "full":
        return dict(plp="full", plp_buf_mb=w_mb, buf_mb=0)
    if mode == "selective":
        return dict(plp="none:full", plp_buf_mb=plp_mb, buf_mb=w_mb - plp_mb)
    raise ValueError(mode)


def db_bench_cmd(benchmarks, keys, memtable_kb):
    mt = memtable_kb * 1024
    return (f"db_bench --benchmarks={benchmarks} --num={keys} --key_size=100 "
            f"--value_size=800 --sync=1 --threads=1 --compression_type=none "
            f"--write_buffer_size={mt} --target_file_size_base={mt}")


def guest_prelude(db_bench, warm_serial):
    """Guest bash: an untimed mkfs/mount (loads btrfs), then `run SERIAL TAG`: fresh file
    systems on the drive's two namespaces, a stats mark TAG-pre, the section @@TAG@@ with
    db_bench's result lines, a stats mark TAG."""
    return f"""
D=$(dev_of {warm_serial}) || exit 1
mkfs.btrfs -f -O zoned -d single -m single $D >/dev/null 2>&1 || exit 1
mkdir -p /mnt/db /mnt/wal; mount -t btrfs $D /mnt/db && umount /mnt/db || exit 1
run() {{
  local D W; D=$(dev_of $1) && W=$(dev_of $1 2) || exit 1
  mkfs.btrfs -f -O zoned -d single -m single $D >/dev/null 2>&1 || exit 1
  mkfs.btrfs -f -O zoned -d single -m single $W >/dev/null 2>&1 || exit 1
  mount -t btrfs $D /mnt/db && mount -t btrfs $W /mnt/wal || exit 1
  echo "@@stats $2-pre@@"
  echo "@@$2@@"
  {db_bench} --db=/mnt/db/r --wal_dir=/mnt/wal/r 2>&1 | grep -E '^(fillseq|overwrite) ' || exit 1
  echo "@@stats $2@@"
  umount /mnt/db /mnt/wal || exit 1
}}
"""


def ops_of(guest, tag, benches):
    """{benchmark: ops/s} of run TAG."""
    found = {m.group(1): int(m.group(3)) for m in RESULT.finditer(guest.section(tag))}
    missing = [b for b in benches if b not in found]
    if missing:
        sys.exit(f"no {missing} result in run {tag}:\n{guest.section(tag)}")
    return found


def grew(guest, serial, tag, name):
    """How much a counter of drive SERIAL grew over run TAG."""
    return guest.marks[tag][1][serial][name] - guest.marks[f"{tag}-pre"][1][serial][name]


def flush_axes(ax1, ax2, sizes, paper_reduction, fontsize=8):
    """The flush-time plot's axes (plp-flush-time.py, sim-plp.py): flush ms per PLP region
    size, and the balanced flush's reduction beside the paper's average."""
    ax2.axhline(paper_reduction, color="red", ls=":", label="paper (average)")
    for ax in (ax1, ax2):
        ax.set_xscale("log", base=2)
        ax.set_xticks(sizes, [str(s) for s in sizes])
        ax.set_xlabel("PLP region, MiB")
        ax.legend(fontsize=fontsize)
    ax1.set_ylabel("power-loss flush, ms")
    ax1.set_yscale("log")
    ax2.set_ylabel("balanced vs normal, reduction %")
    ax2.set_ylim(0, 100)
