"""flash_preset=NAME: a named drive (hw/femu/nand/presets.c) sets its properties where the
device has its defaults; a property given with another value keeps that value. Each preset
starts a working drive of its kind (a write read back), and the properties read back over
QMP are the preset's."""

import pytest

import nvme
import qtest_machine
from qtest_machine import DevConfig

pytestmark = pytest.mark.skipif(qtest_machine.DEVICE == "stock", reason="femu's presets")

PATH = "/machine/peripheral/femu0"
# name -> femu_mode, capacity (MiB), a few of its properties
PRESETS = {
    "dc-tlc": (1, 8192, {"nchs": 16, "luns_per_ch": 8, "pls_per_lun": 2, "pg_rd_lat": 71900,
                         "secs_per_pg": 32, "map_unit_kb": 4, "ch_mts": 400,
                         "pcie_gen": 3, "pcie_lanes": 8, "fw_cores": 8, "fw_cmd_ns": 7400,
                         "op_pcent": 37, "wb_size_mb": 8, "wb_plp": True, "vwc": 0}),
    "dc-tlc-gen4": (1, 8192, {"nchs": 8, "luns_per_ch": 16, "ch_mts": 815, "pcie_gen": 4,
                              "secs_per_pg": 32, "map_unit_kb": 4,
                              "fw_cmd_ns": 8889, "op_pcent": 15, "wb_size_mb": 8,
                              "wb_plp": True, "vwc": 0}),
    "zns-tlc": (3, 4096, {"zns_num_ch": 8, "zns_num_lun": 4, "secs_per_pg": 64,
                          "zns_pg_rd_lat": 50000, "ch_mts": 450, "nand_partial_xfer": True}),
    "ll-slc": (1, 2048, {"flash_type": 1, "nchs": 8, "luns_per_ch": 4, "pg_rd_lat": 5000,
                         "fw_cores": 4, "fw_cmd_ns": 5333, "op_pcent": 37,
                         "wb_size_mb": 1, "wb_plp": True, "vwc": 0}),
}


def qom(m, prop):
    r = m.qmp("qom-get", path=PATH, property=prop)
    assert "return" in r, r
    return r["return"]


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_preset_sets_its_properties(tmp_path, name, io_ok):
    mode, size, props = PRESETS[name]
    m = qtest_machine.start_machine(DevConfig(mode=mode, size_mb=size,
                                              extra="flash_preset=" + name), str(tmp_path))
    try:
        for prop, want in props.items():
            assert qom(m, prop) == want, (name, prop)
        m.ctrl.enable(css=nvme.CC_CSS_ALL)
        # a PLP write buffer is nothing volatile: the drive reports no write cache
        assert m.ctrl.id_ctrl()["vwc"] & 1 == (0 if props.get("wb_plp") else 1), name
        io_ok(m.ctrl, slba=0)     # at a zoned drive's write pointer too
    finally:
        m.close()


def test_given_value_wins(tmp_path):
    m = qtest_machine.start_machine(
        DevConfig(mode=1, size_mb=4096, extra="nchs=4,flash_preset=dc-tlc,fw_cores=2"),
        str(tmp_path))
    try:
        assert qom(m, "nchs") == 4 and qom(m, "fw_cores") == 2     # given
        assert qom(m, "luns_per_ch") == 8 and qom(m, "pcie_lanes") == 8     # the preset's
        # the model has the given geometry: 4 channels x 8 chips
        st = qom(m, "stats")
        chips = [k for k in st if k.startswith("chip") and k.endswith("-busy-ns")]
        assert len(chips) == 32, sorted(st)
    finally:
        m.close()


def test_no_buffer_wins_over_the_presets(tmp_path):
    """wb_size_mb=0 is a value given: the preset's write buffer goes (its vwc=0 stays: a
    drive without a buffer has no volatile cache either)."""
    m = qtest_machine.start_machine(
        DevConfig(mode=1, size_mb=8192, extra="flash_preset=dc-tlc-gen4,wb_size_mb=0"),
        str(tmp_path))
    try:
        assert qom(m, "wb_size_mb") == 0 and qom(m, "wb_plp") is True
        assert not any(k.startswith("wb-") for k in qom(m, "stats"))
    finally:
        m.close()


def test_given_blocks_win_over_the_presets_op(tmp_path, io_ok):
    """op_pcent and blks_per_pl exclude each other: blocks given leave the preset's OP out."""
    m = qtest_machine.start_machine(
        DevConfig(mode=1, size_mb=1024, extra="flash_preset=ll-slc,blks_per_pl=64"),
        str(tmp_path))
    try:
        assert qom(m, "blks_per_pl") == 64 and qom(m, "op_pcent") == -1
        assert qom(m, "pg_rd_lat") == 5000      # the rest of the preset still applies
        m.ctrl.enable(css=nvme.CC_CSS_ALL)
        io_ok(m.ctrl, slba=0)
    finally:
        m.close()
