"""Flush, Dataset Management (discard), Write Zeroes and Compare from the guest.

The device reports DLFEAT "deallocated blocks read as zeroes", so reading a
discarded range must give zeroes."""

MIB = 1 << 20

CMD = r"""
dev=/dev/nvme0n1
ss=$(blockdev --getss $dev)
echo SECTOR=$ss
nonzero() { # bytes that are not zero in LEN bytes at byte offset OFF
	dd if=$dev bs=64k skip=$(($1 / 65536)) count=$(($2 / 65536)) iflag=direct 2>/dev/null |
		tr -d '\000' | wc -c
}
same() { # does LEN bytes at OFF equal the same bytes of /tmp/pat (at PATOFF)?
	dd if=$dev bs=64k skip=$(($1 / 65536)) count=$(($2 / 65536)) iflag=direct 2>/dev/null >/tmp/got
	dd if=/tmp/pat bs=64k skip=$(($3 / 65536)) count=$(($2 / 65536)) 2>/dev/null | cmp -s - /tmp/got && echo yes || echo no
}
head -c 3145728 /dev/urandom >/tmp/pat

nvme flush $dev; echo FLUSH_RC=$?

# Discard the middle MiB of a 3 MiB pattern at 1 MiB.
dd if=/tmp/pat of=$dev bs=1M seek=1 oflag=direct 2>/dev/null; echo PAT1_RC=$?
echo PAT1_WRITTEN=$(same 1048576 3145728 0)
blkdiscard -o 2097152 -l 1048576 $dev; echo DISCARD_RC=$?
echo DISCARD_NONZERO=$(nonzero 2097152 1048576)
echo DISCARD_BEFORE_KEPT=$(same 1048576 1048576 0)
echo DISCARD_AFTER_KEPT=$(same 3145728 1048576 2097152)

# Write Zeroes on 64 KiB in the middle of 1 MiB of pattern at 8 MiB.
dd if=/tmp/pat of=$dev bs=1M seek=8 count=1 oflag=direct 2>/dev/null
nvme write-zeroes $dev -s $(( (8388608 + 524288) / ss )) -c $(( 65536 / ss - 1 )); echo WZ_RC=$?
echo WZ_NONZERO=$(nonzero $((8388608 + 524288)) 65536)
echo WZ_BEFORE_KEPT=$(same 8388608 524288 0)
echo WZ_AFTER_KEPT=$(same $((8388608 + 589824)) 458752 589824)

# Compare 4 KiB at 16 MiB: equal data succeeds, one different byte fails.
yes femu-compare | head -c 4096 >/tmp/c1
{ head -c 4095 /tmp/c1; printf X; } >/tmp/c2
dd if=/tmp/c1 of=$dev bs=4096 seek=4096 oflag=direct 2>/dev/null
nvme compare $dev -s $((16777216 / ss)) -c $((4096 / ss - 1)) -z 4096 -d /tmp/c1; echo CMP_SAME_RC=$?
echo @@compare-diff@@
nvme compare $dev -s $((16777216 / ss)) -c $((4096 / ss - 1)) -z 4096 -d /tmp/c2 2>&1; echo CMP_DIFF_RC=$?
"""


def test_flush_discard_write_zeroes_compare(guest):
    r = guest(CMD, size=64)
    v, why = r.values(), r.describe()

    assert v["FLUSH_RC"] == "0", why

    assert v["PAT1_RC"] == "0" and v["PAT1_WRITTEN"] == "yes", why
    assert v["DISCARD_RC"] == "0", why
    assert v["DISCARD_NONZERO"] == "0", f"discarded range does not read as zeroes\n{why}"
    assert v["DISCARD_BEFORE_KEPT"] == "yes", f"discard touched data before the range\n{why}"
    assert v["DISCARD_AFTER_KEPT"] == "yes", f"discard touched data after the range\n{why}"

    assert v["WZ_RC"] == "0", why
    assert v["WZ_NONZERO"] == "0", f"Write Zeroes range does not read as zeroes\n{why}"
    assert v["WZ_BEFORE_KEPT"] == "yes", f"Write Zeroes touched data before the range\n{why}"
    assert v["WZ_AFTER_KEPT"] == "yes", f"Write Zeroes touched data after the range\n{why}"

    assert v["CMP_SAME_RC"] == "0", f"compare of equal data failed\n{why}"
    assert v["CMP_DIFF_RC"] != "0", f"compare of different data succeeded\n{why}"
    # nvme-cli names the status: Compare Failure (0x85, with DNR 0x4285)
    assert "compare failure" in r.sections()["compare-diff"].lower(), why
