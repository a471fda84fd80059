"""A drive larger than host RAM works while only part of it is written: the default RAM
backend is sparse (reserve=off) and so is a --backing file."""

import os

SIZE_MIB = 256 * 1024   # 256 GiB: far more than this host's RAM

CHECK = """
set -e
blockdev --getsize64 /dev/nvme0n1
end=$(( $(blockdev --getsz /dev/nvme0n1) / 2048 - 4 ))   # last 4 MiB, in MiB
head -c 4194304 /dev/urandom > /tmp/pat
dd if=/tmp/pat of=/dev/nvme0n1 bs=1M seek=$end oflag=direct 2>/dev/null
dd if=/dev/nvme0n1 of=/tmp/back bs=1M skip=$end count=4 iflag=direct 2>/dev/null
cmp /tmp/pat /tmp/back && echo TAIL_OK
"""


def test_large_sparse_ram_backend(guest):
    r = guest(CHECK, size=SIZE_MIB)
    assert r.returncode == 0, r.describe()
    assert str(SIZE_MIB << 20) in r.stdout, r.describe()
    assert "TAIL_OK" in r.stdout, r.describe()


def test_large_sparse_backing_file(guest, tmp_path):
    backing = tmp_path / "big.img"
    r = guest(CHECK, size=SIZE_MIB, backing=backing)
    assert r.returncode == 0, r.describe()
    assert "TAIL_OK" in r.stdout, r.describe()
    st = os.stat(backing)
    assert st.st_size == (SIZE_MIB + 16) << 20     # data, then 16 MiB of device metadata
    # only what was written takes space on the host
    assert st.st_blocks * 512 < 256 << 20, st
