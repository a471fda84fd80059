"""The whitebox (Open-Channel SSD 2.0) drive as today's Linux sees it, without any OCSSD
tool: the kernel attaches the namespace as a plain NVMe disk without I/O errors (its
partition scan reads empty chunks), and the chunk rules hold for ordinary direct I/O
through /dev/nvme0n1: sequential writes at the write pointer work and read back, a
rewrite or a write past the write pointer fails, data survives a restart with a backing
file. A mixed ocssd:zns device gives both namespaces side by side."""

import pytest

# run-whitebox.sh's geometry: 4 KiB sectors, 16 KiB write units, 1 MiB chunks
CHUNK_KB = 1024
UNIT_KB = 16

CHECK = r"""
D=/dev/nvme0n1
echo "VENDOR=$(cat /sys/class/nvme/nvme0/device/vendor):$(cat /sys/class/nvme/nvme0/device/device)"
echo "MODEL=$(cat /sys/class/nvme/nvme0/model | tr -d ' ')"
echo "SIZE=$(blockdev --getsize64 $D)"
echo "LBS=$(blockdev --getss $D)"
echo "EMPTY=$(dd if=$D bs=1M count=1 iflag=direct status=none | tr -d '\0' | wc -c)"
head -c 65536 /dev/urandom > /tmp/a
dd if=/tmp/a of=$D bs=64k count=1 oflag=direct status=none; echo "W0=$?"
dd if=/tmp/a of=$D bs=64k count=1 seek=1 oflag=direct status=none; echo "W1=$?"
dd if=/tmp/a of=$D bs=64k count=1 oflag=direct status=none 2>/dev/null; echo "REWRITE=$?"
dd if=/tmp/a of=$D bs=64k count=1 seek=4 oflag=direct status=none 2>/dev/null; echo "GAP=$?"
dd if=/tmp/a of=$D bs=4k count=1 seek=32 oflag=direct status=none 2>/dev/null; echo "PART_UNIT=$?"
dd if=$D bs=64k count=1 skip=1 iflag=direct status=none | cmp -s - /tmp/a; echo "READ1=$?"
dd if=$D bs=64k count=1 skip=2 iflag=direct status=none | tr -d '\0' | wc -c | sed 's/^/ABOVE_WP=/'
echo @@dmesg@@
dmesg | grep -iE "nvme|error|I/O" | tail -n 30
"""


@pytest.fixture
def whitebox(guest, femu_only):
    return guest


def test_attaches_cleanly_and_follows_chunk_rules(whitebox):
    r = whitebox(CHECK, script="run-whitebox.sh", size=256)
    v, s = r.values(), r.sections()
    assert v["VENDOR"] == "0x1d1d:0x1f1f", r.describe()
    assert v["MODEL"] == "FEMUOpenChannel-SSDController", r.describe()
    assert v["SIZE"] == str(256 << 20) and v["LBS"] == "4096", r.describe()
    assert v["EMPTY"] == "0", r.describe()
    assert v["W0"] == "0" and v["W1"] == "0", r.describe()
    assert v["REWRITE"] != "0", "a rewrite of written sectors must fail\n" + r.describe()
    assert v["GAP"] != "0", "a write past the write pointer must fail\n" + r.describe()
    assert v["PART_UNIT"] != "0", "a write of less than WS_MIN must fail\n" + r.describe()
    assert v["READ1"] == "0", r.describe()
    assert v["ABOVE_WP"] == "0", r.describe()
    # the failed writes above are the only errors: none at attach (partition scan)
    attach = s["dmesg"].split("I/O error")[0] if "I/O error" in s["dmesg"] else s["dmesg"]
    assert "critical medium error" not in attach.lower(), r.describe()


def test_data_and_chunks_survive_a_restart(whitebox, tmp_path):
    backing = tmp_path / "wb.img"
    first = r"""
head -c 131072 /dev/urandom > /tmp/a
dd if=/tmp/a of=/dev/nvme0n1 bs=128k count=1 oflag=direct status=none; echo "W=$?"
md5sum < /tmp/a | cut -d' ' -f1 | sed 's/^/SUM=/'
"""
    r1 = whitebox(first, script="run-whitebox.sh", size=64, backing=backing)
    v1 = r1.values()
    assert v1["W"] == "0", r1.describe()
    second = r"""
dd if=/dev/nvme0n1 bs=128k count=1 iflag=direct status=none | md5sum | cut -d' ' -f1 | sed 's/^/SUM=/'
head -c 65536 /dev/urandom > /tmp/b
dd if=/tmp/b of=/dev/nvme0n1 bs=64k count=1 oflag=direct status=none 2>/dev/null; echo "REWRITE=$?"
dd if=/tmp/b of=/dev/nvme0n1 bs=64k count=1 seek=2 oflag=direct status=none; echo "AT_WP=$?"
"""
    r2 = whitebox(second, script="run-whitebox.sh", backing=backing)
    v2 = r2.values()
    assert v2["SUM"] == v1["SUM"], r2.describe()
    assert v2["REWRITE"] != "0", "the write pointer was lost\n" + r2.describe()
    assert v2["AT_WP"] == "0", r2.describe()


def test_mixed_whitebox_and_zoned(whitebox):
    cmd = r"""
N1=$(nsdev 1) N2=$(nsdev 2)
echo "N1=$(blockdev --getsize64 $N1) N2=$(blockdev --getsize64 $N2)"
echo "ZONED2=$(cat /sys/block/${N2#/dev/}/queue/zoned)"
head -c 262144 /dev/urandom > /tmp/a
dd if=/tmp/a of=$N1 bs=256k count=1 oflag=direct status=none; echo "W1=$?"
dd if=$N1 bs=256k count=1 iflag=direct status=none | cmp -s - /tmp/a; echo "R1=$?"
dd if=/tmp/a of=$N2 bs=256k count=1 oflag=direct status=none; echo "W2=$?"
dd if=$N2 bs=256k count=1 iflag=direct status=none | cmp -s - /tmp/a; echo "R2=$?"
dd if=/tmp/a of=$N1 bs=256k count=1 oflag=direct status=none 2>/dev/null; echo "RE1=$?"
"""
    r = whitebox(cmd, script="run-zns.sh", size=128,
                 dev="namespaces=2,ns_types=ocssd:zns,ns_sizes_mb=64:64,lba_index=1")
    v = r.values()
    assert v.get("ZONED2") == "host-managed", r.describe()
    assert "N1=67108864" in r.stdout and "N2=67108864" in r.stdout, r.describe()
    for k in ("W1", "R1", "W2", "R2"):
        assert v[k] == "0", (k, r.describe())
    assert v["RE1"] != "0", r.describe()
