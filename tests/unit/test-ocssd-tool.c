/*
 * The guest's `ocssd` tool (guest/ocssd) without a guest: the device is answered here.
 * The link wraps (--wrap, tests/unit/meson.build) the oc_* calls and pthread_create
 * ocssd.c makes, for the bench's error paths, and the ioctl and /proc/self/pagemap reads oc-nvme.c makes, for
 * the address it gives the device for an LBA list.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <glib.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <linux/nvme_ioctl.h>
#include <pthread.h>

#include "oc-nvme.h"

int ocssd_main(int argc, char **argv);     /* guest/ocssd/ocssd.c, main renamed */

#define NCHUNKS 64

static struct {
    struct oc_geometry geo;
    uint8_t state[NCHUNKS];     /* the chunk log; chunks beyond: free */
    int64_t failing_reset;      /* its reset fails with Offline Chunk; -1: none */
    unsigned resets, writes;
    bool real_vector;           /* oc_vector as oc-nvme.c has it, down to the ioctl */
    uint64_t frame;             /* what /proc/self/pagemap says of any page, now */
    struct nvme_passthru_cmd cmds[8];
    unsigned ncmds;
    int threads_allowed;        /* pthread_create fails after this many; -1: never */
} fake = { .failing_reset = -1, .threads_allowed = -1 };

/* ---- what ocssd.c asks oc-nvme.c ---- */

int __wrap_oc_open(struct oc_dev *d, const char *ns_path, int data_flags, char *err,
                   size_t errlen);
int __wrap_oc_chunk_log(struct oc_dev *d, uint64_t first, uint32_t count,
                        struct oc_chunk *out);
int __wrap_oc_rw(struct oc_dev *d, int write, uint64_t slba, uint32_t nlb, void *buf);
int __wrap_oc_vector(struct oc_dev *d, uint8_t opcode, const uint64_t *lbas, uint32_t n,
                     const uint64_t *dst, void *data, uint32_t *result);
int __real_oc_vector(struct oc_dev *d, uint8_t opcode, const uint64_t *lbas, uint32_t n,
                     const uint64_t *dst, void *data, uint32_t *result);

int __wrap_oc_open(struct oc_dev *d, const char *ns_path, int data_flags, char *err,
                   size_t errlen)
{
    *d = (struct oc_dev){ .ns_fd = -1, .ctrl_fd = -1, .nsid = 1, .lba_size = 4096,
                          .max_sectors = 256, .geo = fake.geo };
    return 0;
}

int __wrap_oc_chunk_log(struct oc_dev *d, uint64_t first, uint32_t count,
                        struct oc_chunk *out)
{
    for (uint32_t i = 0; i < count; i++) {
        uint64_t c = first + i;
        out[i] = (struct oc_chunk){ .state = c < NCHUNKS ? fake.state[c] : OC_CS_FREE,
                                    .slba = c * d->geo.clba, .cnlb = d->geo.clba };
        out[i].wp = out[i].slba + (out[i].state == OC_CS_CLOSED ? d->geo.clba : 0);
    }
    return 0;
}

int __wrap_oc_rw(struct oc_dev *d, int write, uint64_t slba, uint32_t nlb, void *buf)
{
    __atomic_fetch_add(&fake.writes, write, __ATOMIC_RELAXED);  /* one thread per PU */
    return 0;
}

int __wrap_oc_vector(struct oc_dev *d, uint8_t opcode, const uint64_t *lbas, uint32_t n,
                     const uint64_t *dst, void *data, uint32_t *result)
{
    if (fake.real_vector) {
        return __real_oc_vector(d, opcode, lbas, n, dst, data, result);
    }
    for (uint32_t i = 0; opcode == OC_VECTOR_RESET && i < n; i++) {
        if ((int64_t)(lbas[i] / d->geo.clba) == fake.failing_reset) {
            return 0x2c0;
        }
        fake.resets++;
    }
    return 0;
}

/* ---- what oc-nvme.c asks the kernel ---- */

int __wrap_ioctl(int fd, unsigned long req, ...);
int __real_ioctl(int fd, unsigned long req, ...);
ssize_t __wrap_pread(int fd, void *buf, size_t n, off_t off);
ssize_t __real_pread(int fd, void *buf, size_t n, off_t off);
ssize_t __wrap_pread64(int fd, void *buf, size_t n, off_t off);
ssize_t __real_pread64(int fd, void *buf, size_t n, off_t off);

int __wrap_ioctl(int fd, unsigned long req, ...)
{
    va_list ap;
    void *arg;

    va_start(ap, req);
    arg = va_arg(ap, void *);
    va_end(ap);
    if (fd != -1) {
        return __real_ioctl(fd, req, arg);
    }
    g_assert_true(req == NVME_IOCTL_IO_CMD);
    g_assert_cmpuint(fake.ncmds, <, G_N_ELEMENTS(fake.cmds));
    fake.cmds[fake.ncmds++] = *(struct nvme_passthru_cmd *)arg;
    return 0;
}

static bool is_pagemap(int fd)
{
    char path[64], target[64];
    ssize_t n;

    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    n = readlink(path, target, sizeof(target) - 1);
    if (n < 0) {
        return false;
    }
    target[n] = 0;
    return g_str_has_suffix(target, "/pagemap");
}

static ssize_t fake_pagemap(void *buf, size_t n)
{
    uint64_t ent = 1ull << 63 | fake.frame;     /* present, at frame fake.frame */

    g_assert_cmpuint(n, ==, 8);
    memcpy(buf, &ent, 8);
    return 8;
}

ssize_t __wrap_pread(int fd, void *buf, size_t n, off_t off)
{
    return is_pagemap(fd) ? fake_pagemap(buf, n) : __real_pread(fd, buf, n, off);
}

ssize_t __wrap_pread64(int fd, void *buf, size_t n, off_t off)
{
    return is_pagemap(fd) ? fake_pagemap(buf, n) : __real_pread64(fd, buf, n, off);
}

int __wrap_pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *),
                          void *arg);
int __real_pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *),
                          void *arg);

int __wrap_pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *),
                          void *arg)
{
    if (fake.threads_allowed == 0) {
        return EAGAIN;
    }
    if (fake.threads_allowed > 0) {
        fake.threads_allowed--;
    }
    return __real_pthread_create(th, attr, fn, arg);
}

/* ---- the tests ---- */

static void report_fake(void)
{
    printf("FAKE writes=%u resets=%u\n", fake.writes, fake.resets);
}

static int run_tool(const char *const *args)
{
    char *argv[16];
    int argc = 0;

    argv[argc++] = (char *)"ocssd";
    while (*args) {
        argv[argc++] = (char *)*args++;
    }
    argv[argc] = NULL;
    atexit(report_fake);
    return ocssd_main(argc, argv);
}

static struct oc_geometry small_geo(void)
{
    return (struct oc_geometry){ .major = 2, .num_grp = 1, .num_pu = 2, .num_chk = 4,
                                 .clba = 16, .ws_min = 4, .ws_opt = 4, .mw_cunits = 4 };
}

/* A reset that fails stops the bench: the next PU's reset must not hide it. */
static void test_bench_failed_reset(void)
{
    if (g_test_subprocess()) {
        fake.geo = small_geo();
        fake.state[0] = fake.state[4] = OC_CS_CLOSED;     /* chunk 0 of PU 0 and of PU 1 */
        fake.failing_reset = 0;
        exit(run_tool((const char *[]){ "bench", "--chunks", "2", "--pus", "2", NULL }));
    }
    g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
    g_test_trap_assert_failed();
    g_test_trap_assert_stdout("*STATUS=0x2c0*FAKE writes=0 *");
    g_test_trap_assert_stdout_unmatched("*BENCH pus=*");
}

/* Free chunks: the bench writes each chunk (one command each), says so, resets them. */
static void test_bench_runs(void)
{
    if (g_test_subprocess()) {
        fake.geo = small_geo();
        exit(run_tool((const char *[]){ "bench", "--chunks", "2", "--pus", "1,2", NULL }));
    }
    g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
    g_test_trap_assert_passed();
    g_test_trap_assert_stdout("*BENCH pus=1 *BENCH pus=2 *FAKE writes=4 resets=4*");
}

/* A thread the system refuses: the bench says so and stops, joining only those started. */
static void test_bench_thread_refused(void)
{
    if (g_test_subprocess()) {
        fake.geo = small_geo();
        fake.threads_allowed = 1;
        exit(run_tool((const char *[]){ "bench", "--chunks", "1", "--pus", "2", NULL }));
    }
    g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
    g_test_trap_assert_failed();
    g_test_trap_assert_stderr("*cannot start thread 2 of 2*");
    g_test_trap_assert_stdout("*STATUS=error*FAKE writes=1 *");
    g_test_trap_assert_stdout_unmatched("*BENCH pus=*");
}

/* A geometry whose chunk table cannot be allocated: a message, not a crash. */
static void test_bench_huge_geometry(void)
{
    if (g_test_subprocess()) {
        fake.geo = small_geo();
        fake.geo.num_grp = 65535;
        fake.geo.num_pu = 65535;
        fake.geo.num_chk = 1u << 30;
        exit(run_tool((const char *[]){ "bench", NULL }));
    }
    g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
    g_test_trap_assert_failed();
    g_test_trap_assert_stderr("*ocssd: out of memory*");
}

/*
 * The LBA list's page can move (compaction migrates locked pages): its address is
 * looked up for every command, not kept from the first.
 */
static void test_list_address_every_command(void)
{
    struct oc_dev d = { .ns_fd = -1, .ctrl_fd = -1, .nsid = 1, .lba_size = 4096,
                        .geo = small_geo() };
    static const uint64_t lbas[2] = { 16, 17 }, dst[2] = { 32, 33 };
    uint32_t result;

    fake = (typeof(fake)){ .real_vector = true, .failing_reset = -1 };
    fake.frame = 0x1234;
    g_assert_cmpint(oc_vector(&d, OC_VECTOR_RESET, lbas, 2, NULL, NULL, &result), ==, 0);
    fake.frame = 0x5678;                        /* the page moved */
    g_assert_cmpint(oc_vector(&d, OC_VECTOR_COPY, lbas, 2, dst, NULL, &result), ==, 0);
    /* one LBA each: no list, no page */
    fake.frame = 0;                             /* a lookup now would fail */
    g_assert_cmpint(oc_vector(&d, OC_VECTOR_COPY, lbas, 1, dst, NULL, &result), ==, 0);
    g_assert_cmpint(oc_vector(&d, OC_VECTOR_WRITE, lbas, 2, NULL, NULL, &result), ==, -EPERM);

    g_assert_cmpuint(fake.ncmds, ==, 3);
    g_assert_cmphex((uint64_t)fake.cmds[0].cdw11 << 32 | fake.cmds[0].cdw10, ==, 0x1234000);
    g_assert_cmphex((uint64_t)fake.cmds[1].cdw11 << 32 | fake.cmds[1].cdw10, ==, 0x5678000);
    g_assert_cmphex((uint64_t)fake.cmds[1].cdw15 << 32 | fake.cmds[1].cdw14, ==, 0x5678800);
    g_assert_cmpuint(fake.cmds[1].cdw12, ==, 1);
    g_assert_cmphex((uint64_t)fake.cmds[2].cdw11 << 32 | fake.cmds[2].cdw10, ==, 16);
    g_assert_cmphex((uint64_t)fake.cmds[2].cdw15 << 32 | fake.cmds[2].cdw14, ==, 32);
    g_assert_cmpuint(fake.cmds[2].cdw12, ==, 0);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/ocssd-tool/bench/failed-reset", test_bench_failed_reset);
    g_test_add_func("/ocssd-tool/bench/runs", test_bench_runs);
    g_test_add_func("/ocssd-tool/bench/huge-geometry", test_bench_huge_geometry);
    g_test_add_func("/ocssd-tool/bench/thread-refused", test_bench_thread_refused);
    g_test_add_func("/ocssd-tool/vector/list-address-every-command",
                    test_list_address_every_command);
    return g_test_run();
}
