"""With --backing FILE the data survive a power-off: write a pattern in one
boot, read it back in the next."""

import hashlib
import uuid

MIB = 1 << 20
OFFSET_MIB = 5


def pattern(tag):
    line = f"femu-persist-{tag}\n".encode()
    return (line * (MIB // len(line) + 1))[:MIB]


def test_data_survive_restart(guest, tmp_path):
    backing = tmp_path / "backing.img"
    tag = uuid.uuid4().hex
    want = hashlib.sha256(pattern(tag)).hexdigest()
    read_back = (f"dd if=/dev/nvme0n1 bs=1M skip={OFFSET_MIB} count=1 iflag=direct 2>/dev/null"
                 " | sha256sum | cut -d' ' -f1")

    first = guest(
        f"echo BEFORE=$({read_back})\n"
        f"yes femu-persist-{tag} | head -c {MIB} | "
        f"dd of=/dev/nvme0n1 bs=1M seek={OFFSET_MIB} oflag=direct 2>/dev/null; echo WRITE_RC=$?\n"
        f"echo AFTER=$({read_back})\n",
        backing=backing, size=64)
    v, why = first.values(), first.describe()
    # --size MiB of data, then 16 MiB the device keeps for its metadata (zone state)
    assert backing.stat().st_size == (64 + 16) * MIB, "backing file not created with --size"
    assert v["BEFORE"] != want, f"pattern present before it was written\n{why}"
    assert v["WRITE_RC"] == "0", why
    assert v["AFTER"] == want, f"pattern not read back in the same boot\n{why}"

    second = guest(f"echo READ=$({read_back})\n", backing=backing)
    assert second.values()["READ"] == want, "pattern lost across restart\n" + second.describe()
