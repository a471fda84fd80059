/*
 * The OCSSD 2.0 chunk model (ocssd/chunk.h): geometry checks, the LBA format, every
 * command in every chunk state, open-chunk limits, write and read rules, wear, chunk
 * descriptors, the splitting of vector lists into runs, and the saved state (byte format,
 * round trip, mismatches and damage).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <glib.h>
#include <string.h>
#include "ocssd/chunk.h"
#include "saved-format.h"

#define FREE OC_CHUNK_FREE
#define OPEN OC_CHUNK_OPEN
#define CLOSED OC_CHUNK_CLOSED
#define OFFLINE OC_CHUNK_OFFLINE

#define HDR 64          /* saved-state header bytes */
#define REC 32          /* record slot bytes, two per chunk */

/* ---- helpers ---- */

static OcGeometry geo(uint32_t grp, uint32_t pu, uint32_t chk, uint32_t clba, uint32_t ws)
{
    return (OcGeometry){ .num_grp = grp, .num_pu = pu, .num_chk = chk, .clba = clba,
                         .ws_min = ws, .ws_opt = ws, .mw_cunits = ws, .sector_bytes = 4096 };
}

/* 3 groups (not a power of two) x 2 PUs x 4 chunks x 16 sectors, writes of 4 */
static OcGeometry base(void)
{
    return geo(3, 2, 4, 16, 4);
}

static OcChunkSet *mk(OcGeometry g)
{
    char *err = NULL;
    OcChunkSet *cs = oc_chunk_set_new(&g, &err);

    if (!cs) {
        g_error("oc_chunk_set_new refused: %s", err);
    }
    g_assert_null(err);
    return cs;
}

static uint64_t slba(const OcChunkSet *cs, uint64_t chunk)
{
    return chunk * cs->geo.clba;
}

static void ok(OcStatus st)
{
    g_assert_cmphex(st, ==, OC_OK);
}

/* A checked and committed write of n sectors at the chunk's write pointer. */
static void wr(OcChunkSet *cs, uint64_t chunk, uint64_t n)
{
    uint64_t lba = slba(cs, chunk) + cs->chunks[chunk].wp;

    ok(oc_write_check(cs, lba, n));
    oc_write_commit(cs, lba, n);
}

/* Open chunks counted from the chunks themselves agree with the set's counters. */
static void check_open_counts(const OcChunkSet *cs)
{
    const OcGeometry *g = &cs->geo;
    uint32_t total = 0;

    for (uint64_t p = 0; p < (uint64_t)g->num_grp * g->num_pu; p++) {
        uint32_t n = 0;
        for (uint64_t c = 0; c < g->num_chk; c++) {
            n += cs->chunks[p * g->num_chk + c].state == OPEN;
        }
        g_assert_cmpuint(cs->open_per_pu[p], ==, n);
        total += n;
    }
    g_assert_cmpuint(cs->nr_open, ==, total);
}

/* ---- geometry ---- */

/* g is refused; the message (of the check and of oc_chunk_set_new) names every word. */
static void refused_geo(OcGeometry g, const char *const *names)
{
    char *err = NULL, *err2 = NULL;

    g_assert_false(oc_geometry_check(&g, &err));
    g_assert_nonnull(err);
    for (const char *const *n = names; *n; n++) {
        if (!strstr(err, *n)) {
            g_error("'%s' does not name '%s'", err, *n);
        }
    }
    g_assert_null(oc_chunk_set_new(&g, &err2));
    g_assert_cmpstr(err2, ==, err);
    /* no err pointer: still refused, no crash */
    g_assert_false(oc_geometry_check(&g, NULL));
    g_free(err);
    g_free(err2);
}

#define NAMES(...) ((const char *const[]){ __VA_ARGS__, NULL })

static void test_geometry_refusals(void)
{
    OcGeometry g;

    g = base(); g.num_grp = 0;          refused_geo(g, NAMES("lnum_ch=0", "1..65535"));
    g = base(); g.num_grp = 65536;      refused_geo(g, NAMES("lnum_ch=65536", "65535"));
    g = base(); g.num_pu = 0;           refused_geo(g, NAMES("lnum_lun=0", "power of two"));
    g = base(); g.num_pu = 3;           refused_geo(g, NAMES("lnum_lun=3", "power of two"));
    g = base(); g.num_pu = 65536;       refused_geo(g, NAMES("lnum_lun=65536", "32768"));
    g = base(); g.num_chk = 0;          refused_geo(g, NAMES("0 chunks per PU", "devsz_mb"));
    g = base(); g.num_chk = 6;          refused_geo(g, NAMES("6 chunks per PU", "devsz_mb"));
    g = base(); g.clba = 0;         refused_geo(g, NAMES("0 sectors per chunk", "lsecs_per_pg"));
    g = base(); g.clba = 24;        refused_geo(g, NAMES("24 sectors per chunk", "lpgs_per_blk"));
    g = base(); g.clba = 1u << 25;
    g.ws_min = g.ws_opt = g.mw_cunits = 4;
    refused_geo(g, NAMES("33554432 sectors per chunk", "2^24", "lnum_pln"));
    g = base(); g.ws_min = 0;           refused_geo(g, NAMES("minimum write size of 0"));
    g = base(); g.ws_min = 3;           refused_geo(g, NAMES("minimum write size of 3", "16"));
    g = base(); g.ws_min = 32;          refused_geo(g, NAMES("minimum write size of 32"));
    g = base(); g.ws_opt = 0;           refused_geo(g, NAMES("optimal write size of 0"));
    g = base(); g.ws_opt = 6;           refused_geo(g, NAMES("optimal write size of 6"));
    g = base(); g.ws_opt = 12;          refused_geo(g, NAMES("optimal write size of 12"));
    g = base(); g.mw_cunits = 0;        refused_geo(g, NAMES("cache unit of 0"));
    g = base(); g.mw_cunits = 6;        refused_geo(g, NAMES("cache unit of 6"));
    g = base(); g.mccap = 0x4;          refused_geo(g, NAMES("oc_mccap=0x4", "0x1", "0x2"));
    g = base(); g.mccap = 0x80000003;   refused_geo(g, NAMES("oc_mccap=0x80000003"));
    /* 3 x 2 x 4 = 24 chunks, 4 per PU */
    g = base(); g.maxoc = 25;           refused_geo(g, NAMES("oc_maxoc=25", "24"));
    g = base(); g.maxocpu = 5;          refused_geo(g, NAMES("oc_maxocpu=5", "4"));
    /* 16 + 15 + 8 + 24 = 63 LBA bits */
    g = geo(65535, 32768, 256, 1u << 24, 4);
    refused_geo(g, NAMES("63 LBA bits", "62"));

    /* the limits themselves are accepted */
    g = base(); g.maxoc = 24; g.maxocpu = 4; g.mccap = 0x3;
    g_assert_true(oc_geometry_check(&g, NULL));
    g = base(); g.mw_cunits = 64;
    g_assert_true(oc_geometry_check(&g, NULL));
}

static void test_geometry_derived(void)
{
    static const struct {
        uint32_t grp, pu, chk, clba;
        uint8_t gb, pb, cb, sb;
    } t[] = {
        { 1, 1, 1, 1, 0, 0, 0, 0 },
        { 2, 1, 1, 1, 1, 0, 0, 0 },
        { 3, 2, 4, 16, 2, 1, 2, 4 },
        { 5, 4, 8, 8, 3, 2, 3, 3 },
        { 8, 4, 1024, 1024, 3, 2, 10, 10 },
        { 9, 1, 2, 4, 4, 0, 1, 2 },
        { 65535, 32768, 128, 1u << 24, 16, 15, 7, 24 },     /* 62 bits: the most */
        { 65535, 32768, 1, 1u << 24, 16, 15, 0, 24 },
    };

    for (size_t i = 0; i < G_N_ELEMENTS(t); i++) {
        OcGeometry g = geo(t[i].grp, t[i].pu, t[i].chk, t[i].clba, 1);
        char *err = NULL;

        g_assert_true(oc_geometry_check(&g, &err));
        g_assert_null(err);
        g_assert_cmpuint(g.grp_bits, ==, t[i].gb);
        g_assert_cmpuint(g.pu_bits, ==, t[i].pb);
        g_assert_cmpuint(g.chk_bits, ==, t[i].cb);
        g_assert_cmpuint(g.sec_bits, ==, t[i].sb);
        g_assert_cmpuint(g.nr_chunks, ==, (uint64_t)t[i].grp * t[i].pu * t[i].chk);
        g_assert_cmpuint(g.nr_sectors, ==, (uint64_t)t[i].grp * t[i].pu * t[i].chk * t[i].clba);
    }
    /* the set keeps the derived geometry, every chunk Free */
    {
        OcChunkSet *cs = mk(base());
        g_assert_cmpuint(cs->geo.nr_chunks, ==, 24);
        g_assert_cmpuint(cs->geo.nr_sectors, ==, 24 * 16);
        g_assert_cmpuint(cs->geo.grp_bits, ==, 2);
        for (uint64_t c = 0; c < 24; c++) {
            g_assert_cmpint(cs->chunks[c].state, ==, FREE);
            g_assert_cmpuint(cs->chunks[c].wp, ==, 0);
            g_assert_cmpuint(cs->chunks[c].erases, ==, 0);
        }
        g_assert_cmpuint(cs->nr_open, ==, 0);
        g_assert_null(cs->store);
        oc_chunk_set_free(cs);
        oc_chunk_set_free(NULL);
    }
}

/* ---- LBA format ---- */

static void check_lba_space(OcGeometry g)
{
    uint64_t expect = 0;
    OcAddr a;

    g_assert_true(oc_geometry_check(&g, NULL));
    /* every address in order: the dense formula, and the bit fields */
    for (uint32_t grp = 0; grp < g.num_grp; grp++) {
        for (uint32_t pu = 0; pu < g.num_pu; pu++) {
            for (uint32_t chk = 0; chk < g.num_chk; chk++) {
                for (uint32_t sec = 0; sec < g.clba; sec++, expect++) {
                    OcAddr in = { grp, pu, chk, sec };
                    uint64_t lba = oc_lba_encode(&g, &in);
                    uint64_t chunk = ((uint64_t)grp * g.num_pu + pu) * g.num_chk + chk;

                    g_assert_cmpuint(lba, ==, expect);
                    g_assert_cmpuint(lba, ==, chunk * g.clba + sec);
                    g_assert_cmpuint(lba, ==,
                                     (uint64_t)grp << (g.pu_bits + g.chk_bits + g.sec_bits) |
                                     (uint64_t)pu << (g.chk_bits + g.sec_bits) |
                                     (uint64_t)chk << g.sec_bits | sec);
                    memset(&a, 0xff, sizeof(a));
                    g_assert_true(oc_lba_decode(&g, lba, &a));
                    g_assert_cmpuint(a.grp, ==, grp);
                    g_assert_cmpuint(a.pu, ==, pu);
                    g_assert_cmpuint(a.chk, ==, chk);
                    g_assert_cmpuint(a.sec, ==, sec);
                    g_assert_cmpuint(oc_chunk_of(&g, lba), ==, chunk);
                    g_assert_cmpuint(oc_pu_of(&g, chunk), ==, (uint64_t)grp * g.num_pu + pu);
                }
            }
        }
    }
    g_assert_cmpuint(expect, ==, g.nr_sectors);
    /* outside: the first LBA past the end (the first unused group), and far beyond */
    {
        OcAddr past = { g.num_grp, 0, 0, 0 };
        const uint64_t outside[] = {
            g.nr_sectors, g.nr_sectors + 1, g.nr_sectors + g.clba, oc_lba_encode(&g, &past),
            (uint64_t)1 << (g.grp_bits + g.pu_bits + g.chk_bits + g.sec_bits),
            (uint64_t)1 << 62, UINT64_MAX / 2, UINT64_MAX,
        };
        g_assert_cmpuint(oc_lba_encode(&g, &past), ==, g.nr_sectors);
        for (size_t i = 0; i < G_N_ELEMENTS(outside); i++) {
            g_assert_false(oc_lba_decode(&g, outside[i], &a));
        }
        /* with num_grp not a power of two, the unused group numbers are all outside */
        for (uint32_t grp = g.num_grp; grp < (1u << g.grp_bits); grp++) {
            OcAddr o = { grp, g.num_pu - 1, g.num_chk - 1, g.clba - 1 };
            g_assert_false(oc_lba_decode(&g, oc_lba_encode(&g, &o), &a));
        }
    }
}

static void test_lba_format(void)
{
    check_lba_space(base());
    check_lba_space(geo(5, 4, 8, 8, 1));
    check_lba_space(geo(1, 1, 1, 1, 1));
    check_lba_space(geo(7, 1, 2, 32, 4));
    check_lba_space(geo(2, 8, 1, 2, 2));
    /* the largest geometry: spot checks at its ends */
    {
        OcGeometry g = geo(65535, 32768, 128, 1u << 24, 4);
        OcAddr a, last = { 65534, 32767, 127, (1u << 24) - 1 };

        g_assert_true(oc_geometry_check(&g, NULL));
        g_assert_true(oc_lba_decode(&g, g.nr_sectors - 1, &a));
        g_assert_cmpuint(a.grp, ==, 65534);
        g_assert_cmpuint(a.pu, ==, 32767);
        g_assert_cmpuint(a.chk, ==, 127);
        g_assert_cmpuint(a.sec, ==, (1u << 24) - 1);
        g_assert_cmpuint(oc_lba_encode(&g, &last), ==, g.nr_sectors - 1);
        g_assert_false(oc_lba_decode(&g, g.nr_sectors, &a));
        g_assert_false(oc_lba_decode(&g, UINT64_MAX, &a));
    }
}

/* ---- the chunk state machine ---- */

enum { CMD_WRITE, CMD_READ, CMD_READ_DULBE, CMD_RESET, CMD_RESET_MULTI, CMD_FAIL_WNU,
       CMD_FAIL_CLOSE, CMD_FAIL_OFFLINE, NR_CMDS };
static const char *const cmd_names[] = { "write", "read", "read+dulbe", "reset",
                                         "reset (multi)", "write-next-unit",
                                         "early-close", "offline" };
static const uint8_t all_states[] = { FREE, OPEN, CLOSED, OFFLINE };

/*
 * Chunk 5 (of base()) put into a state: Free untouched, Open with 4 sectors written,
 * Closed full (16), Offline after 4 sectors were written.
 */
static OcChunkSet *with_state(uint8_t st, uint32_t mccap)
{
    OcGeometry g = base();
    OcChunkSet *cs;

    g.mccap = mccap;
    cs = mk(g);
    switch (st) {
    case OPEN:
        wr(cs, 5, 4);
        break;
    case CLOSED:
        wr(cs, 5, 8);
        wr(cs, 5, 8);
        break;
    case OFFLINE:
        wr(cs, 5, 4);
        oc_fail_offline(cs, 5);
        break;
    }
    g_assert_cmpint(cs->chunks[5].state, ==, st);
    check_open_counts(cs);
    return cs;
}

static void test_state_table(void)
{
    /* command x state -> status, state after, wp after, erases after, readable */
    static const struct {
        int cmd;
        uint8_t from;
        OcStatus st;
        uint8_t to;
        uint64_t wp;
        uint32_t erases;
        uint64_t readable;
    } t[] = {
        /* a write of 4 at the write pointer */
        { CMD_WRITE, FREE, OC_OK, OPEN, 4, 0 },
        { CMD_WRITE, OPEN, OC_OK, OPEN, 8, 0 },
        { CMD_WRITE, CLOSED, OC_OUT_OF_ORDER_WRITE, CLOSED, 16, 0 },
        { CMD_WRITE, OFFLINE, OC_OUT_OF_ORDER_WRITE, OFFLINE, 4, 0 },
        /* a read of the whole chunk */
        { CMD_READ, FREE, OC_OK, FREE, 0, 0, 0 },
        { CMD_READ, OPEN, OC_OK, OPEN, 4, 0, 4 },
        { CMD_READ, CLOSED, OC_OK, CLOSED, 16, 0, 16 },
        { CMD_READ, OFFLINE, OC_OFFLINE_CHUNK, OFFLINE, 4, 0, 0 },
        { CMD_READ_DULBE, FREE, OC_UNWRITTEN, FREE, 0, 0, 0 },
        { CMD_READ_DULBE, OPEN, OC_UNWRITTEN, OPEN, 4, 0, 4 },
        { CMD_READ_DULBE, CLOSED, OC_OK, CLOSED, 16, 0, 16 },
        { CMD_READ_DULBE, OFFLINE, OC_OFFLINE_CHUNK, OFFLINE, 4, 0, 0 },
        /* reset without, then with, the multiple-reset capability; an open chunk too */
        { CMD_RESET, FREE, OC_INVALID_RESET, FREE, 0, 0 },
        { CMD_RESET, OPEN, OC_OK, FREE, 0, 1 },
        { CMD_RESET, CLOSED, OC_OK, FREE, 0, 1 },
        { CMD_RESET, OFFLINE, OC_OFFLINE_CHUNK, OFFLINE, 4, 0 },
        { CMD_RESET_MULTI, FREE, OC_OK, FREE, 0, 1 },
        { CMD_RESET_MULTI, OPEN, OC_OK, FREE, 0, 1 },
        { CMD_RESET_MULTI, CLOSED, OC_OK, FREE, 0, 1 },
        { CMD_RESET_MULTI, OFFLINE, OC_OFFLINE_CHUNK, OFFLINE, 4, 0 },
        /* a write of 4 that passed its check fails: the unit is skipped, the chunk stays open */
        { CMD_FAIL_WNU, FREE, OC_OK, OPEN, 4, 0 },
        { CMD_FAIL_WNU, OPEN, OC_OK, OPEN, 8, 0 },
        { CMD_FAIL_WNU, CLOSED, OC_OUT_OF_ORDER_WRITE, CLOSED, 16, 0 },
        { CMD_FAIL_WNU, OFFLINE, OC_OUT_OF_ORDER_WRITE, OFFLINE, 4, 0 },
        /* the chunk closes where it is; an offline chunk stays offline */
        { CMD_FAIL_CLOSE, FREE, OC_OK, CLOSED, 0, 0 },
        { CMD_FAIL_CLOSE, OPEN, OC_OK, CLOSED, 4, 0 },
        { CMD_FAIL_CLOSE, CLOSED, OC_OK, CLOSED, 16, 0 },
        { CMD_FAIL_CLOSE, OFFLINE, OC_OK, OFFLINE, 4, 0 },
        { CMD_FAIL_OFFLINE, FREE, OC_OK, OFFLINE, 0, 0 },
        { CMD_FAIL_OFFLINE, OPEN, OC_OK, OFFLINE, 4, 0 },
        { CMD_FAIL_OFFLINE, CLOSED, OC_OK, OFFLINE, 16, 0 },
        { CMD_FAIL_OFFLINE, OFFLINE, OC_OK, OFFLINE, 4, 0 },
    };
    bool seen[NR_CMDS][16] = { { false } };

    for (size_t i = 0; i < G_N_ELEMENTS(t); i++) {
        bool multi = t[i].cmd == CMD_RESET_MULTI;
        OcChunkSet *cs = with_state(t[i].from, multi ? OC_MCCAP_MULTI_RESET : 0);
        /* at the write pointer; a full chunk's first sector (its wp is the next chunk's) */
        uint64_t lba = slba(cs, 5) + cs->chunks[5].wp % 16, readable = 99;
        OcStatus st = OC_OK;
        OcChunk before = cs->chunks[5];

        seen[t[i].cmd][t[i].from] = true;
        switch (t[i].cmd) {
        case CMD_WRITE:
        case CMD_FAIL_WNU:
            st = oc_write_check(cs, lba, 4);
            /* the check changes nothing */
            g_assert_cmpmem(&cs->chunks[5], sizeof(OcChunk), &before, sizeof(OcChunk));
            if (st == OC_OK) {
                if (t[i].cmd == CMD_WRITE) {
                    oc_write_commit(cs, lba, 4);
                } else {
                    oc_fail_write_next_unit(cs, lba, 4);
                }
            }
            break;
        case CMD_READ:
        case CMD_READ_DULBE:
            st = oc_read_check(cs, slba(cs, 5), 16, t[i].cmd == CMD_READ_DULBE, &readable);
            g_assert_cmpuint(readable, ==, t[i].readable);
            break;
        case CMD_RESET:
        case CMD_RESET_MULTI:
            st = oc_reset(cs, slba(cs, 5) + 7);     /* any sector of the chunk */
            break;
        case CMD_FAIL_CLOSE:
            oc_fail_early_close(cs, 5);
            break;
        case CMD_FAIL_OFFLINE:
            oc_fail_offline(cs, 5);
            break;
        }
        if (st != t[i].st || cs->chunks[5].state != t[i].to || cs->chunks[5].wp != t[i].wp ||
            cs->chunks[5].erases != t[i].erases) {
            g_error("%s on state %u: got status 0x%x state %u wp %" G_GUINT64_FORMAT
                    " erases %u; want 0x%x %u %" G_GUINT64_FORMAT " %u", cmd_names[t[i].cmd],
                    t[i].from, st, cs->chunks[5].state, cs->chunks[5].wp,
                    cs->chunks[5].erases, t[i].st, t[i].to, t[i].wp, t[i].erases);
        }
        check_open_counts(cs);
        /* no other chunk changed */
        for (uint64_t c = 0; c < cs->geo.nr_chunks; c++) {
            if (c != 5) {
                g_assert_cmpint(cs->chunks[c].state, ==, FREE);
                g_assert_cmpuint(cs->chunks[c].wp, ==, 0);
                g_assert_cmpuint(cs->chunks[c].erases, ==, 0);
            }
        }
        oc_chunk_set_free(cs);
    }
    for (int c = 0; c < NR_CMDS; c++) {
        for (size_t s = 0; s < G_N_ELEMENTS(all_states); s++) {
            g_assert_true(seen[c][all_states[s]]);
        }
    }
}

/* Write-next-unit or a plain write that fills the chunk closes it. */
static void test_fill_closes(void)
{
    OcChunkSet *cs = mk(base());

    wr(cs, 0, 12);
    oc_fail_write_next_unit(cs, slba(cs, 0) + 12, 4);
    g_assert_cmpint(cs->chunks[0].state, ==, CLOSED);
    g_assert_cmpuint(cs->chunks[0].wp, ==, 16);
    /* a whole chunk in one run: Free -> Closed */
    wr(cs, 1, 16);
    g_assert_cmpint(cs->chunks[1].state, ==, CLOSED);
    check_open_counts(cs);
    g_assert_cmpuint(cs->nr_open, ==, 0);
    /* an open chunk that goes offline frees its open slot */
    wr(cs, 2, 4);
    g_assert_cmpuint(cs->nr_open, ==, 1);
    oc_fail_offline(cs, 2);
    g_assert_cmpuint(cs->nr_open, ==, 0);
    check_open_counts(cs);
    oc_chunk_set_free(cs);
}

/* ---- open-chunk limits ---- */

static void test_open_limits(void)
{
    /* 2 groups x 2 PUs x 4 chunks: chunk index = pu * 4 + chk; at most 3 open, 2 per PU */
    OcGeometry g = geo(2, 2, 4, 16, 4);
    OcChunkSet *cs;

    g.maxoc = 3;
    g.maxocpu = 2;
    cs = mk(g);
    wr(cs, 0, 4);
    wr(cs, 1, 4);
    /* a third on PU 0: the PU's limit */
    g_assert_cmphex(oc_write_check(cs, slba(cs, 2), 4), ==, OC_SEQUENCE_ERROR);
    g_assert_cmpint(cs->chunks[2].state, ==, FREE);
    wr(cs, 4, 4);                                       /* PU 1 */
    g_assert_cmpuint(cs->nr_open, ==, 3);
    /* a fourth anywhere: the namespace's limit */
    g_assert_cmphex(oc_write_check(cs, slba(cs, 8), 4), ==, OC_SEQUENCE_ERROR);
    g_assert_cmphex(oc_write_check(cs, slba(cs, 15), 4), ==, OC_SEQUENCE_ERROR);
    /* writes to chunks already open go on; reads of free chunks too */
    wr(cs, 1, 4);
    {
        uint64_t r;
        ok(oc_read_check(cs, slba(cs, 8), 4, false, &r));
    }
    /* a write not at the write pointer is out of order, whatever the limits */
    g_assert_cmphex(oc_write_check(cs, slba(cs, 8) + 4, 4), ==, OC_OUT_OF_ORDER_WRITE);
    /* closing one (filled) frees a slot */
    wr(cs, 0, 12);
    g_assert_cmpint(cs->chunks[0].state, ==, CLOSED);
    g_assert_cmpuint(cs->nr_open, ==, 2);
    wr(cs, 8, 4);                                       /* PU 2 */
    g_assert_cmpuint(cs->nr_open, ==, 3);
    /* PU 0 has one open now, but the namespace is full again */
    g_assert_cmphex(oc_write_check(cs, slba(cs, 2), 4), ==, OC_SEQUENCE_ERROR);
    /* an early close frees one */
    oc_fail_early_close(cs, 4);
    g_assert_cmpuint(cs->nr_open, ==, 2);
    wr(cs, 2, 4);                                       /* PU 0: now 2 open */
    g_assert_cmphex(oc_write_check(cs, slba(cs, 3), 4), ==, OC_SEQUENCE_ERROR);
    /* a reset of a closed chunk does not change the count */
    ok(oc_reset(cs, slba(cs, 0)));
    g_assert_cmpuint(cs->nr_open, ==, 3);
    g_assert_cmphex(oc_write_check(cs, slba(cs, 0), 4), ==, OC_SEQUENCE_ERROR);
    /* an open chunk going offline frees one on its PU */
    oc_fail_offline(cs, 1);
    g_assert_cmpuint(cs->nr_open, ==, 2);
    g_assert_cmpuint(cs->open_per_pu[0], ==, 1);
    wr(cs, 3, 4);
    g_assert_cmpuint(cs->open_per_pu[0], ==, 2);
    /* so does a reset of an open chunk; the chunk can be opened again */
    g_assert_cmphex(oc_write_check(cs, slba(cs, 11), 4), ==, OC_SEQUENCE_ERROR);
    ok(oc_reset(cs, slba(cs, 2) + 3));
    g_assert_cmpuint(cs->nr_open, ==, 2);
    g_assert_cmpuint(cs->open_per_pu[0], ==, 1);
    check_open_counts(cs);
    wr(cs, 11, 4);                                      /* PU 2: the namespace is full */
    g_assert_cmphex(oc_write_check(cs, slba(cs, 2), 4), ==, OC_SEQUENCE_ERROR);
    ok(oc_reset(cs, slba(cs, 3)));
    wr(cs, 2, 8);                                       /* at sector 0 again */
    g_assert_cmpuint(cs->chunks[2].erases, ==, 1);
    g_assert_cmpuint(cs->open_per_pu[0], ==, 1);
    check_open_counts(cs);
    oc_chunk_set_free(cs);

    /* per PU only */
    g = geo(2, 2, 4, 16, 4);
    g.maxocpu = 1;
    cs = mk(g);
    for (uint64_t pu = 0; pu < 4; pu++) {
        wr(cs, pu * 4, 4);
        g_assert_cmphex(oc_write_check(cs, slba(cs, pu * 4 + 1), 4), ==, OC_SEQUENCE_ERROR);
    }
    g_assert_cmpuint(cs->nr_open, ==, 4);
    oc_chunk_set_free(cs);

    /* no limits: every chunk open at once */
    cs = mk(base());
    for (uint64_t c = 0; c < cs->geo.nr_chunks; c++) {
        wr(cs, c, 4);
    }
    g_assert_cmpuint(cs->nr_open, ==, cs->geo.nr_chunks);
    check_open_counts(cs);
    oc_chunk_set_free(cs);

    /* the limits at their largest: the namespace's chunks, a PU's chunks */
    g = base();
    g.maxoc = 24;
    g.maxocpu = 4;
    cs = mk(g);
    for (uint64_t c = 0; c < cs->geo.nr_chunks; c++) {
        wr(cs, c, 4);
    }
    g_assert_cmpuint(cs->nr_open, ==, 24);
    oc_chunk_set_free(cs);
}

/* Each part of a span in order, then committed in order, as the device does. */
static void wr_span(OcChunkSet *cs, uint64_t lba, uint64_t n)
{
    ok(oc_write_check_span(cs, lba, n));
    while (n) {
        uint64_t k = MIN(n, cs->geo.clba - lba % cs->geo.clba);
        oc_write_commit(cs, lba, k);
        lba += k;
        n -= k;
    }
    check_open_counts(cs);
}

/* A standard Write across chunks: the chunk it closes does not count against the limit. */
static void test_open_limits_span(void)
{
    /* 2 groups x 2 PUs x 4 chunks of 16: PU p has chunks 4p..4p+3 */
    OcGeometry g = geo(2, 2, 4, 16, 4);
    OcChunkSet *cs;

    g.maxoc = 1;
    cs = mk(g);
    wr(cs, 0, 12);
    /* chunk 0's last 4 and chunk 1's first 4: 0 closes as 1 opens */
    g_assert_cmphex(oc_write_check(cs, slba(cs, 1), 4), ==, OC_SEQUENCE_ERROR);
    wr_span(cs, slba(cs, 0) + 12, 8);
    g_assert_cmpint(cs->chunks[0].state, ==, CLOSED);
    g_assert_cmpint(cs->chunks[1].state, ==, OPEN);
    g_assert_cmpuint(cs->chunks[1].wp, ==, 4);
    /* through a whole free chunk (2), and from the last chunk of PU 0 into PU 1 */
    wr_span(cs, slba(cs, 1) + 4, 12 + 16 + 4);
    g_assert_cmpint(cs->chunks[2].state, ==, CLOSED);
    g_assert_cmpuint(cs->chunks[3].wp, ==, 4);
    wr_span(cs, slba(cs, 3) + 4, 12 + 8);
    g_assert_cmpint(cs->chunks[4].state, ==, OPEN);
    g_assert_cmpuint(cs->nr_open, ==, 1);
    /* a span that leaves the open chunk open, or starts in a free one: the limit holds */
    g_assert_cmphex(oc_write_check_span(cs, slba(cs, 8), 20), ==, OC_SEQUENCE_ERROR);
    g_assert_cmphex(oc_write_check_span(cs, slba(cs, 5), 4), ==, OC_SEQUENCE_ERROR);
    /* the first failing part decides; nothing is changed by a check */
    g_assert_cmphex(oc_write_check_span(cs, slba(cs, 4) + 4, 12), ==, OC_OUT_OF_ORDER_WRITE);
    g_assert_cmphex(oc_write_check_span(cs, slba(cs, 4) + 8, 8 + 6), ==, OC_INVALID_FIELD);
    g_assert_cmpuint(cs->chunks[4].wp, ==, 8);
    /* bounds */
    g_assert_cmphex(oc_write_check_span(cs, slba(cs, 4) + 8, 0), ==, OC_LBA_RANGE);
    g_assert_cmphex(oc_write_check_span(cs, cs->geo.nr_sectors - 4, 8), ==, OC_LBA_RANGE);
    g_assert_cmphex(oc_write_check_span(cs, cs->geo.nr_sectors, 4), ==, OC_LBA_RANGE);
    g_assert_cmphex(oc_write_check_span(cs, 4, UINT64_MAX), ==, OC_LBA_RANGE);
    g_assert_cmphex(oc_write_check_span(cs, UINT64_MAX, 1), ==, OC_LBA_RANGE);
    oc_chunk_set_free(cs);

    /* per PU: a chunk closed on PU 0 frees nothing on PU 1 */
    g = geo(2, 2, 4, 16, 4);
    g.maxocpu = 1;
    cs = mk(g);
    wr(cs, 3, 12);
    wr(cs, 5, 4);
    g_assert_cmphex(oc_write_check_span(cs, slba(cs, 3) + 12, 8), ==, OC_SEQUENCE_ERROR);
    /* on one PU, as with the namespace's limit */
    wr(cs, 8, 12);
    g_assert_cmphex(oc_write_check(cs, slba(cs, 9), 4), ==, OC_SEQUENCE_ERROR);
    wr_span(cs, slba(cs, 8) + 12, 4 + 16 + 4);
    g_assert_cmpint(cs->chunks[9].state, ==, CLOSED);
    g_assert_cmpint(cs->chunks[10].state, ==, OPEN);
    g_assert_cmpuint(cs->open_per_pu[2], ==, 1);
    oc_chunk_set_free(cs);
}

/* ---- write and read rules ---- */

static void test_write_rules(void)
{
    OcChunkSet *cs = mk(base());
    uint64_t s = slba(cs, 3), end = cs->geo.nr_sectors;

    /* a free chunk is written from its first sector */
    g_assert_cmphex(oc_write_check(cs, s + 4, 4), ==, OC_OUT_OF_ORDER_WRITE);
    g_assert_cmphex(oc_write_check(cs, s + 1, 4), ==, OC_OUT_OF_ORDER_WRITE);
    wr(cs, 3, 8);
    /* ahead of and behind the write pointer */
    g_assert_cmphex(oc_write_check(cs, s + 12, 4), ==, OC_OUT_OF_ORDER_WRITE);
    g_assert_cmphex(oc_write_check(cs, s + 4, 4), ==, OC_OUT_OF_ORDER_WRITE);
    g_assert_cmphex(oc_write_check(cs, s, 4), ==, OC_OUT_OF_ORDER_WRITE);
    g_assert_cmphex(oc_write_check(cs, s + 9, 4), ==, OC_OUT_OF_ORDER_WRITE);
    /* at it, but not a multiple of ws_min */
    for (uint64_t n = 1; n < 8; n++) {
        g_assert_cmphex(oc_write_check(cs, s + 8, n), ==, n % 4 ? OC_INVALID_FIELD : OC_OK);
    }
    /* crossing the chunk's end */
    g_assert_cmphex(oc_write_check(cs, s + 8, 12), ==, OC_LBA_RANGE);
    g_assert_cmphex(oc_write_check(cs, s + 8, 9), ==, OC_LBA_RANGE);
    g_assert_cmphex(oc_write_check(cs, s + 8, UINT64_MAX), ==, OC_LBA_RANGE);
    /* nothing, or outside the namespace */
    g_assert_cmphex(oc_write_check(cs, s + 8, 0), ==, OC_LBA_RANGE);
    g_assert_cmphex(oc_write_check(cs, end, 4), ==, OC_LBA_RANGE);
    g_assert_cmphex(oc_write_check(cs, end + 16, 4), ==, OC_LBA_RANGE);
    g_assert_cmphex(oc_write_check(cs, UINT64_MAX, 4), ==, OC_LBA_RANGE);
    g_assert_cmphex(oc_write_check(cs, UINT64_MAX - 3, 4), ==, OC_LBA_RANGE);
    /* none of that changed anything */
    g_assert_cmpint(cs->chunks[3].state, ==, OPEN);
    g_assert_cmpuint(cs->chunks[3].wp, ==, 8);
    /* up to the end exactly */
    wr(cs, 3, 8);
    g_assert_cmpint(cs->chunks[3].state, ==, CLOSED);
    /* the last chunk of the namespace, to its last sector */
    wr(cs, 23, 16);
    g_assert_cmpint(cs->chunks[23].state, ==, CLOSED);
    /* a reset of an out-of-range LBA */
    g_assert_cmphex(oc_reset(cs, end), ==, OC_LBA_RANGE);
    g_assert_cmphex(oc_reset(cs, UINT64_MAX), ==, OC_LBA_RANGE);
    oc_chunk_set_free(cs);

    /* ws_min 1: any size */
    cs = mk(geo(1, 1, 2, 8, 1));
    for (int i = 0; i < 8; i++) {
        wr(cs, 0, 1);
    }
    g_assert_cmpint(cs->chunks[0].state, ==, CLOSED);
    oc_chunk_set_free(cs);
}

static void test_read_rules(void)
{
    OcChunkSet *cs = mk(base());
    uint64_t s = slba(cs, 7), r;
    static const struct { uint64_t off, n, readable; } t[] = {
        { 0, 8, 8 }, { 0, 16, 8 }, { 4, 8, 4 }, { 7, 2, 1 }, { 8, 4, 0 }, { 12, 4, 0 },
        { 0, 1, 1 }, { 15, 1, 0 }, { 2, 3, 3 },
    };

    wr(cs, 7, 8);
    for (size_t i = 0; i < G_N_ELEMENTS(t); i++) {
        r = 99;
        ok(oc_read_check(cs, s + t[i].off, t[i].n, false, &r));
        g_assert_cmpuint(r, ==, t[i].readable);
        r = 99;
        g_assert_cmphex(oc_read_check(cs, s + t[i].off, t[i].n, true, &r), ==,
                        t[i].readable < t[i].n ? OC_UNWRITTEN : OC_OK);
        g_assert_cmpuint(r, ==, t[i].readable);
    }
    /* reads need not follow ws_min or the write pointer */
    ok(oc_read_check(cs, s + 1, 3, true, &r));
    /* crossing the chunk end, nothing, outside */
    r = 99;
    g_assert_cmphex(oc_read_check(cs, s + 14, 4, false, &r), ==, OC_LBA_RANGE);
    g_assert_cmpuint(r, ==, 0);
    r = 99;
    g_assert_cmphex(oc_read_check(cs, s, 0, false, &r), ==, OC_LBA_RANGE);
    g_assert_cmpuint(r, ==, 0);
    g_assert_cmphex(oc_read_check(cs, cs->geo.nr_sectors, 1, false, &r), ==, OC_LBA_RANGE);
    g_assert_cmphex(oc_read_check(cs, UINT64_MAX, 1, true, &r), ==, OC_LBA_RANGE);
    g_assert_cmphex(oc_read_check(cs, s, UINT64_MAX, false, &r), ==, OC_LBA_RANGE);
    /* an early-closed chunk reads below its write pointer only */
    oc_fail_early_close(cs, 7);
    ok(oc_read_check(cs, s, 16, false, &r));
    g_assert_cmpuint(r, ==, 8);
    g_assert_cmphex(oc_read_check(cs, s, 16, true, &r), ==, OC_UNWRITTEN);
    /* after a reset nothing is readable */
    ok(oc_reset(cs, s));
    ok(oc_read_check(cs, s, 16, false, &r));
    g_assert_cmpuint(r, ==, 0);
    oc_chunk_set_free(cs);
}

/* ---- wear and descriptors ---- */

static void expect_descriptor(const OcChunkSet *cs, uint64_t chunk, uint8_t state,
                              uint8_t wli, uint64_t wp)
{
    uint8_t d[OC_DESCRIPTOR_BYTES + 8], want[OC_DESCRIPTOR_BYTES + 8];

    memset(d, 0xee, sizeof(d));
    memset(want, 0, OC_DESCRIPTOR_BYTES);
    memset(want + OC_DESCRIPTOR_BYTES, 0xee, 8);       /* nothing written past it */
    want[0] = state;
    want[1] = 0x1;
    want[2] = wli;
    put_le(want + 8, chunk * cs->geo.clba, 8);
    put_le(want + 16, cs->geo.clba, 8);
    put_le(want + 24, chunk * cs->geo.clba + wp, 8);
    oc_chunk_descriptor(cs, chunk, d);
    g_assert_cmpmem(d, sizeof(d), want, sizeof(want));
}

static void test_wear_and_descriptors(void)
{
    OcGeometry g = base();
    OcChunkSet *cs;

    g.mccap = OC_MCCAP_MULTI_RESET;
    cs = mk(g);
    /* chunk 0: three write/reset cycles */
    for (int i = 0; i < 3; i++) {
        wr(cs, 0, 16);
        ok(oc_reset(cs, slba(cs, 0) + 15));
    }
    g_assert_cmpuint(cs->chunks[0].erases, ==, 3);
    /* chunk 1: 300 resets of a free chunk; the index saturates at 255 */
    for (int i = 0; i < 300; i++) {
        ok(oc_reset(cs, slba(cs, 1)));
    }
    g_assert_cmpuint(cs->chunks[1].erases, ==, 300);
    /* chunk 2 open, 3 closed, 4 reset once then opened, 5 offline with data (a failed
     * reset erases nothing), 6 early closed */
    wr(cs, 2, 4);
    wr(cs, 3, 16);
    wr(cs, 4, 16);
    ok(oc_reset(cs, slba(cs, 4)));
    wr(cs, 4, 12);
    wr(cs, 5, 8);
    oc_fail_offline(cs, 5);
    g_assert_cmphex(oc_reset(cs, slba(cs, 5)), ==, OC_OFFLINE_CHUNK);
    g_assert_cmpuint(cs->chunks[5].erases, ==, 0);
    wr(cs, 6, 4);
    oc_fail_early_close(cs, 6);
    wr(cs, 23, 4);

    expect_descriptor(cs, 0, FREE, 3, 0);
    expect_descriptor(cs, 1, FREE, 255, 0);
    expect_descriptor(cs, 2, OPEN, 0, 4);
    expect_descriptor(cs, 3, CLOSED, 0, 16);
    expect_descriptor(cs, 4, OPEN, 1, 12);
    expect_descriptor(cs, 5, OFFLINE, 0, 8);
    expect_descriptor(cs, 6, CLOSED, 0, 4);
    for (uint64_t c = 7; c < 23; c++) {
        expect_descriptor(cs, c, FREE, 0, 0);
    }
    expect_descriptor(cs, 23, OPEN, 0, 4);
    /* 255 and 256 resets */
    for (int i = 0; i < 255; i++) {
        ok(oc_reset(cs, slba(cs, 7)));
    }
    expect_descriptor(cs, 7, FREE, 255, 0);
    ok(oc_reset(cs, slba(cs, 7)));
    expect_descriptor(cs, 7, FREE, 255, 0);
    ok(oc_reset(cs, slba(cs, 8)));
    expect_descriptor(cs, 8, FREE, 1, 0);
    oc_chunk_set_free(cs);

    /* a large geometry: SLBA and WP past 32 bits */
    cs = mk(geo(4, 4, 1024, 1u << 20, 4));
    wr(cs, cs->geo.nr_chunks - 1, 8);
    expect_descriptor(cs, cs->geo.nr_chunks - 1, OPEN, 0, 8);
    oc_chunk_set_free(cs);
}

/* ---- vector lists ---- */

static void expect_runs(const OcGeometry *g, const uint64_t *lbas, uint32_t n,
                        const uint32_t *want_start, const uint32_t *want_len, uint32_t nruns)
{
    uint32_t start[OC_MAX_VECTOR + 1], len[OC_MAX_VECTOR + 1];

    start[OC_MAX_VECTOR] = len[OC_MAX_VECTOR] = 0xdeadbeef;
    g_assert_cmpuint(oc_vector_runs(g, lbas, n, start, len), ==, nruns);
    for (uint32_t r = 0; r < nruns; r++) {
        g_assert_cmpuint(start[r], ==, want_start[r]);
        g_assert_cmpuint(len[r], ==, want_len[r]);
    }
    g_assert_cmphex(start[OC_MAX_VECTOR], ==, 0xdeadbeef);
    g_assert_cmphex(len[OC_MAX_VECTOR], ==, 0xdeadbeef);
}

#define U64S(...) ((const uint64_t[]){ __VA_ARGS__ })
#define U32S(...) ((const uint32_t[]){ __VA_ARGS__ })
#define RUNS(lbas, starts, lens, nr) \
    expect_runs(&g, lbas, sizeof(lbas) / sizeof(uint64_t), starts, lens, nr)

static void test_vector_runs(void)
{
    OcGeometry g = base();                             /* 16-sector chunks, 384 sectors */
    uint64_t end, lbas[OC_MAX_VECTOR];
    uint32_t st[OC_MAX_VECTOR], ln[OC_MAX_VECTOR];

    g_assert_true(oc_geometry_check(&g, NULL));
    end = g.nr_sectors;
    /* consecutive in one chunk: one run */
    RUNS(U64S(0, 1, 2, 3), U32S(0), U32S(4), 1);
    RUNS(U64S(40), U32S(0), U32S(1), 1);
    /* a chunk boundary */
    RUNS(U64S(14, 15, 16, 17), U32S(0, 2), U32S(2, 2), 2);
    /* gaps */
    RUNS(U64S(0, 1, 3, 4), U32S(0, 2), U32S(2, 2), 2);
    RUNS(U64S(0, 1, 18, 19, 2, 3), U32S(0, 2, 4), U32S(2, 2, 2), 3);
    /* repeats */
    RUNS(U64S(5, 5, 6), U32S(0, 1), U32S(1, 2), 2);
    /* descending */
    RUNS(U64S(3, 2, 1, 0), U32S(0, 1, 2, 3), U32S(1, 1, 1, 1), 4);
    /* out of range, each alone, even when consecutive */
    RUNS(U64S(end - 2, end - 1, end, end + 1, end + 2),
         U32S(0, 2, 3, 4), U32S(2, 1, 1, 1), 4);
    RUNS(U64S(UINT64_MAX, 0, 1), U32S(0, 1), U32S(1, 2), 2);
    RUNS(U64S(UINT64_MAX - 1, UINT64_MAX, 0), U32S(0, 1, 2), U32S(1, 1, 1), 3);
    /* an LBA in an unused group number (3 groups: group 3 is beyond the end) */
    RUNS(U64S(3ULL << 7, (3ULL << 7) + 1), U32S(0, 1), U32S(1, 1), 2);
    /* nothing */
    g_assert_cmpuint(oc_vector_runs(&g, lbas, 0, st, ln), ==, 0);

    /* 64 consecutive sectors over four chunks */
    for (uint32_t i = 0; i < OC_MAX_VECTOR; i++) {
        lbas[i] = 16 + i;
    }
    expect_runs(&g, lbas, 64, U32S(0, 16, 32, 48), U32S(16, 16, 16, 16), 4);
    /* 64 that alternate between two chunks: 64 runs */
    for (uint32_t i = 0; i < OC_MAX_VECTOR; i++) {
        lbas[i] = (i % 2) * 16 + i / 2;
        st[i] = i;
        ln[i] = 1;
    }
    expect_runs(&g, lbas, 64, st, ln, 64);
    /* 64 out of range */
    for (uint32_t i = 0; i < OC_MAX_VECTOR; i++) {
        lbas[i] = end + i;
    }
    expect_runs(&g, lbas, 64, st, ln, 64);
    /* 64 in one 64-sector chunk: one run */
    {
        OcGeometry g64 = geo(1, 2, 2, 64, 4);
        g_assert_true(oc_geometry_check(&g64, NULL));
        for (uint32_t i = 0; i < OC_MAX_VECTOR; i++) {
            lbas[i] = 64 + i;
        }
        expect_runs(&g64, lbas, 64, U32S(0), U32S(64), 1);
        /* the last one repeated breaks it */
        lbas[63] = lbas[62];
        expect_runs(&g64, lbas, 64, U32S(0, 63), U32S(63, 1), 2);
    }
}

/* ---- the saved state ---- */

static uint8_t *slot(uint8_t *store, uint64_t chunk, unsigned s)
{
    return store + HDR + (chunk * 2 + s) * REC;
}

static uint8_t *newest(uint8_t *store, uint64_t chunk)
{
    return le(slot(store, chunk, 0), 8) > le(slot(store, chunk, 1), 8) ? slot(store, chunk, 0)
                                                                        : slot(store, chunk, 1);
}

static uint8_t *oldest(uint8_t *store, uint64_t chunk)
{
    uint8_t *n = newest(store, chunk);
    return n == slot(store, chunk, 0) ? slot(store, chunk, 1) : slot(store, chunk, 0);
}

/* A set on a fresh, formatted store of its own (sized for `room` bytes at least). */
static OcChunkSet *fresh(OcGeometry g, uint8_t **store, size_t room)
{
    OcChunkSet *cs = mk(g);
    size_t len = MAX(oc_store_size(&cs->geo), room);
    char *err = NULL;

    *store = g_malloc0(len);
    g_assert_cmpint(oc_store_open(cs, *store, &err), ==, OC_STORE_FRESH);
    g_assert_null(err);
    g_assert_true(cs->store == *store);
    oc_store_format(cs);
    return cs;
}

static OcChunkSet *reopen(OcGeometry g, uint8_t *store)
{
    OcChunkSet *cs = mk(g);
    char *err = NULL;

    if (oc_store_open(cs, store, &err) != OC_STORE_LOADED) {
        g_error("reopen refused: %s", err);
    }
    g_assert_null(err);
    return cs;
}

/* The store is refused; err names every word; the set stays as created and usable. */
static void refused(OcGeometry g, uint8_t *store, const char *const *names)
{
    OcChunkSet *cs = mk(g);
    char *err = NULL;

    g_assert_cmpint(oc_store_open(cs, store, &err), ==, OC_STORE_ERROR);
    g_assert_nonnull(err);
    for (const char *const *n = names; *n; n++) {
        if (!strstr(err, *n)) {
            g_error("'%s' does not name '%s'", err, *n);
        }
    }
    g_assert_null(cs->store);
    for (uint64_t c = 0; c < cs->geo.nr_chunks; c++) {
        g_assert_cmpint(cs->chunks[c].state, ==, FREE);
        g_assert_cmpuint(cs->chunks[c].wp, ==, 0);
        g_assert_cmpuint(cs->chunks[c].erases, ==, 0);
    }
    g_assert_cmpuint(cs->nr_open, ==, 0);
    /* refused without an err pointer too */
    g_assert_cmpint(oc_store_open(cs, store, NULL), ==, OC_STORE_ERROR);
    {
        uint8_t *other = g_malloc0(oc_store_size(&cs->geo));
        g_assert_cmpint(oc_store_open(cs, other, NULL), ==, OC_STORE_FRESH);
        oc_chunk_set_free(cs);
        g_free(other);
    }
    g_free(err);
}

static void same_chunks(const OcChunkSet *a, const OcChunkSet *b)
{
    g_assert_cmpuint(a->geo.nr_chunks, ==, b->geo.nr_chunks);
    for (uint64_t c = 0; c < a->geo.nr_chunks; c++) {
        uint8_t da[OC_DESCRIPTOR_BYTES], db[OC_DESCRIPTOR_BYTES];
        if (a->chunks[c].state != b->chunks[c].state || a->chunks[c].wp != b->chunks[c].wp ||
            a->chunks[c].erases != b->chunks[c].erases) {
            g_error("chunk %" G_GUINT64_FORMAT ": state %u wp %" G_GUINT64_FORMAT
                    " erases %u, reopened %u %" G_GUINT64_FORMAT " %u", c,
                    a->chunks[c].state, a->chunks[c].wp, a->chunks[c].erases,
                    b->chunks[c].state, b->chunks[c].wp, b->chunks[c].erases);
        }
        oc_chunk_descriptor(a, c, da);
        oc_chunk_descriptor(b, c, db);
        g_assert_cmpmem(da, sizeof(da), db, sizeof(db));
    }
    g_assert_cmpuint(a->nr_open, ==, b->nr_open);
    for (uint64_t p = 0; p < (uint64_t)a->geo.num_grp * a->geo.num_pu; p++) {
        g_assert_cmpuint(a->open_per_pu[p], ==, b->open_per_pu[p]);
    }
}

/* Random valid commands (and failures) on every chunk; returns the number of changes. */
static uint64_t churn(OcChunkSet *cs, GRand *rnd, int steps)
{
    uint64_t changes = 0;

    for (int i = 0; i < steps; i++) {
        uint64_t c = g_rand_int_range(rnd, 0, (gint32)cs->geo.nr_chunks);
        OcChunk *k = &cs->chunks[c];
        uint64_t lba = slba(cs, c) + k->wp;
        uint32_t what = g_rand_int_range(rnd, 0, 100);

        if (what < 60) {
            uint64_t n = cs->geo.ws_min * (uint64_t)g_rand_int_range(rnd, 1, 4);
            if (oc_write_check(cs, lba, n) == OC_OK) {
                oc_write_commit(cs, lba, n);
                changes++;
            }
        } else if (what < 90) {
            changes += oc_reset(cs, lba - k->wp) == OC_OK;
        } else if (what < 95) {
            if (oc_write_check(cs, lba, cs->geo.ws_min) == OC_OK) {
                oc_fail_write_next_unit(cs, lba, cs->geo.ws_min);
                changes++;
            }
        } else if (what < 99) {
            changes += k->state != OFFLINE;     /* an offline chunk stays as it is */
            oc_fail_early_close(cs, c);
        } else if (g_rand_int_range(rnd, 0, 8) == 0) {
            oc_fail_offline(cs, c);     /* rare: offline chunks stay so */
            changes++;
        }
    }
    return changes;
}

static void test_store_format(void)
{
    OcGeometry g = base();
    uint8_t *store;
    OcChunkSet *cs;

    g.sector_bytes = 512;
    cs = fresh(g, &store, 0);
    g_assert_cmpuint(oc_store_size(&cs->geo), ==, HDR + 24 * 2 * REC);
    /* header: magic, version 1, geometry, sector size, check */
    g_assert_cmpmem(store, 4, "FOC2", 4);
    g_assert_cmpuint(le(store + 4, 4), ==, 1);
    g_assert_cmpuint(le(store + 8, 4), ==, 3);
    g_assert_cmpuint(le(store + 12, 4), ==, 2);
    g_assert_cmpuint(le(store + 16, 4), ==, 4);
    g_assert_cmpuint(le(store + 20, 4), ==, 16);
    g_assert_cmpuint(le(store + 24, 4), ==, 512);
    for (int i = 28; i < 60; i++) {
        g_assert_cmpuint(store[i], ==, 0);
    }
    g_assert_cmpuint(le(store + 60, 4), ==, md5_check(UINT64_MAX, store, 60));
    for (size_t i = HDR; i < oc_store_size(&cs->geo); i++) {
        g_assert_cmpuint(store[i], ==, 0);
    }
    /* chunk 9: written (seq 1 in slot 1), written (seq 2 in slot 0), closed (seq 3, slot 1) */
    wr(cs, 9, 4);
    g_assert_cmpuint(cs->records_written, ==, 1);
    g_assert_cmpuint(le(slot(store, 9, 1), 8), ==, 1);
    g_assert_true(slot(store, 9, 0)[0] == 0 && le(slot(store, 9, 0), 8) == 0);
    wr(cs, 9, 4);
    oc_fail_early_close(cs, 9);
    g_assert_cmpuint(cs->records_written, ==, 3);
    {
        const uint8_t *r = slot(store, 9, 1), *prev = slot(store, 9, 0);
        g_assert_cmpuint(le(r, 8), ==, 3);
        g_assert_cmpuint(le(r + 8, 8), ==, 8);
        g_assert_cmpuint(le(r + 16, 4), ==, 0);
        g_assert_cmpuint(r[20], ==, CLOSED);
        for (int i = 21; i < 28; i++) {
            g_assert_cmpuint(r[i], ==, 0);
        }
        g_assert_cmpuint(le(r + 28, 4), ==, md5_check(9, r, 28));
        g_assert_cmpuint(le(prev, 8), ==, 2);
        g_assert_cmpuint(le(prev + 8, 8), ==, 8);
        g_assert_cmpuint(prev[20], ==, OPEN);
        g_assert_cmpuint(le(prev + 28, 4), ==, md5_check(9, prev, 28));
    }
    ok(oc_reset(cs, slba(cs, 9)));
    g_assert_cmpuint(le(slot(store, 9, 0), 8), ==, 4);
    g_assert_cmpuint(le(slot(store, 9, 0) + 16, 4), ==, 1);
    g_assert_cmpuint(slot(store, 9, 0)[20], ==, FREE);
    /* failed commands write nothing; the other chunks have no record */
    g_assert_cmphex(oc_reset(cs, slba(cs, 9)), ==, OC_INVALID_RESET);
    g_assert_cmphex(oc_write_check(cs, slba(cs, 9) + 4, 4), ==, OC_OUT_OF_ORDER_WRITE);
    g_assert_cmpuint(cs->records_written, ==, 4);
    for (uint64_t c = 0; c < 24; c++) {
        for (int i = 0; i < 2 * REC && c != 9; i++) {
            g_assert_cmpuint(slot(store, c, 0)[i], ==, 0);
        }
    }
    oc_chunk_set_free(cs);
    g_free(store);

    /* without a store nothing is counted */
    cs = mk(base());
    wr(cs, 0, 4);
    g_assert_cmpuint(cs->records_written, ==, 0);
    oc_chunk_set_free(cs);
}

static void test_store_round_trip(void)
{
    OcGeometry g = base();
    GRand *rnd = g_rand_new_with_seed(8);
    uint8_t *store;
    OcChunkSet *cs, *back;
    uint64_t changes;

    g.mccap = OC_MCCAP_MULTI_RESET;
    cs = fresh(g, &store, 0);
    changes = churn(cs, rnd, 3000);
    g_assert_cmpuint(cs->records_written, ==, changes);
    /* the history reached every state */
    {
        bool seen[16] = { false };
        for (uint64_t c = 0; c < cs->geo.nr_chunks; c++) {
            seen[cs->chunks[c].state] = true;
        }
        g_assert_true(seen[FREE]);
        g_assert_true(seen[OPEN]);
        g_assert_true(seen[CLOSED]);
        g_assert_true(seen[OFFLINE]);
    }
    back = reopen(g, store);
    g_assert_cmpuint(back->records_recovered, ==, 0);
    same_chunks(cs, back);
    /* the reopened set goes on where the first stopped, twice over */
    for (int round = 0; round < 2; round++) {
        OcChunkSet *again;
        uint64_t before = back->records_written;

        /* the same commands on both sets: they stay equal */
        GRand *r1 = g_rand_new_with_seed(100 + round), *r2 = g_rand_new_with_seed(100 + round);
        churn(cs, r1, 500);
        changes = churn(back, r2, 500);
        g_rand_free(r1);
        g_rand_free(r2);
        g_assert_cmpuint(back->records_written - before, ==, changes);
        same_chunks(cs, back);
        oc_chunk_set_free(back);
        again = reopen(g, store);
        g_assert_cmpuint(again->records_recovered, ==, 0);
        same_chunks(cs, again);
        back = again;
    }
    oc_chunk_set_free(back);
    oc_chunk_set_free(cs);
    g_free(store);
    g_rand_free(rnd);
}

/* Open chunks after a reopen still count against the limits. */
static void test_store_open_limits(void)
{
    OcGeometry g = base();
    uint8_t *store;
    OcChunkSet *cs;

    g.maxoc = 2;
    g.maxocpu = 1;
    cs = fresh(g, &store, 0);
    wr(cs, 0, 4);
    wr(cs, 4, 8);
    oc_chunk_set_free(cs);
    cs = reopen(g, store);
    g_assert_cmpuint(cs->nr_open, ==, 2);
    g_assert_cmpuint(cs->open_per_pu[0], ==, 1);
    g_assert_cmpuint(cs->open_per_pu[1], ==, 1);
    g_assert_cmphex(oc_write_check(cs, slba(cs, 8), 4), ==, OC_SEQUENCE_ERROR);
    g_assert_cmphex(oc_write_check(cs, slba(cs, 1), 4), ==, OC_SEQUENCE_ERROR);
    wr(cs, 0, 4);
    g_assert_cmpuint(cs->chunks[0].wp, ==, 8);
    wr(cs, 4, 8);
    g_assert_cmpint(cs->chunks[4].state, ==, CLOSED);
    wr(cs, 5, 4);
    oc_chunk_set_free(cs);
    g_free(store);
}

static void test_store_fresh(void)
{
    OcGeometry g = base();
    OcChunkSet *cs = mk(g);
    size_t len = oc_store_size(&cs->geo);
    uint8_t *store = g_malloc0(len);

    g_assert_cmpint(oc_store_open(cs, store, NULL), ==, OC_STORE_FRESH);
    oc_store_format(cs);
    oc_chunk_set_free(cs);
    /* formatted, no record: every chunk Free */
    cs = reopen(g, store);
    for (uint64_t c = 0; c < cs->geo.nr_chunks; c++) {
        g_assert_cmpint(cs->chunks[c].state, ==, FREE);
    }
    oc_chunk_set_free(cs);

    /* records but an all-zero header (never formatted, or the header lost) */
    memset(store, 0, len);
    cs = mk(g);
    g_assert_cmpint(oc_store_open(cs, store, NULL), ==, OC_STORE_FRESH);
    wr(cs, 3, 4);
    oc_chunk_set_free(cs);
    refused(g, store, NAMES("no header", "records"));
    /* a single stray byte in the last record slot */
    memset(store, 0, len);
    store[len - 1] = 1;
    refused(g, store, NAMES("no header"));
    /* oc_store_format without a store does nothing (no crash) */
    cs = mk(g);
    oc_store_format(cs);
    oc_chunk_set_free(cs);
    g_free(store);
}

static void test_store_mismatch(void)
{
    static const struct {
        const char *name;
        uint32_t grp, pu, chk, clba, bytes;
        const char *saved, *now;
    } t[] = {
        { "lnum_ch", 4, 2, 4, 16, 4096, "3 groups", "has 4" },
        { "lnum_ch", 1, 2, 4, 16, 4096, "3 groups", "has 1" },
        { "lnum_lun", 3, 4, 4, 16, 4096, "2 PUs", "has 4" },
        { "devsz_mb", 3, 2, 8, 16, 4096, "4 chunks", "has 8" },
        { "devsz_mb", 3, 2, 2, 16, 4096, "4 chunks", "has 2" },
        { "lsecs_per_pg", 3, 2, 4, 32, 4096, "16 sectors", "has 32" },
        { "lsec_size", 3, 2, 4, 16, 512, "4096 sector size", "has 512" },
    };
    OcGeometry g = base();
    uint8_t *store;
    OcChunkSet *cs = fresh(g, &store, 64 * 1024);

    wr(cs, 2, 4);
    oc_chunk_set_free(cs);
    for (size_t i = 0; i < G_N_ELEMENTS(t); i++) {
        OcGeometry other = geo(t[i].grp, t[i].pu, t[i].chk, t[i].clba, 4);
        other.sector_bytes = t[i].bytes;
        refused(other, store, NAMES(t[i].name, t[i].saved, t[i].now));
    }
    /* ws_min, the limits and mccap are not part of the saved state: accepted */
    {
        OcGeometry other = g;
        other.ws_min = other.ws_opt = other.mw_cunits = 8;
        other.maxoc = 3;
        other.mccap = OC_MCCAP_MULTI_RESET;
        cs = reopen(other, store);
        g_assert_cmpuint(cs->chunks[2].wp, ==, 4);
        oc_chunk_set_free(cs);
    }
    g_free(store);
}

static void test_store_header_damage(void)
{
    OcGeometry g = base();
    uint8_t *store;
    OcChunkSet *cs = fresh(g, &store, 0);
    size_t len = oc_store_size(&cs->geo);
    g_autofree uint8_t *good = NULL;

    wr(cs, 2, 4);
    oc_chunk_set_free(cs);
    good = g_memdup2(store, len);
    /* every bit of the header */
    for (int bit = 0; bit < HDR * 8; bit++) {
        memcpy(store, good, len);
        store[bit / 8] ^= 1u << (bit % 8);
        cs = mk(g);
        g_assert_cmpint(oc_store_open(cs, store, NULL), ==, OC_STORE_ERROR);
        g_assert_null(cs->store);
        oc_chunk_set_free(cs);
    }
    /* the messages: a foreign area, another format version, a bad checksum */
    memcpy(store, good, len);
    memcpy(store, "XXXX", 4);
    refused(g, store, NAMES("something else"));
    memcpy(store, good, len);
    put_le(store + 4, 2, 4);
    put_le(store + 60, md5_check(UINT64_MAX, store, 60), 4);
    refused(g, store, NAMES("format 2", "format 1"));
    memcpy(store, good, len);
    store[40] ^= 0x10;
    refused(g, store, NAMES("header", "damaged"));
    memcpy(store, good, len);
    store[61] ^= 0x01;
    refused(g, store, NAMES("header", "damaged"));
    /* a header whose check matches a changed geometry field still names the field */
    memcpy(store, good, len);
    put_le(store + 8, 7, 4);
    put_le(store + 60, md5_check(UINT64_MAX, store, 60), 4);
    refused(g, store, NAMES("lnum_ch", "7"));
    g_free(store);
}

/*
 * The history of chunk 6 used below: written 4 (seq 1, slot 1), written 4 (seq 2, slot
 * 0): the newest is wp 8, the previous wp 4. Chunk 7: one record only (written 4).
 */
static void torn_setup(OcGeometry g, uint8_t **store, size_t *len)
{
    OcChunkSet *cs = fresh(g, store, 0);

    *len = oc_store_size(&cs->geo);
    wr(cs, 6, 4);
    wr(cs, 6, 4);
    wr(cs, 7, 4);
    wr(cs, 10, 16);
    ok(oc_reset(cs, slba(cs, 10)));
    oc_chunk_set_free(cs);
}

static void expect_chunk(const OcChunkSet *cs, uint64_t c, uint8_t st, uint64_t wp,
                         uint32_t erases)
{
    g_assert_cmpint(cs->chunks[c].state, ==, st);
    g_assert_cmpuint(cs->chunks[c].wp, ==, wp);
    g_assert_cmpuint(cs->chunks[c].erases, ==, erases);
}

static void test_store_torn(void)
{
    OcGeometry g = base();
    uint8_t *store;
    size_t len;
    g_autofree uint8_t *good = NULL;
    OcChunkSet *cs;
    uint8_t *r;

    torn_setup(g, &store, &len);
    good = g_memdup2(store, len);
    cs = reopen(g, store);
    g_assert_cmpuint(cs->records_recovered, ==, 0);
    expect_chunk(cs, 6, OPEN, 8, 0);
    expect_chunk(cs, 7, OPEN, 4, 0);
    expect_chunk(cs, 10, FREE, 0, 1);
    oc_chunk_set_free(cs);

    /* every bit of chunk 6's newest record: the previous record wins */
    g_assert_true(newest(good, 6) == slot(good, 6, 0));
    for (int bit = 0; bit < REC * 8; bit++) {
        memcpy(store, good, len);
        r = slot(store, 6, 0);
        r[bit / 8] ^= 1u << (bit % 8);
        cs = reopen(g, store);
        g_assert_cmpuint(cs->records_recovered, ==, 1);
        expect_chunk(cs, 6, OPEN, 4, 0);
        expect_chunk(cs, 7, OPEN, 4, 0);
        expect_chunk(cs, 10, FREE, 0, 1);
        g_assert_cmpuint(cs->nr_open, ==, 2);
        /* the next change goes into the slot that held the torn record */
        wr(cs, 6, 4);
        g_assert_cmpuint(le(slot(store, 6, 0), 8), ==, 2);
        oc_chunk_set_free(cs);
        cs = reopen(g, store);
        g_assert_cmpuint(cs->records_recovered, ==, 0);
        expect_chunk(cs, 6, OPEN, 8, 0);
        oc_chunk_set_free(cs);
    }
    /* a torn write: only the first half of the new record reached the store */
    memcpy(store, good, len);
    memset(slot(store, 6, 0) + 16, 0, 16);
    cs = reopen(g, store);
    g_assert_cmpuint(cs->records_recovered, ==, 1);
    expect_chunk(cs, 6, OPEN, 4, 0);
    oc_chunk_set_free(cs);
    /* two chunks torn at once */
    memcpy(store, good, len);
    slot(store, 6, 0)[3] ^= 0x20;
    newest(store, 10)[8] ^= 0x01;
    cs = reopen(g, store);
    g_assert_cmpuint(cs->records_recovered, ==, 2);
    expect_chunk(cs, 6, OPEN, 4, 0);
    expect_chunk(cs, 10, CLOSED, 16, 0);
    g_assert_cmpuint(cs->nr_open, ==, 2);
    oc_chunk_set_free(cs);

    /* records with a valid check but impossible contents are not valid either */
    {
        static const struct { int off, bytes; uint64_t v; } bad[] = {
            { 20, 1, 0x3 }, { 20, 1, 0 }, { 20, 1, 0x10 },   /* states that do not exist */
            { 8, 8, 17 }, { 8, 8, UINT64_MAX },              /* wp past the chunk */
            { 0, 8, 3 },                                     /* seq of the other slot */
        };
        for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
            memcpy(store, good, len);
            r = slot(store, 6, 0);
            put_le(r + bad[i].off, bad[i].v, bad[i].bytes);
            put_le(r + 28, md5_check(6, r, 28), 4);
            cs = reopen(g, store);
            g_assert_cmpuint(cs->records_recovered, ==, 1);
            expect_chunk(cs, 6, OPEN, 4, 0);
            oc_chunk_set_free(cs);
        }
    }
    /* a record of another chunk copied over: the chunk index is in the check */
    memcpy(store, good, len);
    memcpy(slot(store, 6, 0), slot(store, 7, 1), REC);
    memcpy(slot(store, 6, 1), slot(store, 7, 1), REC);
    refused(g, store, NAMES("chunk 6", "both"));
    /* both records of a chunk damaged */
    memcpy(store, good, len);
    newest(store, 6)[9] ^= 0x01;
    oldest(store, 6)[9] ^= 0x01;
    refused(g, store, NAMES("chunk 6", "damaged", "both"));
    memcpy(store, good, len);
    memset(slot(store, 10, 0), 0xff, 2 * REC);
    refused(g, store, NAMES("chunk 10"));
    g_free(store);
}

/*
 * The first record of a chunk torn (one slot all zero, the other damaged): a power cut
 * during the chunk's first change; the chunk is as it was before it, Free and unwritten,
 * as the zone store does for a zone.
 */
static void test_store_torn_first(void)
{
    OcGeometry g = base();
    uint8_t *store;
    size_t len;
    OcChunkSet *cs;

    torn_setup(g, &store, &len);
    /* chunk 7's only record: seq 1 in slot 1 */
    g_assert_true(le(slot(store, 7, 1), 8) == 1 && le(slot(store, 7, 0), 8) == 0);
    slot(store, 7, 1)[8] ^= 0x04;
    cs = reopen(g, store);
    g_assert_cmpuint(cs->records_recovered, ==, 1);
    expect_chunk(cs, 7, FREE, 0, 0);
    expect_chunk(cs, 6, OPEN, 8, 0);
    g_assert_cmpuint(cs->nr_open, ==, 1);
    /* and the chunk works from there, its next record in slot 1 again */
    wr(cs, 7, 8);
    g_assert_cmpuint(le(slot(store, 7, 1), 8), ==, 1);
    oc_chunk_set_free(cs);
    cs = reopen(g, store);
    g_assert_cmpuint(cs->records_recovered, ==, 0);
    expect_chunk(cs, 7, OPEN, 8, 0);
    oc_chunk_set_free(cs);
    g_free(store);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/ocssd-chunk/geometry/refusals", test_geometry_refusals);
    g_test_add_func("/ocssd-chunk/geometry/derived", test_geometry_derived);
    g_test_add_func("/ocssd-chunk/lba-format", test_lba_format);
    g_test_add_func("/ocssd-chunk/states/table", test_state_table);
    g_test_add_func("/ocssd-chunk/states/fill-closes", test_fill_closes);
    g_test_add_func("/ocssd-chunk/open-limits", test_open_limits);
    g_test_add_func("/ocssd-chunk/open-limits/span", test_open_limits_span);
    g_test_add_func("/ocssd-chunk/write-rules", test_write_rules);
    g_test_add_func("/ocssd-chunk/read-rules", test_read_rules);
    g_test_add_func("/ocssd-chunk/wear-and-descriptors", test_wear_and_descriptors);
    g_test_add_func("/ocssd-chunk/vector-runs", test_vector_runs);
    g_test_add_func("/ocssd-chunk/store/format", test_store_format);
    g_test_add_func("/ocssd-chunk/store/round-trip", test_store_round_trip);
    g_test_add_func("/ocssd-chunk/store/open-limits", test_store_open_limits);
    g_test_add_func("/ocssd-chunk/store/fresh", test_store_fresh);
    g_test_add_func("/ocssd-chunk/store/mismatch", test_store_mismatch);
    g_test_add_func("/ocssd-chunk/store/header-damage", test_store_header_damage);
    g_test_add_func("/ocssd-chunk/store/torn-record", test_store_torn);
    g_test_add_func("/ocssd-chunk/store/torn-first-record", test_store_torn_first);
    return g_test_run();
}
