/*
 * QEMU's generic fuzzer targets for the femu device, one per mode: generic-fuzz-femu-nossd,
 * -blackbox, -zns, -whitebox, -fdp and -mixed; and -zns-powercut and -fdp-powercut, whose
 * drives lose power.
 * qemu/femu-graft.patch includes this file in tests/qtest/fuzz/generic_fuzz_configs.h;
 * tests/fuzz/ seeds and runs them.
 *
 * The fuzzer resets the machine after every input and runs all inputs in one process, so:
 * - dataplane=main-loop: commands run in the main loop and time is QEMU's virtual clock,
 *   which moves only with the fuzzer's clock steps (no device thread racing the fuzzer's
 *   DMA callback, and an input replays the same way);
 * - small drives and few queues, so that a reset costs little (nossd's is large but sparse:
 *   see its target).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_FEMU_FUZZ_TARGETS_H
#define HW_FEMU_FUZZ_TARGETS_H

/*
 * q35 needs a BIOS image even though qtest runs no guest code: an empty one, kept in the
 * temporary directory (one per user, made once), so that no firmware package is needed.
 */
static inline const char *femu_fuzz_bios(void)
{
    static char *path;

    if (!path) {
        g_autofree char *name = g_strdup_printf("femu-fuzz-bios-%u.bin", (unsigned)getuid());
        g_autofree char *zeroes = g_malloc0(64 * 1024);

        path = g_build_filename(g_get_tmp_dir(), name, NULL);
        if (!g_file_test(path, G_FILE_TEST_EXISTS) &&
            !g_file_set_contents(path, zeroes, 64 * 1024, NULL)) {
            g_error("cannot write the fuzzer's BIOS image %s", path);
        }
    }
    return path;
}

#define FEMU_FUZZ_CTRL "dataplane=main-loop,queues=2,entries=64,mdts=3,aerl=3,elpe=3"

/* The machine around a device; FEMU_FUZZ_EXTRA_ARGS adds to it (e.g. -trace 'femu_*'). */
static inline gchar *femu_fuzz_args(const char *device)
{
    const char *extra = getenv("FEMU_FUZZ_EXTRA_ARGS");

    return g_strdup_printf("-machine q35 -nodefaults -bios %s %s %s", femu_fuzz_bios(),
                           device, extra ? extra : "");
}

/* The argfunc of a target: its device on the machine above. */
#define FEMU_FUZZ_TARGET(mode, device) \
    static inline gchar *femu_fuzz_##mode##_args(void) { return femu_fuzz_args(device); }

/*
 * 512 MiB namespaces, sparse: a Deallocate of one (131072 4 KiB slices) takes 8 passes of
 * FEMU_PASS_PAGES, and the fuzzer runs at most 10 passes per operation, so two of them
 * are still running when the next operation (a command, Delete I/O SQ, a reset) comes.
 */
FEMU_FUZZ_TARGET(nossd,
    "-object memory-backend-ram,id=femu-mem,size=1G,reserve=off "
    "-device femu,femu_mode=2,memdev=femu-mem,namespaces=2," FEMU_FUZZ_CTRL)
FEMU_FUZZ_TARGET(blackbox,
    "-device femu,femu_mode=1,devsz_mb=4,nchs=2,luns_per_ch=2,pgs_per_blk=16,op_pcent=25,"
    "sra=on," FEMU_FUZZ_CTRL)
#define FEMU_FUZZ_ZNS \
    "-device femu,femu_mode=3,devsz_mb=8,zns_zone_size_mb=1,zns_zone_cap=768K,zns_num_ch=2," \
    "zns_num_lun=2,zns_max_open=3,zns_max_active=4,zns_zd_ext_size=64,plp=selective," \
    "plp_zones=0,plp_buf_mb=1,buf_mb=1,sra=on," FEMU_FUZZ_CTRL
FEMU_FUZZ_TARGET(zns, FEMU_FUZZ_ZNS)
/* the same drive losing power 100 ms of virtual time after each reset: PLP flush, SPOR */
FEMU_FUZZ_TARGET(zns_powercut, FEMU_FUZZ_ZNS ",plp_fail_interval_ms=100,plp_fail_prob=100")
FEMU_FUZZ_TARGET(whitebox,
    "-device femu,femu_mode=0,devsz_mb=8,lnum_ch=2,lnum_lun=2,lnum_pln=1,lpgs_per_blk=16,"
    "lsecs_per_pg=4,oc_maxoc=4," FEMU_FUZZ_CTRL)
/* one flash shared by a namespace of each kind */
FEMU_FUZZ_TARGET(mixed,
    "-device femu,ns_types=nossd:blackbox:zns:ocssd,ns_sizes_mb=2:4:4:4,nchs=2,luns_per_ch=2,"
    "pgs_per_blk=16,op_pcent=25,zns_zone_size_mb=1,sra=on," FEMU_FUZZ_CTRL)

/*
 * Flexible Data Placement: two fdp namespaces in endurance group 1 sharing 3 handles (the
 * middle one Persistently Isolated) over 2 reclaim groups (16-page blocks: 128 KiB RUs),
 * namespace 1 placing through handles 0 and 1, namespace 2 through 1 and 2; RUs open
 * longer than 1 s of virtual time are closed (a dozen clock steps of idle ticks).
 */
#define FEMU_FUZZ_FDP \
    "-device femu,ns_types=fdp:fdp,devsz_mb=4,nchs=2,luns_per_ch=2,pgs_per_blk=16," \
    "op_pcent=25,fdp_ruh_types=ii:pi:ii,fdp_nrg=2,fdp_erutl_s=1,fdp_ns_ruhs=0.1/1.2," \
    FEMU_FUZZ_CTRL
FEMU_FUZZ_TARGET(fdp, FEMU_FUZZ_FDP)
/* the same drive losing power 100 ms of virtual time after each reset: RUs left open */
FEMU_FUZZ_TARGET(fdp_powercut, FEMU_FUZZ_FDP ",plp_fail_interval_ms=100,plp_fail_prob=100")

/* Entries of generic_fuzz_configs.h's predefined_configs[]. */
#define FEMU_FUZZ_CONFIGS \
    { .name = "femu-nossd", .argfunc = femu_fuzz_nossd_args, .objects = "femu*" }, \
    { .name = "femu-blackbox", .argfunc = femu_fuzz_blackbox_args, .objects = "femu*" }, \
    { .name = "femu-zns", .argfunc = femu_fuzz_zns_args, .objects = "femu*" }, \
    { .name = "femu-zns-powercut", .argfunc = femu_fuzz_zns_powercut_args, \
      .objects = "femu*" }, \
    { .name = "femu-whitebox", .argfunc = femu_fuzz_whitebox_args, .objects = "femu*" }, \
    { .name = "femu-mixed", .argfunc = femu_fuzz_mixed_args, .objects = "femu*" }, \
    { .name = "femu-fdp", .argfunc = femu_fuzz_fdp_args, .objects = "femu*" }, \
    { .name = "femu-fdp-powercut", .argfunc = femu_fuzz_fdp_powercut_args, \
      .objects = "femu*" },

#endif
