/*
 * femu-sim's device (sim/devprops.c, sim/simdev.c, sim/simkind-*.c): drives described by
 * -device femu properties, commands submitted in virtual time, the statuses, statistics
 * and errors of each kind as the QEMU device gives them.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <stdio.h>
#include <string.h>

#include <glib.h>

#include "devprops.h"
#include "simdev.h"

#define KIB 1024ULL
#define MIB (1024ULL * 1024)
#define US 1000ULL

typedef struct Dev {
    SimParams *p;
    SimDevice *d;
    uint64_t now;               /* the next command's arrival */
} Dev;

static bool dev_try(Dev *v, const char *props, char **err)
{
    v->p = sim_params_new();
    v->now = 0;
    v->d = NULL;
    if (!sim_params_parse(v->p, props, err) || !sim_params_finish(v->p, err)) {
        return false;
    }
    v->d = sim_device_new(v->p, err);
    return v->d != NULL;
}

static void dev_open(Dev *v, const char *props)
{
    g_autofree char *err = NULL;

    if (!dev_try(v, props, &err)) {
        g_error("%s: %s", props, err);
    }
}

static void dev_close(Dev *v)
{
    sim_device_free(v->d);
    sim_params_free(v->p);
}

/* The error a description gives; it must give one. */
static char *dev_error(const char *props)
{
    Dev v;
    char *err = NULL;

    if (dev_try(&v, props, &err)) {
        g_error("%s: no error", props);
    }
    sim_device_free(v.d);
    sim_params_free(v.p);
    g_assert_nonnull(err);
    return err;
}

static void assert_error(const char *props, const char *part)
{
    g_autofree char *err = dev_error(props);

    if (!strstr(err, part)) {
        g_error("%s: '%s' does not say '%s'", props, err, part);
    }
}

/* One command at v->now, completed at once; v->now moves past it. */
static uint16_t cmd_plid(Dev *v, uint32_t nsid, SimOp op, uint64_t off, uint64_t len,
                         uint32_t plid, uint64_t *done_out)
{
    SimIo io = { .op = op, .offset = off, .len = len, .plid = plid };
    uint64_t done = 0;
    uint16_t st = sim_device_submit(v->d, sim_device_ns(v->d, nsid), &io, v->now, &done);

    g_assert_cmpuint(done, >=, v->now);
    sim_device_complete(v->d, done);
    if (done_out) {
        *done_out = done;
    }
    v->now = done + 1;
    return st;
}

static uint16_t cmd(Dev *v, uint32_t nsid, SimOp op, uint64_t off, uint64_t len,
                    uint64_t *done)
{
    return cmd_plid(v, nsid, op, off, len, SIM_NO_PLID, done);
}

typedef struct StatFind {
    const char *name;
    uint64_t value;
    uint32_t found;
} StatFind;

static void stat_find(void *opaque, const char *name, uint64_t value)
{
    StatFind *f = opaque;

    if (!strcmp(f->name, name)) {
        f->value = value;
        f->found++;
    }
}

/* A statistic, which the device must report exactly once. */
static uint64_t stat(Dev *v, const char *name)
{
    StatFind f = { .name = name };

    sim_device_stats(v->d, stat_find, &f);
    if (f.found != 1) {
        g_error("statistic %s reported %u times", name, f.found);
    }
    return f.value;
}

static bool has_stat(Dev *v, const char *name)
{
    StatFind f = { .name = name };

    sim_device_stats(v->d, stat_find, &f);
    return f.found > 0;
}

static SimTarget target(Dev *v, uint32_t nsid)
{
    SimTarget t;

    sim_device_target(v->d, sim_device_ns(v->d, nsid), &t);
    return t;
}

/* ---- nossd, blackbox ---- */

static void test_nossd(void)
{
    Dev v;
    uint64_t done;
    SimTarget t;

    dev_open(&v, "femu,femu_mode=2,devsz_mb=16,serial=x,queues=4");
    t = target(&v, 1);
    g_assert_cmpuint(t.ns_bytes, ==, 16 * MIB);
    g_assert_cmpuint(t.lba_bytes, ==, 512);
    g_assert_cmpuint(t.zone_bytes, ==, 0);
    g_assert_cmpuint(t.nr_plids, ==, 0);
    v.now = 1000;
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_WRITE, 0, 4 * KIB, &done), ==, 0);
    g_assert_cmpuint(done, ==, 1000);       /* no model, no link */
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_READ, 100, 4 * KIB, NULL), ==, SIM_SC_LBA_RANGE);
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_READ, 16 * MIB - 512, 4 * KIB, NULL), ==,
                     SIM_SC_LBA_RANGE);
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_WRITE, 0, 1 * MIB, NULL), ==, SIM_SC_INVALID_FIELD);
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_ZONE_RESET, 0, 0, NULL), ==, SIM_SC_INVALID_OPCODE);
    g_assert_cmpuint(stat(&v, "host_write_commands"), ==, 1);
    g_assert_cmpuint(stat(&v, "host_bytes_written"), ==, 4 * KIB);
    g_assert_cmpuint(stat(&v, "completions"), ==, 5);
    dev_close(&v);
}

static void test_blackbox(void)
{
    Dev v;
    uint64_t done, w, read_at;

    dev_open(&v, "femu_mode=1,devsz_mb=64,nchs=2,luns_per_ch=2");
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_WRITE, 0, 64 * KIB, &w), ==, 0);
    g_assert_cmpuint(w, >, 0);
    g_assert_cmpuint(stat(&v, "model_latency_ns"), ==, w);     /* arrived at 0 */
    read_at = v.now;
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_READ, 0, 4 * KIB, &done), ==, 0);
    g_assert_cmpuint(done, >, w);
    g_assert_cmpuint(stat(&v, "model_latency_ns"), ==, w + done - read_at);
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_TRIM, 0, 64 * KIB, NULL), ==, 0);
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_ZONE_FINISH, 0, 0, NULL), ==, SIM_SC_INVALID_OPCODE);
    g_assert_cmpuint(stat(&v, "host_pages_written"), ==, 16);
    g_assert_cmpuint(stat(&v, "pages_trimmed"), ==, 16);
    g_assert_true(has_stat(&v, "chip0_busy_ns"));
    dev_close(&v);
}

/* Write Zeroes and Compare, by the device's NVM rules (media/nvm-rules.c). */
static void test_nvm_write_zeroes_compare(void)
{
    Dev v;

    dev_open(&v, "femu_mode=1,devsz_mb=64,nchs=2,luns_per_ch=2");
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_WRITE, 0, 64 * KIB, NULL), ==, 0);
    /* whole pages dropped from the mapping; no host data moved; no MDTS limit */
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_WRITE_ZEROES, 0, 32 * KIB, NULL), ==, 0);
    g_assert_cmpuint(stat(&v, "pages_trimmed"), ==, 8);
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_WRITE_ZEROES, 1 * MIB, 1 * MIB, NULL), ==, 0);
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_WRITE_ZEROES, 64 * MIB - 512, 4 * KIB, NULL), ==,
                     SIM_SC_LBA_RANGE);
    g_assert_cmpuint(stat(&v, "host_write_commands"), ==, 1);
    g_assert_cmpuint(stat(&v, "host_bytes_written"), ==, 64 * KIB);
    /* a Compare reads: a host read and a media read, under MDTS */
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_COMPARE, 32 * KIB, 4 * KIB, NULL), ==, 0);
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_COMPARE, 0, 1 * MIB, NULL), ==, SIM_SC_INVALID_FIELD);
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_COMPARE, 64 * MIB, 4 * KIB, NULL), ==,
                     SIM_SC_LBA_RANGE);
    g_assert_cmpuint(stat(&v, "host_read_commands"), ==, 1);
    g_assert_cmpuint(stat(&v, "host_bytes_read"), ==, 4 * KIB);
    g_assert_cmpuint(stat(&v, "media_reads"), ==, 1);
    dev_close(&v);

    /* not modelled for zones yet */
    dev_open(&v, "femu_mode=3,devsz_mb=64,zns_zone_size_mb=4,zns_num_ch=2,zns_num_lun=2");
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_WRITE_ZEROES, 0, 4 * KIB, NULL), ==,
                     SIM_SC_INVALID_OPCODE);
    dev_close(&v);
}

/* ---- zns ---- */

#define ZNS_SMALL "femu_mode=3,devsz_mb=64,zns_zone_size_mb=4,zns_num_ch=2,zns_num_lun=2"
#define ZONE (4 * MIB)

static uint64_t zone_written(Dev *v, uint32_t nsid, uint64_t zone)
{
    SimTarget t = target(v, nsid);
    return t.zone_written(t.opaque, zone);
}

static void test_zns_target_and_writes(void)
{
    Dev v;
    uint64_t done;
    SimTarget t;

    dev_open(&v, ZNS_SMALL ",zns_zone_cap=1M,zns_max_open=2,zns_max_active=3");
    t = target(&v, 1);
    g_assert_cmpuint(t.ns_bytes, ==, 64 * MIB);
    g_assert_cmpuint(t.zone_bytes, ==, ZONE);
    g_assert_cmpuint(t.zone_cap_bytes, ==, 1 * MIB);
    g_assert_cmpuint(t.max_open_zones, ==, 2);
    g_assert_nonnull(t.zone_written);

    /* only at the write pointer */
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_WRITE, 0, 64 * KIB, &done), ==, 0);
    g_assert_cmpuint(done, >, 0);
    g_assert_cmpuint(zone_written(&v, 1, 0), ==, 64 * KIB);
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_WRITE, 0, 64 * KIB, NULL), ==,
                     SIM_SC_ZONE_INVALID_WRITE);
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_WRITE, 128 * KIB, 64 * KIB, NULL), ==,
                     SIM_SC_ZONE_INVALID_WRITE);
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_WRITE, 64 * KIB, 1 * MIB, NULL), ==,
                     SIM_SC_INVALID_FIELD);        /* beyond mdts */
    /* past the zone capacity, then up to it: Full */
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_WRITE, 64 * KIB, 512 * KIB, NULL), ==, 0);
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_WRITE, 576 * KIB, 512 * KIB, NULL), ==,
                     SIM_SC_ZONE_BOUNDARY);
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_WRITE, 576 * KIB, 448 * KIB, NULL), ==, 0);
    g_assert_cmpuint(zone_written(&v, 1, 0), ==, 1 * MIB);
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_WRITE, 1 * MIB, 4 * KIB, NULL), ==,
                     SIM_SC_ZONE_FULL);
    g_assert_cmpuint(stat(&v, "zones_open"), ==, 0);
    g_assert_cmpuint(stat(&v, "zones_active"), ==, 0);
    g_assert_cmpuint(stat(&v, "host_write_commands"), ==, 3);
    g_assert_cmpuint(stat(&v, "host_bytes_written"), ==, 1 * MIB);
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_WRITE, 64 * MIB - 4 * KIB, 8 * KIB, NULL), ==,
                     SIM_SC_LBA_RANGE);
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_WRITE, 2 * ZONE + 1, 4 * KIB, NULL), ==,
                     SIM_SC_LBA_RANGE);
    dev_close(&v);
}

static void test_zns_open_limits(void)
{
    Dev v;

    /* write buffers for more zones than may be open: only a close drains one */
    dev_open(&v, ZNS_SMALL ",zns_max_open=2,zns_max_active=3,zns_wbuf_zones=8");
    for (uint64_t z = 0; z < 3; z++) {
        g_assert_cmpuint(stat(&v, "buffer_flushes"), ==, 0);
        g_assert_cmpuint(cmd(&v, 1, SIM_OP_WRITE, z * ZONE, 4 * KIB, NULL), ==, 0);
    }
    /* the third implicit open closed the zone opened first, which drained its buffer */
    g_assert_cmpuint(stat(&v, "buffer_flushes"), ==, 1);
    g_assert_cmpuint(stat(&v, "zones_open"), ==, 2);
    g_assert_cmpuint(stat(&v, "zones_active"), ==, 3);
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_WRITE, 3 * ZONE, 4 * KIB, NULL), ==,
                     SIM_SC_ZONE_TOO_MANY_ACTIVE);
    /* the closed zone opens again in place of the oldest open one */
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_WRITE, 4 * KIB, 4 * KIB, NULL), ==, 0);
    g_assert_cmpuint(stat(&v, "zones_open"), ==, 2);
    /* finishing a zone frees its resources */
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_ZONE_FINISH, ZONE, 0, NULL), ==, 0);
    g_assert_cmpuint(zone_written(&v, 1, 1), ==, ZONE);
    g_assert_cmpuint(stat(&v, "zones_active"), ==, 2);
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_WRITE, 3 * ZONE, 4 * KIB, NULL), ==, 0);
    dev_close(&v);

    /* open and active limits alike: an Empty zone finds no active resource (2.1.1.4.1 b) */
    dev_open(&v, ZNS_SMALL ",zns_max_open=2,zns_max_active=2");
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_WRITE, 0, 4 * KIB, NULL), ==, 0);
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_WRITE, ZONE, 4 * KIB, NULL), ==, 0);
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_WRITE, 2 * ZONE, 4 * KIB, NULL), ==,
                     SIM_SC_ZONE_TOO_MANY_ACTIVE);
    dev_close(&v);
}

static void test_zns_reset_finish_read(void)
{
    Dev v;
    uint64_t done, at, erased;

    dev_open(&v, ZNS_SMALL);
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_WRITE, 0, 256 * KIB, NULL), ==, 0);
    /* reads: anywhere in a zone, across zones only with zns_cross_zone_read */
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_READ, 0, 64 * KIB, NULL), ==, 0);
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_READ, ZONE - 4 * KIB, 8 * KIB, NULL), ==,
                     SIM_SC_ZONE_BOUNDARY);
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_TRIM, 0, ZONE, &done), ==, 0);
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_FLUSH, 0, 0, NULL), ==, 0);

    /* a finish drains the zone's buffer, a reset erases its blocks */
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_WRITE, ZONE, 12 * KIB, NULL), ==, 0);
    at = v.now;
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_ZONE_FINISH, ZONE, 0, &done), ==, 0);
    g_assert_cmpuint(done, >, at);
    g_assert_cmpuint(stat(&v, "pad_pages_programmed"), >, 0);
    g_assert_cmpuint(zone_written(&v, 1, 1), ==, ZONE);
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_ZONE_FINISH, ZONE, 0, NULL), ==, 0);
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_WRITE, ZONE + ZONE / 2, 4 * KIB, NULL), ==,
                     SIM_SC_ZONE_FULL);
    erased = stat(&v, "blocks_erased");
    at = v.now;
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_ZONE_RESET, ZONE, ZONE, &done), ==, 0);
    g_assert_cmpuint(done, >, at);
    g_assert_cmpuint(stat(&v, "blocks_erased"), >, erased);
    g_assert_cmpuint(zone_written(&v, 1, 1), ==, 0);
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_WRITE, ZONE, 4 * KIB, NULL), ==, 0);
    /* a reset of an Empty zone changes nothing; not at a zone start, it is refused */
    erased = stat(&v, "blocks_erased");
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_ZONE_RESET, 5 * ZONE, ZONE, &done), ==, 0);
    g_assert_cmpuint(stat(&v, "blocks_erased"), ==, erased);
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_ZONE_RESET, ZONE + 4 * KIB, ZONE, NULL), ==,
                     SIM_SC_INVALID_FIELD);
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_ZONE_RESET, 64 * MIB, ZONE, NULL), ==,
                     SIM_SC_INVALID_FIELD);
    g_assert_true(has_stat(&v, "pages_programmed"));
    g_assert_true(has_stat(&v, "buffer_flushes"));
    g_assert_true(has_stat(&v, "chip3_busy_ns"));
    dev_close(&v);

    dev_open(&v, ZNS_SMALL ",zns_cross_zone_read=on");
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_READ, ZONE - 4 * KIB, 8 * KIB, NULL), ==, 0);
    dev_close(&v);
}

/* Read-ahead reads no further than the write pointer (the device's readable callback). */
static void test_zns_read_ahead(void)
{
    Dev v;

    dev_open(&v, ZNS_SMALL ",sra=on");
    for (uint64_t off = 0; off < 256 * KIB; off += 64 * KIB) {
        g_assert_cmpuint(cmd(&v, 1, SIM_OP_WRITE, off, 64 * KIB, NULL), ==, 0);
    }
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_FLUSH, 0, 0, NULL), ==, 0);
    for (uint64_t off = 0; off < 256 * KIB; off += 16 * KIB) {
        g_assert_cmpuint(cmd(&v, 1, SIM_OP_READ, off, 16 * KIB, NULL), ==, 0);
    }
    g_assert_cmpuint(stat(&v, "prefetch_pages_read"), >, 0);
    /* 256 KiB written: never a page beyond them, read or prefetched */
    g_assert_cmpuint(stat(&v, "pages_read"), <=, 256 * KIB / (4 * KIB));
    dev_close(&v);
}

#define ZNS_PLP ZNS_SMALL ",plp=selective,plp_zones=1,plp_buf_mb=1,buf_mb=1"

static void test_zns_plp(void)
{
    Dev v;
    uint64_t done;

    dev_open(&v, ZNS_PLP);
    g_assert_cmpuint(stat(&v, "plp_region_bytes"), ==, 1 * MIB);
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_WRITE, 0, 16 * KIB, NULL), ==, 0);
    g_assert_cmpuint(stat(&v, "plp_unprotected_bytes_written"), ==, 16 * KIB);
    g_assert_cmpuint(stat(&v, "plp_protected_bytes_written"), ==, 0);
    /* zone 1 is durable: its writes are protected */
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_WRITE, ZONE, 8 * KIB, NULL), ==, 0);
    g_assert_cmpuint(stat(&v, "plp_protected_bytes_written"), ==, 8 * KIB);
    g_assert_cmpuint(stat(&v, "plp_region_used_bytes"), ==, 8 * KIB);
    /* reads of buffered data hit the buffer */
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_READ, 0, 16 * KIB, NULL), ==, 0);
    g_assert_cmpuint(stat(&v, "plp_read_hit_sectors"), ==, 32);
    /* a flush writes the non-PLP region out, and leaves the PLP one */
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_FLUSH, 0, 0, NULL), ==, 0);
    g_assert_cmpuint(stat(&v, "plp_flushed_sectors_host"), ==, 32);
    g_assert_cmpuint(stat(&v, "plp_region_used_bytes"), ==, 8 * KIB);
    /* a reset drops the zone's buffered data */
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_ZONE_RESET, ZONE, ZONE, NULL), ==, 0);
    g_assert_cmpuint(stat(&v, "plp_reset_discarded_sectors"), ==, 16);
    g_assert_cmpuint(stat(&v, "plp_region_used_bytes"), ==, 0);
    /* a finish drains the zone */
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_WRITE, 2 * ZONE, 4 * KIB, NULL), ==, 0);
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_ZONE_FINISH, 2 * ZONE, 0, &done), ==, 0);
    g_assert_cmpuint(stat(&v, "plp_flushes_drain"), ==, 1);
    g_assert_cmpuint(zone_written(&v, 1, 2), ==, ZONE);
    dev_close(&v);

    dev_open(&v, ZNS_SMALL ",plp=full,plp_buf_mb=1,buf_mb=1");
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_WRITE, 0, 16 * KIB, NULL), ==, 0);
    g_assert_cmpuint(stat(&v, "plp_protected_bytes_written"), ==, 16 * KIB);
    dev_close(&v);

    assert_error(ZNS_SMALL ",plp=sometimes", "plp='sometimes': 'sometimes' is not a mode");
    assert_error(ZNS_SMALL ",plp=full,vwc=0", "plp= needs vwc=1");
    assert_error("femu_mode=1,devsz_mb=64,wb_size_mb=1,vwc=0",
                 "wb_size_mb=1 with wb_plp=off needs vwc=1");
    assert_error("femu_mode=4,devsz_mb=64,wb_size_mb=-2", "wb_size_mb=-2 is out of range");
    assert_error(ZNS_SMALL ",plp_zones=1", "plp_zones='1' needs plp=selective");
    assert_error(ZNS_SMALL ",plp=selective,plp_zones=99", "namespace 1: plp_zones='99'");
    assert_error("devsz_mb=64,ns_types=zns:blackbox,zns_zone_size_mb=4,plp=full",
                 "plp= needs every namespace zoned");
}

/*
 * A write with Force Unit Access completes once its zone's buffered data is on flash (the
 * buffer writes the zone out); without, it completes from the volatile buffer. In the
 * PLP region FUA changes nothing.
 */
static void test_zns_fua(void)
{
    Dev v;
    SimIo io = { .op = SIM_OP_WRITE, .offset = 16 * KIB, .len = 4 * KIB, .plid = SIM_NO_PLID };
    uint64_t plain, fua;

    dev_open(&v, ZNS_SMALL ",plp=none,buf_mb=1");
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_WRITE, 0, 16 * KIB, &plain), ==, 0);
    plain -= v.now - 1;
    g_assert_cmpuint(stat(&v, "plp_flushed_sectors_fua"), ==, 0);
    io.fua = true;
    g_assert_cmpuint(sim_device_submit(v.d, sim_device_ns(v.d, 1), &io, v.now, &fua), ==, 0);
    sim_device_complete(v.d, fua);
    fua -= v.now;
    v.now += fua + 1;
    /* the zone's 16 KiB before it and its own 4 KiB, written through */
    g_assert_cmpuint(stat(&v, "plp_flushed_sectors_fua"), ==, 40);
    g_assert_cmpuint(fua, >, plain);
    dev_close(&v);

    dev_open(&v, ZNS_SMALL ",plp=full,plp_buf_mb=1,buf_mb=0");
    g_assert_cmpuint(sim_device_submit(v.d, sim_device_ns(v.d, 1), &(SimIo){
        .op = SIM_OP_WRITE, .len = 4 * KIB, .plid = SIM_NO_PLID, .fua = true }, 0, &fua), ==, 0);
    sim_device_complete(v.d, fua);
    g_assert_cmpuint(stat(&v, "plp_flushed_sectors_fua"), ==, 0);
    g_assert_cmpuint(stat(&v, "plp_region_used_bytes"), ==, 4 * KIB);
    dev_close(&v);
}

/* A power cut flushes the PLP region (the plp_loss_* statistics) and recovers it. */
static void test_zns_power_cut(void)
{
    Dev v;

    dev_open(&v, ZNS_PLP);
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_WRITE, 0, 16 * KIB, NULL), ==, 0);
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_WRITE, ZONE, 8 * KIB, NULL), ==, 0);
    g_assert_cmpuint(stat(&v, "plp_power_losses"), ==, 0);
    g_assert_cmpuint(stat(&v, "plp_loss_normal_flush_ns"), ==, 0);
    sim_device_power_cut(v.d, v.now);
    g_assert_cmpuint(stat(&v, "plp_power_losses"), ==, 1);
    g_assert_cmpuint(stat(&v, "plp_loss_pages"), >, 0);
    g_assert_cmpuint(stat(&v, "plp_loss_normal_flush_ns"), >, 0);
    g_assert_cmpuint(stat(&v, "plp_loss_balanced_flush_ns"), >, 0);
    g_assert_cmpuint(stat(&v, "plp_loss_normal_energy_uj"), >, 0);
    /* the volatile region's 16 KiB are lost, the protected 8 KiB recovered */
    g_assert_cmpuint(stat(&v, "plp_lost_sectors"), ==, 32);
    g_assert_cmpuint(stat(&v, "plp_spor_sectors"), ==, 16);
    g_assert_cmpuint(stat(&v, "plp_region_used_bytes"), ==, 0);
    g_assert_cmpuint(zone_written(&v, 1, 0), ==, 0);
    g_assert_cmpuint(zone_written(&v, 1, 1), ==, 8 * KIB);
    /* the drive works on: zone 1 goes on at its write pointer, zone 0 from its start */
    v.now += 10 * 1000 * US;
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_WRITE, ZONE + 8 * KIB, 4 * KIB, NULL), ==, 0);
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_WRITE, 0, 4 * KIB, NULL), ==, 0);
    dev_close(&v);
}

static void test_zns_errors(void)
{
    assert_error("femu_mode=3,zns_zone_size_mb=3", "zns_zone_size_mb=3 is invalid");
    assert_error("femu_mode=3,devsz_mb=10,zns_zone_size_mb=4",
                 "namespace 1 of 10 MiB is not a whole number of zones of zns_zone_size_mb=4");
    assert_error(ZNS_SMALL ",zns_zone_cap=5M", "zns_zone_cap=5242880 is invalid");
    assert_error(ZNS_SMALL ",zns_max_open=3,zns_max_active=2",
                 "zns_max_active=2 must be at least zns_max_open=3");
    assert_error(ZNS_SMALL ",zns_zasl=9", "zns_zasl=9 is out of range");
    assert_error(ZNS_SMALL ",zns_bogus=1", "'zns_bogus' is not a property");
    assert_error(ZNS_SMALL ",zns_max_open=x", "zns_max_open='x' is not valid");
}

/* ---- fdp ---- */

#define FDP_SMALL "femu_mode=4,devsz_mb=64,nchs=2,luns_per_ch=2,pgs_per_blk=16"

static void test_fdp_placement(void)
{
    Dev v;
    SimTarget t;

    dev_open(&v, FDP_SMALL ",fdp_nrg=2,fdp_ruh_types=ii:ii:pi");
    t = target(&v, 1);
    g_assert_cmpuint(t.nr_plids, ==, 6);     /* 2 groups x 3 handles */
    g_assert_cmpuint(t.zone_bytes, ==, 0);
    /* plid: group 0's handles, then group 1's */
    g_assert_cmpuint(cmd_plid(&v, 1, SIM_OP_WRITE, 0, 8 * KIB, 1, NULL), ==, 0);
    g_assert_cmpuint(stat(&v, "ruh1_host_pages_written"), ==, 2);
    g_assert_cmpuint(stat(&v, "ruh0_host_pages_written"), ==, 0);
    g_assert_cmpuint(cmd_plid(&v, 1, SIM_OP_WRITE, 8 * KIB, 12 * KIB, 5, NULL), ==, 0);
    g_assert_cmpuint(stat(&v, "ruh2_host_pages_written"), ==, 3);
    g_assert_cmpuint(stat(&v, "rg1_ruh2_avail_pages"), ==,
                     stat(&v, "rg0_ruh2_avail_pages") - 3);
    /* an invalid identifier: handle 0 in group 0 */
    g_assert_cmpuint(cmd_plid(&v, 1, SIM_OP_WRITE, 20 * KIB, 4 * KIB, 6, NULL), ==, 0);
    g_assert_cmpuint(stat(&v, "ruh0_host_pages_written"), ==, 1);
    g_assert_cmpuint(stat(&v, "rg0_ruh0_avail_pages"), ==,
                     stat(&v, "rg1_ruh0_avail_pages") - 1);
    /* no directive: handle 0, the groups in turn (group 0 first) */
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_WRITE, 24 * KIB, 4 * KIB, NULL), ==, 0);
    g_assert_cmpuint(stat(&v, "rg0_ruh0_avail_pages"), ==,
                     stat(&v, "rg1_ruh0_avail_pages") - 2);
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_WRITE, 28 * KIB, 4 * KIB, NULL), ==, 0);
    g_assert_cmpuint(stat(&v, "rg0_ruh0_avail_pages"), ==,
                     stat(&v, "rg1_ruh0_avail_pages") - 1);
    g_assert_cmpuint(stat(&v, "ruh0_host_pages_written"), ==, 3);
    /* a bad write places nothing */
    g_assert_cmpuint(cmd_plid(&v, 1, SIM_OP_WRITE, 64 * MIB, 4 * KIB, 0, NULL), ==,
                     SIM_SC_LBA_RANGE);
    g_assert_cmpuint(stat(&v, "host_pages_written"), ==, 8);
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_READ, 0, 32 * KIB, NULL), ==, 0);
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_TRIM, 0, 8 * KIB, NULL), ==, 0);
    g_assert_cmpuint(stat(&v, "pages_trimmed"), ==, 2);
    g_assert_true(has_stat(&v, "rg1_gc_runs"));
    g_assert_true(has_stat(&v, "ruh2_waf_milli"));
    g_assert_true(has_stat(&v, "fdp_ru_pages"));
    dev_close(&v);
}

/*
 * The open RUs are closed as the device's controller resets close them: when the power is
 * back after a cut, and at the start of a drive whose backing file has some open (a run
 * that was killed: a copy of the file taken while one was open). The close at the exit is
 * test_sim_aged.py's (the emulator boots the file).
 */
static void test_fdp_closes_at_power_on_and_start(void)
{
    g_autofree char *dir = g_dir_make_tmp("femu-sim-fdp-XXXXXX", NULL);
    g_autofree char *path = g_build_filename(dir, "drive.img", NULL);
    g_autofree char *killed = g_build_filename(dir, "killed.img", NULL);
    g_autofree char *copy = NULL;
    gsize len;
    g_autofree char *err = NULL;
    uint64_t bytes, ru, skipped;
    Dev v;

    dev_open(&v, FDP_SMALL ",fdp_nrg=2");
    g_assert_true(sim_device_attach_backing(v.d, path, &bytes, &err));
    ru = stat(&v, "fdp_ru_pages");
    g_assert_cmpuint(cmd_plid(&v, 1, SIM_OP_WRITE, 0, 12 * KIB, 1, NULL), ==, 0);
    g_assert_cmpuint(cmd_plid(&v, 1, SIM_OP_WRITE, 64 * KIB, 4 * KIB, 6, NULL), ==, 0);
    g_assert_cmpuint(stat(&v, "rg0_ruh1_avail_pages"), ==, ru - 3);
    g_assert_cmpuint(stat(&v, "rg1_ruh2_avail_pages"), ==, ru - 1);
    sim_device_power_cut(v.d, v.now);
    g_assert_cmpuint(stat(&v, "rg0_ruh1_avail_pages"), ==, ru);
    g_assert_cmpuint(stat(&v, "rg1_ruh2_avail_pages"), ==, ru);
    skipped = stat(&v, "fdp_pages_skipped");
    g_assert_cmpuint(skipped, ==, 2 * ru - 4);
    /* open when the run is killed (the file as it is now): closed when it starts again */
    g_assert_cmpuint(cmd_plid(&v, 1, SIM_OP_WRITE, 0, 8 * KIB, 3, NULL), ==, 0);
    g_assert_true(g_file_get_contents(path, &copy, &len, NULL));
    g_assert_true(g_file_set_contents(killed, copy, len, NULL));
    dev_close(&v);
    dev_open(&v, FDP_SMALL ",fdp_nrg=2");
    g_assert_true(sim_device_attach_backing(v.d, killed, &bytes, &err));
    g_assert_cmpuint(stat(&v, "rg0_ruh3_avail_pages"), ==, ru);
    g_assert_cmpuint(stat(&v, "fdp_pages_skipped"), ==, skipped + ru - 2);
    g_assert_cmpuint(stat(&v, "host_pages_written"), ==, 6);
    dev_close(&v);
    remove(killed);
    remove(path);
    remove(dir);
}

static void test_fdp_off_and_lists(void)
{
    Dev v;

    /* FDP disabled: the directive is ignored */
    dev_open(&v, FDP_SMALL ",fdp=off,fdp_nrg=2");
    g_assert_cmpuint(target(&v, 1).nr_plids, ==, 0);
    g_assert_cmpuint(cmd_plid(&v, 1, SIM_OP_WRITE, 0, 4 * KIB, 3, NULL), ==, 0);
    g_assert_cmpuint(stat(&v, "ruh0_host_pages_written"), ==, 1);
    g_assert_cmpuint(stat(&v, "ruh3_host_pages_written"), ==, 0);
    dev_close(&v);

    /* each namespace its own handles, one FTL for both */
    dev_open(&v, FDP_SMALL ",namespaces=2,fdp_ns_ruhs=0.1/2.3");
    g_assert_cmpuint(target(&v, 1).nr_plids, ==, 2);
    g_assert_cmpuint(target(&v, 2).nr_plids, ==, 2);
    g_assert_cmpuint(cmd_plid(&v, 2, SIM_OP_WRITE, 0, 4 * KIB, 1, NULL), ==, 0);
    g_assert_cmpuint(cmd_plid(&v, 2, SIM_OP_WRITE, 4 * KIB, 4 * KIB, SIM_NO_PLID, NULL), ==,
                     0);
    g_assert_cmpuint(cmd_plid(&v, 1, SIM_OP_WRITE, 0, 4 * KIB, 1, NULL), ==, 0);
    g_assert_cmpuint(stat(&v, "ruh3_host_pages_written"), ==, 1);
    g_assert_cmpuint(stat(&v, "ruh2_host_pages_written"), ==, 1);
    g_assert_cmpuint(stat(&v, "ruh1_host_pages_written"), ==, 1);
    g_assert_cmpuint(stat(&v, "ns2_host_write_commands"), ==, 2);
    dev_close(&v);

    assert_error(FDP_SMALL ",fdp_nrg=3", "fdp_nrg=3: reclaim groups must divide the 4 chips");
    assert_error(FDP_SMALL ",fdp_ruh_types=ii:xx", "fdp_ruh_types='ii:xx': 'xx' is not");
    assert_error(FDP_SMALL ",namespaces=2,fdp_ns_ruhs=0.1", "fdp_ns_ruhs='0.1' must give one");
    assert_error(FDP_SMALL ",fdp_ns_ruhs=7", "fdp_ns_ruhs='7': '7' is not a handle");
    assert_error(FDP_SMALL ",fdp_erutl_s=999999999", "fdp_erutl_s=999999999 is out of range");
}

/* ---- whitebox ---- */

/* 2 groups x 8 PUs x 2 chunks of 2 MiB (4096 sectors, ws_min 8) */
#define OC_SMALL "femu_mode=0,devsz_mb=64"
#define CHUNK (2 * MIB)

static void test_whitebox_chunks(void)
{
    Dev v;
    uint64_t done, at;
    SimTarget t;

    dev_open(&v, OC_SMALL);
    t = target(&v, 1);
    g_assert_cmpuint(t.ns_bytes, ==, 64 * MIB);
    g_assert_cmpuint(t.zone_bytes, ==, CHUNK);
    g_assert_cmpuint(t.zone_cap_bytes, ==, CHUNK);
    g_assert_cmpuint(t.max_open_zones, ==, 0);
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_WRITE, 0, 16 * KIB, &done), ==, 0);
    g_assert_cmpuint(done, >, 0);
    g_assert_cmpuint(t.zone_written(t.opaque, 0), ==, 16 * KIB);
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_WRITE, 0, 4 * KIB, NULL), ==,
                     SIM_SC_OC_OUT_OF_ORDER_WRITE);
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_WRITE, 16 * KIB, 512, NULL), ==,
                     SIM_SC_INVALID_FIELD);         /* not a multiple of ws_min */
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_READ, 0, 64 * KIB, NULL), ==, 0);
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_ZONE_FINISH, 0, 0, NULL), ==, SIM_SC_INVALID_OPCODE);
    g_assert_cmpuint(stat(&v, "chunks_open"), ==, 1);
    /* a chunk written whole is closed; a standard write may run on into the next chunk */
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_WRITE, CHUNK, 512 * KIB, NULL), ==, 0);
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_WRITE, CHUNK + 512 * KIB, 512 * KIB, NULL), ==, 0);
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_WRITE, CHUNK + 1 * MIB, 512 * KIB, NULL), ==, 0);
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_WRITE, CHUNK + 1536 * KIB, 512 * KIB, NULL), ==, 0);
    g_assert_cmpuint(stat(&v, "chunks_closed"), ==, 1);
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_WRITE, CHUNK + 4 * KIB, 4 * KIB, NULL), ==,
                     SIM_SC_OC_OUT_OF_ORDER_WRITE);
    /* a reset erases the chunk */
    at = v.now;
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_ZONE_RESET, CHUNK, CHUNK, &done), ==, 0);
    g_assert_cmpuint(done, >, at);
    g_assert_cmpuint(stat(&v, "chunk_erases"), ==, 1);
    g_assert_cmpuint(stat(&v, "blocks_erased"), ==, 2);    /* the block on each plane */
    g_assert_cmpuint(t.zone_written(t.opaque, 1), ==, 0);
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_WRITE, CHUNK, 4 * KIB, NULL), ==, 0);
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_TRIM, 0, 4 * KIB, &done), ==, 0);
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_FLUSH, 0, 0, NULL), ==, 0);
    g_assert_cmpuint(stat(&v, "chunks_free"), ==, 30);
    g_assert_cmpuint(stat(&v, "vector_cmds"), ==, 0);
    g_assert_true(has_stat(&v, "units_programmed"));
    dev_close(&v);

    /* the open chunk limit */
    dev_open(&v, OC_SMALL ",oc_maxoc=1");
    g_assert_cmpuint(target(&v, 1).max_open_zones, ==, 1);
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_WRITE, 0, 4 * KIB, NULL), ==, 0);
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_WRITE, CHUNK, 4 * KIB, NULL), ==,
                     SIM_SC_CMD_SEQ_ERROR);
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_ZONE_RESET, 0, CHUNK, NULL), ==, 0);
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_WRITE, CHUNK, 4 * KIB, NULL), ==, 0);
    dev_close(&v);

    /* without MULTI_RESET a Free chunk is not reset again */
    dev_open(&v, OC_SMALL ",oc_mccap=1");
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_ZONE_RESET, 0, CHUNK, NULL), ==,
                     SIM_SC_OC_INVALID_RESET);
    dev_close(&v);
}

static void test_whitebox_sector_size(void)
{
    Dev v;

    /* lsec_size sets the LBA size when lba_index is not given */
    dev_open(&v, OC_SMALL ",lsec_size=4096,lpgs_per_blk=64");
    g_assert_cmpuint(sim_device_params(v.d)->lba_index, ==, 1);
    g_assert_cmpuint(target(&v, 1).lba_bytes, ==, 4096);
    g_assert_cmpuint(target(&v, 1).zone_bytes, ==, 2 * MIB);    /* 512 sectors */
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_WRITE, 0, 16 * KIB, NULL), ==, SIM_SC_INVALID_FIELD);
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_WRITE, 0, 32 * KIB, NULL), ==, 0);
    dev_close(&v);
    dev_open(&v, OC_SMALL ",lsec_size=4096,lba_index=1,lpgs_per_blk=64");
    dev_close(&v);
    /* the rule is the whitebox kind's: others keep the default */
    dev_open(&v, ZNS_SMALL ",lsec_size=4096");
    g_assert_cmpuint(target(&v, 1).lba_bytes, ==, 512);
    dev_close(&v);

    assert_error(OC_SMALL ",lsec_size=4096,lba_index=0",
                 "lsec_size=4096 and lba_index=0 disagree");
    assert_error(OC_SMALL ",lsec_size=1024", "lsec_size=1024 is invalid");
    assert_error(OC_SMALL ",lver=1", "lver=1 is not supported");
    assert_error(OC_SMALL ",lmetasize=12", "lmetasize=12 is invalid");
    assert_error("femu_mode=0,devsz_mb=48", "whitebox namespace 1 of 48 MiB is not 2 groups");
    assert_error("devsz_mb=64,namespaces=2,ns_types=ocssd:ocssd",
                 "one whitebox (ocssd) namespace per device");
    assert_error("femu_mode=9", "femu_mode=9 is not available in femu-sim: allowed 0 (ocssd), "
                 "1 (blackbox), 2 (nossd), 3 (zns), 4 (fdp)");
}

/* ---- several kinds on one flash ---- */

#define MIXED "devsz_mb=256,ns_types=blackbox:zns:fdp:ocssd,ns_sizes_mb=64:64:64:64," \
              "zns_zone_size_mb=4,nchs=2,luns_per_ch=2"

static void test_mixed(void)
{
    Dev v;
    SimTarget t;

    dev_open(&v, MIXED);
    g_assert_cmpuint(sim_device_nr_ns(v.d), ==, 4);
    g_assert_cmpuint(target(&v, 2).zone_bytes, ==, ZONE);
    g_assert_cmpuint(target(&v, 3).nr_plids, ==, 4);
    t = target(&v, 4);
    g_assert_cmpuint(t.zone_bytes, ==, 256 * KIB);  /* the shared flash's chunks */
    for (uint32_t nsid = 1; nsid <= 4; nsid++) {
        g_assert_cmpuint(cmd(&v, nsid, SIM_OP_WRITE, 0, 32 * KIB, NULL), ==, 0);
        g_assert_cmpuint(cmd(&v, nsid, SIM_OP_READ, 0, 32 * KIB, NULL), ==, 0);
    }
    g_assert_cmpuint(cmd(&v, 2, SIM_OP_WRITE, 0, 4 * KIB, NULL), ==,
                     SIM_SC_ZONE_INVALID_WRITE);
    g_assert_cmpuint(cmd(&v, 4, SIM_OP_WRITE, 0, 4 * KIB, NULL), ==,
                     SIM_SC_OC_OUT_OF_ORDER_WRITE);
    g_assert_cmpuint(cmd(&v, 1, SIM_OP_ZONE_RESET, 0, 0, NULL), ==, SIM_SC_INVALID_OPCODE);
    g_assert_cmpuint(cmd(&v, 2, SIM_OP_ZONE_RESET, 0, ZONE, NULL), ==, 0);
    g_assert_cmpuint(cmd(&v, 4, SIM_OP_ZONE_RESET, 0, 256 * KIB, NULL), ==, 0);
    /* the models' statistics by namespace, and each namespace's own */
    g_assert_cmpuint(stat(&v, "ns1_host_pages_written"), ==, 8);
    g_assert_cmpuint(stat(&v, "ns3_ruh0_host_pages_written"), ==, 8);
    g_assert_cmpuint(stat(&v, "ns2_zones_open"), ==, 0);
    g_assert_cmpuint(stat(&v, "ns4_chunk_erases"), ==, 1);
    g_assert_cmpuint(stat(&v, "ns4_host_write_commands"), ==, 1);
    g_assert_cmpuint(stat(&v, "host_write_commands"), ==, 4);
    /* one flash: the chips' busy time is reported by each model sharing it */
    g_assert_cmpuint(stat(&v, "ns1_chip0_busy_ns"), ==, stat(&v, "ns2_chip0_busy_ns"));
    dev_close(&v);

    assert_error("devsz_mb=128,ns_types=zns:blackbox,ns_sizes_mb=62:66,zns_zone_size_mb=4",
                 "namespace 1 of 62 MiB is not a whole number of zones");
    assert_error("ns_types=zns:floppy", "'floppy' is not a namespace mode: allowed ocssd, "
                 "blackbox, nossd, zns, fdp");
}

/* ---- determinism ---- */

typedef struct Step {
    uint32_t nsid;
    SimOp op;
    uint64_t off, len;
    uint32_t plid;
    uint64_t gap;               /* ns after the previous command's arrival */
} Step;

/* Commands with overlapping lifetimes: each arrives before the previous completes. */
static void run_steps(const char *props, const Step *steps, size_t n, uint64_t *done)
{
    Dev v;
    uint64_t now = 0;

    dev_open(&v, props);
    for (size_t i = 0; i < n; i++) {
        SimIo io = { .op = steps[i].op, .offset = steps[i].off, .len = steps[i].len,
                     .plid = steps[i].plid };
        now += steps[i].gap;
        g_assert_cmpuint(sim_device_submit(v.d, sim_device_ns(v.d, steps[i].nsid), &io, now,
                                           &done[i]), ==, 0);
    }
    for (size_t i = 0; i < n; i++) {
        sim_device_complete(v.d, done[i]);
    }
    dev_close(&v);
}

static void assert_deterministic(const char *props, const Step *steps, size_t n)
{
    g_autofree uint64_t *a = g_new0(uint64_t, n), *b = g_new0(uint64_t, n);
    bool waited = false;

    run_steps(props, steps, n, a);
    run_steps(props, steps, n, b);
    for (size_t i = 0; i < n; i++) {
        g_assert_cmpuint(a[i], ==, b[i]);
        waited |= a[i] > 0 && i && a[i] > a[i - 1];
    }
    g_assert_true(waited);      /* the model took time: the comparison means something */
}

static void test_deterministic(void)
{
    Step zns[64], fdp[64], oc[64], bb[64];
    size_t n = 0;

    for (uint64_t i = 0; i < 16; i++, n++) {
        zns[n] = (Step){ 1, SIM_OP_WRITE, (i % 4) * ZONE + i / 4 * 64 * KIB, 64 * KIB,
                         SIM_NO_PLID, 5 * US };
        fdp[n] = (Step){ 1, SIM_OP_WRITE, i * 64 * KIB, 64 * KIB, (uint32_t)(i % 4), 5 * US };
        oc[n] = (Step){ 1, SIM_OP_WRITE, (i % 4) * CHUNK + i / 4 * 64 * KIB, 64 * KIB,
                        SIM_NO_PLID, 5 * US };
        bb[n] = (Step){ 1, SIM_OP_WRITE, i * 64 * KIB, 64 * KIB, SIM_NO_PLID, 5 * US };
    }
    for (uint64_t i = 0; i < 16; i++, n++) {
        zns[n] = (Step){ 1, SIM_OP_READ, (i % 4) * ZONE, 16 * KIB, SIM_NO_PLID, 2 * US };
        fdp[n] = (Step){ 1, SIM_OP_READ, i * 16 * KIB, 16 * KIB, SIM_NO_PLID, 2 * US };
        oc[n] = (Step){ 1, SIM_OP_READ, (i % 4) * CHUNK, 16 * KIB, SIM_NO_PLID, 2 * US };
        bb[n] = (Step){ 1, SIM_OP_READ, i * 16 * KIB, 16 * KIB, SIM_NO_PLID, 2 * US };
    }
    zns[n] = (Step){ 1, SIM_OP_ZONE_RESET, ZONE, ZONE, SIM_NO_PLID, 1 * US };
    oc[n] = (Step){ 1, SIM_OP_ZONE_RESET, CHUNK, CHUNK, SIM_NO_PLID, 1 * US };
    fdp[n] = (Step){ 1, SIM_OP_TRIM, 0, 64 * KIB, SIM_NO_PLID, 1 * US };
    bb[n] = (Step){ 1, SIM_OP_FLUSH, 0, 0, SIM_NO_PLID, 1 * US };
    n++;
    assert_deterministic(ZNS_SMALL, zns, n);
    assert_deterministic(ZNS_PLP ",pcie_gen=3", zns, n);
    assert_deterministic(FDP_SMALL ",fdp_nrg=2", fdp, n);
    assert_deterministic(OC_SMALL ",fw_cores=2,fw_cmd_ns=3000", oc, n);
    assert_deterministic("femu_mode=1,devsz_mb=64,nchs=2,luns_per_ch=2,sra=on", bb, n);
    assert_deterministic("femu_mode=1,devsz_mb=64,nchs=2,luns_per_ch=2,wb_size_mb=1", bb, n);
    assert_deterministic(FDP_SMALL ",wb_size_mb=1,wb_plp=on", fdp, n);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/sim-device/nossd", test_nossd);
    g_test_add_func("/sim-device/blackbox", test_blackbox);
    g_test_add_func("/sim-device/nvm/write-zeroes-compare", test_nvm_write_zeroes_compare);
    g_test_add_func("/sim-device/zns/target-and-writes", test_zns_target_and_writes);
    g_test_add_func("/sim-device/zns/open-limits", test_zns_open_limits);
    g_test_add_func("/sim-device/zns/reset-finish-read", test_zns_reset_finish_read);
    g_test_add_func("/sim-device/zns/read-ahead", test_zns_read_ahead);
    g_test_add_func("/sim-device/zns/plp", test_zns_plp);
    g_test_add_func("/sim-device/zns/fua", test_zns_fua);
    g_test_add_func("/sim-device/zns/power-cut", test_zns_power_cut);
    g_test_add_func("/sim-device/zns/errors", test_zns_errors);
    g_test_add_func("/sim-device/fdp/placement", test_fdp_placement);
    g_test_add_func("/sim-device/fdp/off-and-lists", test_fdp_off_and_lists);
    g_test_add_func("/sim-device/fdp/closes-at-power-on-and-start",
                    test_fdp_closes_at_power_on_and_start);
    g_test_add_func("/sim-device/whitebox/chunks", test_whitebox_chunks);
    g_test_add_func("/sim-device/whitebox/sector-size", test_whitebox_sector_size);
    g_test_add_func("/sim-device/mixed", test_mixed);
    g_test_add_func("/sim-device/deterministic", test_deterministic);
    return g_test_run();
}
