"""Every statistic has one name: the statistics page (vendor log 0xCA) and QMP's `stats`
come from one emitter, and a name emitted twice (a kind's lifetime counter taking the
name of this boot's host counter, say) leaves QMP's answer holding whichever came last.
Each kind alone, and kinds mixed on one controller, after I/O on every namespace."""

import pytest

import nvme
import qtest_machine
import vendorlog
from qtest_machine import DevConfig

pytestmark = pytest.mark.skipif(qtest_machine.DEVICE == "stock", reason="femu's statistics")

FLASH = "nchs=2,luns_per_ch=2,pgs_per_blk=16,flash_type=1,op_pcent=25"
CONFIGS = {
    "nossd": DevConfig(mode=2, size_mb=8),
    "blackbox": DevConfig(mode=1, size_mb=8, extra=FLASH),
    "zns": DevConfig(mode=3, size_mb=8, extra=FLASH + ",zns_zone_size_mb=1"),
    "fdp": DevConfig(mode=4, size_mb=8, extra=FLASH),
    "whitebox": DevConfig(mode=0, size_mb=16, lba_index=1,
                          extra="lnum_ch=2,lnum_lun=4,lnum_pln=1,lsecs_per_pg=4,lpgs_per_blk=16"),
    "mixed": DevConfig(mode=4, size_mb=24, namespaces=3, extra=(
        "ns_types=fdp:zns:blackbox,ns_sizes_mb=8:8:8,zns_zone_size_mb=1," + FLASH)),
}


@pytest.mark.parametrize("kind", sorted(CONFIGS))
def test_every_statistic_has_one_name(kind, tmp_path):
    cfg = CONFIGS[kind]
    m = qtest_machine.start_machine(cfg, str(tmp_path))
    try:
        ctrl = m.ctrl
        ctrl.enable(css=nvme.CC_CSS_ALL)
        sq = ctrl.create_io_queues(1, entries=64)
        if kind != "whitebox":
            for nsid in range(1, cfg.namespaces + 1):
                data = bytes([nsid]) * ctrl.block_size(nsid)
                assert ctrl.write(sq, nsid, 0, data).ok
                c, back = ctrl.read(sq, nsid, 0, 1)
                assert c.ok and back == data
        c, page = ctrl.get_log_page(vendorlog.LOG_ID, 65536)
        assert c.ok, c
        stats = vendorlog.parse(page)       # raises on a name given twice
        assert stats["mode"] and stats["host_write_commands"] >= (kind != "whitebox")
        r = m.qmp("qom-get", path="/machine/peripheral/femu0", property="stats")
        assert len(r["return"]) == len(stats) - 1, "QMP and the page disagree"
    finally:
        m.close()
