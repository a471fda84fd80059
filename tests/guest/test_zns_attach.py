"""Linux attaches every zone of large zoned drives (16 MiB zones, sparse): 8191, 8192
and 16384 zones, the sizes whose last zone report ends inside Linux's report buffer
(Linux 6.1 failed them with "invalid zone type 0x0" while the device filled PRP lists
with descriptors). Each boot reads the zones three times: at attach and at two
controller rescans, which revalidate the zones the same way. qtest checks the device
side (tests/qtest/test_zns_report_sizes.py); this is the kernel's view of it.

One boot per size, about 10-20 s each under TCG."""

import pytest

from test_zns import booted, zns_only  # noqa: F401 (zns_only is a fixture)

ZONE_MB = 16
ZONE_SECTORS = ZONE_MB * (1 << 20) // 512
READS = 3

CMD = r"""
D=/dev/nvme0n1; Q=/sys/block/nvme0n1/queue
for i in $(seq 1 %d); do
    if [ $i -gt 1 ]; then
        echo 1 > /sys/class/nvme/nvme0/rescan_controller
        udevadm settle 2>/dev/null || sleep 2
    fi
    echo "NR_ZONES_$i=$(cat $Q/nr_zones)"
    echo "ZONED_$i=$(cat $Q/zoned)"
    blkzone report $D > /tmp/rep 2>&1; echo "REPORT_RC_$i=$?"
    echo "REPORTED_$i=$(grep -c 'start:' /tmp/rep)"
    echo "LAST_$i=$(tail -n 1 /tmp/rep | sed -n 's/.*start: \(0x[0-9a-f]*\),.*/\1/p')"
    echo "NOT_EMPTY_$i=$(grep 'start:' /tmp/rep | grep -vc '(em)')"
done
echo @@dmesg@@
dmesg | grep -iE "nvme|zone" | grep -ivE "^\s*$" | tail -n 40
""" % READS


@pytest.mark.parametrize("zones", [8191, 8192, 16384])
def test_every_zone_attached(zns_only, zones):
    r, s, v = booted(CMD, f"zns_zone_size_mb={ZONE_MB}", size=zones * ZONE_MB)
    for i in range(1, READS + 1):
        assert v[f"ZONED_{i}"] == "host-managed", r.describe()
        assert v[f"NR_ZONES_{i}"] == str(zones), (i, r.describe())
        assert v[f"REPORT_RC_{i}"] == "0", r.describe()
        assert v[f"REPORTED_{i}"] == str(zones), (i, r.describe())
        assert int(v[f"LAST_{i}"], 16) == (zones - 1) * ZONE_SECTORS, (i, r.describe())
        assert v[f"NOT_EMPTY_{i}"] == "0", (i, r.describe())
    dmesg = s["dmesg"]
    assert "invalid zone type" not in dmesg, dmesg
    assert "failed" not in dmesg.lower(), dmesg

