"""nvme-cli sees the controller and namespace as configured, and the SMART
counters follow the I/O the host does."""

import json

from guestlib import STOCK

SIZE_MIB = 256

CMD = r"""
set -e
echo @@list@@; nvme list -o json
echo @@id-ctrl@@; nvme id-ctrl /dev/nvme0 -o json
echo @@size@@; blockdev --getsize64 /dev/nvme0n1
echo @@smart-before@@; nvme smart-log /dev/nvme0 -o json
head -c 4194304 /dev/urandom > /tmp/pattern
# 4 MiB in 32 commands of 128 KiB each way (below mdts, so not split)
dd if=/tmp/pattern of=/dev/nvme0n1 bs=128k oflag=direct 2>/dev/null
dd if=/dev/nvme0n1 of=/dev/null bs=128k count=32 iflag=direct 2>/dev/null
echo @@smart-after@@; nvme smart-log /dev/nvme0 -o json
"""


def test_nvme_list_id_ctrl_and_smart_counters(guest):
    r = guest(CMD, size=SIZE_MIB)
    s = r.sections()
    why = r.describe()

    devices = json.loads(s["list"])["Devices"]
    assert [d["DevicePath"] for d in devices] == ["/dev/nvme0n1"], why
    dev = devices[0]
    assert dev["PhysicalSize"] == SIZE_MIB << 20, why
    assert int(s["size"]) == SIZE_MIB << 20, why
    if not STOCK:
        assert dev["ModelNumber"].startswith("FEMU"), why

    ctrl = json.loads(s["id-ctrl"])
    assert ctrl["vid"] != 0, why
    assert ctrl["sn"].strip() == dev["SerialNumber"].strip() != "", why
    assert ctrl["sqes"] == 0x66 and ctrl["cqes"] == 0x44, why  # 64-byte SQE, 16-byte CQE
    assert ctrl["nn"] >= 1, why
    assert ctrl["mdts"] == 7, why  # the default of both devices
    oncs = ctrl["oncs"]
    for bit, name in ((0, "Compare"), (2, "Dataset Management"), (3, "Write Zeroes")):
        assert oncs & (1 << bit), f"ONCS lacks {name}\n{why}"

    before, after = json.loads(s["smart-before"]), json.loads(s["smart-after"])
    delta = {k: int(after[k]) - int(before[k]) for k in
             ("data_units_written", "data_units_read", "host_write_commands", "host_read_commands")}
    # data units are 1000 x 512 bytes: 4 MiB is 8.2 of them
    assert delta["data_units_written"] >= 8, f"{delta}\n{why}"
    assert delta["data_units_read"] >= 8, f"{delta}\n{why}"
    assert delta["host_write_commands"] >= 32, f"{delta}\n{why}"
    assert delta["host_read_commands"] >= 32, f"{delta}\n{why}"
