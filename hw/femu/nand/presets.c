/*
 * The named drives; see presets.h. How each value was derived is in docs/device.md (Presets).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "presets.h"

#include <string.h>

const FemuPreset femu_presets[] = {
    {
        .name = "dc-tlc",
        .kind = "blackbox",
        .what = "datacenter TLC NVMe SSD, PCIe 3.0 x8 (Samsung PM1725a class)",
        .source = "Tom's Hardware, 'Samsung Releases SZ985 Z-SSD', comparison table (2018)",
        .props = "flash_type=3,nchs=16,luns_per_ch=8,pls_per_lun=2,pgs_per_blk=64,"
                 "secs_per_pg=32,map_unit_kb=4,"
                 "pg_rd_lat=71900,pg_wr_lat=1319000,blk_er_lat=3500000,ch_mts=400,"
                 "pcie_gen=3,pcie_lanes=8,fw_cores=8,fw_cmd_ns=7400,op_pcent=37,"
                 "wb_size_mb=8,wb_plp=on,vwc=0",
        .published = { .qd1_read_us = 90, .rand_read_kiops = 1080, .rand_write_kiops = 170,
                       .seq_read_mbps = 6400, .seq_write_mbps = 3000 },
    },
    {
        .name = "dc-tlc-gen4",
        .kind = "blackbox",
        .what = "datacenter TLC NVMe SSD, PCIe 4.0 x4 (Samsung PM9A3 U.2 class)",
        .source = "heise online, 'PCIe-4.0-SSD Samsung PM9A3' (2020), from Samsung's "
                  "data sheet",
        .props = "flash_type=3,nchs=8,luns_per_ch=16,pls_per_lun=2,pgs_per_blk=64,"
                 "secs_per_pg=32,map_unit_kb=4,"
                 "pg_rd_lat=75400,pg_wr_lat=1155000,blk_er_lat=3500000,ch_mts=815,"
                 "pcie_gen=4,pcie_lanes=4,fw_cores=8,fw_cmd_ns=8889,op_pcent=15,"
                 "wb_size_mb=8,wb_plp=on,vwc=0",
        .published = { .rand_read_kiops = 900, .rand_write_kiops = 200,
                       .seq_read_mbps = 6500, .seq_write_mbps = 3500 },
    },
    {
        .name = "zns-tlc",
        .kind = "zns",
        .what = "zoned TLC NVMe SSD, PCIe 3.0 x4 (Western Digital Ultrastar DC ZN540 class)",
        .source = "NVMeVirt (FAST '23) ssd_config.h, its model of the ZN540 calibrated on "
                  "the drive",
        .props = "zns_flash_type=3,zns_num_ch=8,zns_num_lun=4,secs_per_pg=64,"
                 "zns_pg_rd_lat=50000,zns_pg_wr_lat=561000,ch_mts=450,nand_partial_xfer=on,"
                 "pcie_gen=3,pcie_lanes=4,fw_cores=4,fw_cmd_ns=13000",
        .published = { 0 },
    },
    {
        .name = "ll-slc",
        .kind = "blackbox",
        .what = "low-latency SLC NVMe SSD, PCIe 3.0 x4 (Samsung SZ985 Z-SSD class)",
        .source = "Tom's Hardware, 'Samsung Releases SZ985 Z-SSD' (2018): Samsung's figures "
                  "and 'up to 10X the cell read performance' of TLC",
        .props = "flash_type=1,nchs=8,luns_per_ch=4,pls_per_lun=2,pgs_per_blk=256,"
                 "pg_rd_lat=5000,pg_wr_lat=36000,blk_er_lat=1500000,ch_mts=800,"
                 "pcie_gen=3,pcie_lanes=4,fw_cores=4,fw_cmd_ns=5333,op_pcent=37,"
                 "wb_size_mb=1,wb_plp=on,vwc=0",
        .published = { .qd1_read_us = 16, .rand_read_kiops = 750, .rand_write_kiops = 170,
                       .seq_read_mbps = 3200, .seq_write_mbps = 3200 },
    },
    { 0 },
};

const FemuPreset *femu_preset_find(const char *name)
{
    for (const FemuPreset *p = femu_presets; name && p->name; p++) {
        if (!strcmp(p->name, name)) {
            return p;
        }
    }
    return NULL;
}

const char *femu_preset_names(void)
{
    static char names[256];

    if (!names[0]) {
        for (const FemuPreset *p = femu_presets; p->name; p++) {
            if (names[0]) {
                strncat(names, ", ", sizeof(names) - strlen(names) - 1);
            }
            strncat(names, p->name, sizeof(names) - strlen(names) - 1);
        }
    }
    return names;
}
