"""namespaces=K splits the capacity evenly; lba_index=1 gives 4 KiB LBAs."""

MIB = 1 << 20

CMD = r"""
nvme list-ns /dev/nvme0 | grep -c '^\[' | sed 's/^/NS_COUNT=/'
for n in 1 2; do
	d=$(nsdev $n)
	echo NS${n}_BYTES=$(blockdev --getsize64 $d)
	echo NS${n}_SECTOR=$(blockdev --getss $d)
done
N1=$(nsdev 1) N2=$(nsdev 2)
# a write to namespace 2 must not show up in namespace 1
yes femu-ns2 | head -c 65536 | dd of=$N2 bs=64k oflag=direct 2>/dev/null
echo NS1_NONZERO=$(dd if=$N1 bs=64k count=1 iflag=direct 2>/dev/null | tr -d '\000' | wc -c)
echo NS2_NONZERO=$(dd if=$N2 bs=64k count=1 iflag=direct 2>/dev/null | tr -d '\000' | wc -c)
"""


def test_two_namespaces_split_capacity(guest, femu_only):
    r = guest(CMD, size=256, dev="namespaces=2,lba_index=1")
    v, why = r.values(), r.describe()
    assert v["NS_COUNT"] == "2", why
    for n in (1, 2):
        assert int(v[f"NS{n}_BYTES"]) == 128 * MIB, f"nvme0n{n} size\n{why}"
        assert v[f"NS{n}_SECTOR"] == "4096", f"nvme0n{n} LBA size with lba_index=1\n{why}"
    assert v["NS2_NONZERO"] == "65536", why
    assert v["NS1_NONZERO"] == "0", f"namespaces overlap\n{why}"
