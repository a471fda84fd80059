/*
 * The DRAM write buffer of the conventional FTLs; see write-buffer.h.
 *
 * Room is counted in places, one per unit of capacity, each with the time it is free
 * from: a held unit occupies one; writing it out gives it back, free when its program
 * completes. Places are interchangeable, so they live in one heap by that time, and a new
 * unit takes the earliest (waiting for it when it is still in the future).
 *
 * QEMU-free. SPDX-License-Identifier: GPL-2.0-or-later
 */
#include <glib.h>
#include <inttypes.h>
#include <string.h>

#include "../sched/deadline-heap.h"
#include "write-buffer.h"

#define NO_SLOT UINT32_MAX

/* A unit held: which, how placed, and its place in the write-out order. */
typedef struct WbSlot {
    uint64_t unit, tag;
    uint32_t prev, next;            /* oldest first */
} WbSlot;

struct FtlWb {
    FtlWbConfig cfg;
    FtlWbSink sink;
    uint32_t cap, held, high, low;  /* in units */
    uint32_t spu;                   /* sectors per unit */
    uint32_t words;                 /* of a slot's mask of sectors written */
    WbSlot *slots;
    uint64_t *masks;
    uint8_t *data;                  /* cap units of bytes, when data is kept */
    uint32_t *free_slots, nfree;
    uint32_t head, tail;            /* write-out order */
    GHashTable *index;              /* unit + 1 -> slot + 1 */
    DeadlineHeap places;            /* free places, by when they are free */
    uint64_t last_done;             /* the latest program the buffer booked */
    uint64_t window[FTL_WB_WINDOW]; /* completions of the latest batches */
    uint32_t win_next;
    bool draining;                  /* between the high and the low watermark */
    uint64_t *batch;                /* units of one program call */
    uint32_t *pick;                 /* its slots */
    FtlWbStats st;
};

bool ftl_wb_check(const FtlWbConfig *c, char **err)
{
    if (c->unit_bytes < FTL_WB_SECTOR || c->unit_bytes > FTL_WB_MAX_UNIT ||
        c->unit_bytes % FTL_WB_SECTOR) {
        *err = g_strdup_printf("the write buffer's unit (the mapping unit, %" PRIu64
                               " bytes) must be a multiple of %u up to %u", c->unit_bytes,
                               FTL_WB_SECTOR, FTL_WB_MAX_UNIT);
        return false;
    }
    if (c->bytes < c->unit_bytes || c->bytes / c->unit_bytes > UINT32_MAX / 2) {
        *err = g_strdup_printf("wb_size_mb: %" PRIu64 " bytes holds no unit of %" PRIu64
                               " or too many", c->bytes, c->unit_bytes);
        return false;
    }
    if (c->high_pct < 1 || c->high_pct > 100 || c->low_pct >= c->high_pct) {
        *err = g_strdup_printf("wb_high_pct=%u, wb_low_pct=%u: allowed 0 <= low < high <= "
                               "100, high >= 1", c->high_pct, c->low_pct);
        return false;
    }
    return true;
}

static uint32_t slot_of(const FtlWb *wb, uint64_t unit)
{
    return GPOINTER_TO_UINT(g_hash_table_lookup(wb->index, GSIZE_TO_POINTER(unit + 1))) - 1;
}

static uint8_t *slot_data(const FtlWb *wb, uint32_t s)
{
    return wb->data + (uint64_t)s * wb->cfg.unit_bytes;
}

static void mask_set(FtlWb *wb, uint32_t s, uint32_t from, uint32_t to, bool on)
{
    uint64_t *m = &wb->masks[(uint64_t)s * wb->words];

    for (uint32_t i = from; i < to; i++) {
        if (on) {
            m[i / 64] |= 1ULL << (i % 64);
        } else {
            m[i / 64] &= ~(1ULL << (i % 64));
        }
    }
}

static bool has_sector(const FtlWb *wb, uint32_t s, uint32_t i)
{
    return wb->masks[(uint64_t)s * wb->words + i / 64] >> (i % 64) & 1;
}

static bool mask_all(const FtlWb *wb, uint32_t s, uint32_t from, uint32_t to)
{
    for (uint32_t i = from; i < to; i++) {
        if (!has_sector(wb, s, i)) {
            return false;
        }
    }
    return true;
}

static bool mask_empty(const FtlWb *wb, uint32_t s)
{
    for (uint32_t i = 0; i < wb->words; i++) {
        if (wb->masks[(uint64_t)s * wb->words + i]) {
            return false;
        }
    }
    return true;
}

static void unlink_slot(FtlWb *wb, uint32_t s)
{
    WbSlot *e = &wb->slots[s];

    if (e->prev == NO_SLOT) {
        wb->head = e->next;
    } else {
        wb->slots[e->prev].next = e->next;
    }
    if (e->next == NO_SLOT) {
        wb->tail = e->prev;
    } else {
        wb->slots[e->next].prev = e->prev;
    }
}

/* The unit leaves the buffer; its place is free from `at`. */
static void release(FtlWb *wb, uint32_t s, uint64_t at)
{
    unlink_slot(wb, s);
    g_hash_table_remove(wb->index, GSIZE_TO_POINTER(wb->slots[s].unit + 1));
    wb->free_slots[wb->nfree++] = s;
    deadline_heap_push(&wb->places, at, wb, NULL);
    wb->st.held_units = --wb->held;
}

/* The runs of a slot's sectors go to the data area. */
static void put_slot(FtlWb *wb, uint32_t s)
{
    uint64_t base = wb->slots[s].unit * wb->cfg.unit_bytes;
    uint32_t i = 0;

    while (i < wb->spu) {
        uint32_t j = i;
        while (j < wb->spu && has_sector(wb, s, j)) {
            j++;
        }
        if (j > i) {
            wb->sink.put(wb->sink.put_opaque, base + (uint64_t)i * FTL_WB_SECTOR,
                         slot_data(wb, s) + (uint64_t)i * FTL_WB_SECTOR,
                         (uint64_t)(j - i) * FTL_WB_SECTOR);
        }
        i = j + 1;
    }
}

/* A batch's completion: one more in the window of the latest ones. */
static void batch_done(FtlWb *wb, uint64_t t)
{
    wb->window[wb->win_next] = t;
    wb->win_next = (wb->win_next + 1) % FTL_WB_WINDOW;
    wb->last_done = MAX(wb->last_done, t);
}

/* Of the latest FTL_WB_WINDOW batches, those still programming at now. */
static uint32_t in_flight(const FtlWb *wb, uint64_t now)
{
    uint32_t n = 0;

    for (uint32_t i = 0; i < FTL_WB_WINDOW; i++) {
        n += wb->window[i] > now;
    }
    return n;
}

/*
 * Programs list[0..n) in batches of one tag and at most cfg.batch units (their data first
 * to the data area), handed to the FTL cfg.call_units at a time: each call's places are
 * free when its programs complete, so a stripe frees its places chip by chip. The latest
 * completion.
 */
static uint64_t program(FtlWb *wb, const uint32_t *list, uint32_t n, FtlWbCause cause,
                        uint64_t now)
{
    uint64_t done = now;

    for (uint32_t i = 0; i < n;) {
        uint64_t tag = wb->slots[list[i]].tag, batch_t = now;

        for (uint32_t b = 0; i < n && b < wb->cfg.batch && wb->slots[list[i]].tag == tag;) {
            uint32_t k = 0, first = i;
            uint64_t t;

            while (i < n && k < wb->cfg.call_units && b < wb->cfg.batch &&
                   wb->slots[list[i]].tag == tag) {
                if (wb->sink.put) {
                    put_slot(wb, list[i]);
                }
                wb->batch[k++] = wb->slots[list[i++]].unit;
                b++;
            }
            t = wb->sink.program(wb->sink.opaque, wb->batch, k, tag, now);
            for (uint32_t j = first; j < i; j++) {
                release(wb, list[j], t);
            }
            batch_t = MAX(batch_t, t);
        }
        batch_done(wb, batch_t);
        done = MAX(done, batch_t);
    }
    wb->st.written_out[cause] += n;
    return done;
}

/* The oldest batch of at most max units (of the oldest one's tag); its completion. */
static uint64_t write_batch(FtlWb *wb, uint32_t max, FtlWbCause cause, uint64_t now)
{
    uint32_t n = 0, tag_of = wb->head;

    max = MIN(max, wb->cfg.batch);
    for (uint32_t s = wb->head; s != NO_SLOT && n < max; s = wb->slots[s].next) {
        if (wb->slots[s].tag == wb->slots[tag_of].tag) {
            wb->pick[n++] = s;
        }
    }
    return program(wb, wb->pick, n, cause, now);
}

/* Everything held beyond `keep` units, at once (the host asked, or nothing else runs). */
static uint64_t write_out(FtlWb *wb, uint32_t keep, FtlWbCause cause, uint64_t now)
{
    uint64_t done = now;

    while (wb->held > keep) {
        uint64_t t = write_batch(wb, wb->held - keep, cause, now);
        done = MAX(done, t);
    }
    return done;
}

/*
 * Watermark write-out at the flash's pace: from when more than `high` units are held
 * until `low` are, a batch whenever fewer than FTL_WB_WINDOW are programming, so that the
 * chips never hold more than that of the buffer's work queued ahead of reads.
 */
static void pump(FtlWb *wb, uint64_t now)
{
    wb->draining |= wb->held > wb->high;
    while (wb->draining && wb->held > wb->low && in_flight(wb, now) < FTL_WB_WINDOW) {
        write_batch(wb, wb->held - wb->low, FTL_WB_WATERMARK, now);
    }
    wb->draining &= wb->held > wb->low;
}

/*
 * A place for a new unit: when it is free. With every place holding data, the oldest
 * batch goes to flash and the write waits for it.
 */
static uint64_t take_place(FtlWb *wb, uint64_t now)
{
    uint64_t at;

    if (deadline_heap_empty(&wb->places)) {
        write_batch(wb, UINT32_MAX, FTL_WB_SPACE, now);
    }
    at = deadline_heap_min(&wb->places);
    deadline_heap_pop_due(&wb->places, UINT64_MAX);
    return at;
}

/* The held slot of unit, taken if it was not held; sets *at to when it may be written. */
static uint32_t hold(FtlWb *wb, uint64_t unit, uint64_t tag, uint64_t *at)
{
    uint32_t s = slot_of(wb, unit);
    uint64_t free_at;
    WbSlot *e;

    if (s != NO_SLOT) {
        wb->st.absorbed_units++;
        wb->slots[s].tag = tag;         /* the newest write's placement */
        return s;
    }
    free_at = take_place(wb, *at);     /* once: glib's MAX evaluates twice */
    *at = MAX(*at, free_at);
    s = wb->free_slots[--wb->nfree];
    e = &wb->slots[s];
    memset(&wb->masks[(uint64_t)s * wb->words], 0, wb->words * sizeof(uint64_t));
    e->unit = unit;
    e->tag = tag;
    e->next = NO_SLOT;
    e->prev = wb->tail;
    if (wb->tail == NO_SLOT) {
        wb->head = s;
    } else {
        wb->slots[wb->tail].next = s;
    }
    wb->tail = s;
    g_hash_table_insert(wb->index, GSIZE_TO_POINTER(unit + 1), GUINT_TO_POINTER(s + 1));
    wb->st.held_units = ++wb->held;
    return s;
}

/* The part of unit u that [offset, end) covers, in sectors of the unit. */
static void span(const FtlWb *wb, uint64_t u, uint64_t offset, uint64_t end, uint32_t *from,
                 uint32_t *to)
{
    uint64_t ub = wb->cfg.unit_bytes, lo = MAX(offset, u * ub), hi = MIN(end, (u + 1) * ub);

    *from = (lo - u * ub) / FTL_WB_SECTOR;
    *to = (hi - u * ub + FTL_WB_SECTOR - 1) / FTL_WB_SECTOR;
}

uint64_t ftl_wb_write(FtlWb *wb, uint64_t offset, uint64_t len, const void *data,
                      uint64_t tag, bool fua, uint64_t now)
{
    uint64_t ub = wb->cfg.unit_bytes, end = offset + len, at = now;
    uint64_t first = offset / ub, last = (end + ub - 1) / ub;

    for (uint64_t u = first; u < last; u++) {
        uint32_t from, to, s = hold(wb, u, tag, &at);

        span(wb, u, offset, end, &from, &to);
        mask_set(wb, s, from, to, true);
        if (wb->sink.put && data) {
            uint64_t lo = MAX(offset, u * ub), hi = MIN(end, (u + 1) * ub);
            memcpy(slot_data(wb, s) + (lo - u * ub), (const uint8_t *)data + (lo - offset),
                   hi - lo);
        }
    }
    wb->st.write_units += last - first;
    if (at > now) {
        wb->st.waits++;
        wb->st.wait_ns += at - now;
    }
    if (fua && !wb->cfg.plp) {
        /*
         * This write's units still held (a write larger than the buffer wrote some out
         * already: last_done covers those).
         */
        g_autofree uint32_t *mine = g_new(uint32_t, last - first);
        uint32_t n = 0;

        for (uint64_t u = first; u < last; u++) {
            uint32_t s = slot_of(wb, u);
            if (s != NO_SLOT) {
                mine[n++] = s;
            }
        }
        uint64_t done = program(wb, mine, n, FTL_WB_FUA, at);
        at = MAX(at, MAX(done, wb->last_done));
    } else {
        pump(wb, at);
    }
    return at;
}

uint64_t ftl_wb_read(FtlWb *wb, uint64_t offset, uint64_t len, void *out, uint64_t now)
{
    uint64_t ub = wb->cfg.unit_bytes, end = offset + len, done = now;
    uint64_t first = offset / ub, last = (end + ub - 1) / ub, miss_from = end;

    for (uint64_t u = first; u <= last; u++) {
        uint64_t lo = MAX(offset, u * ub), hi = MIN(end, (u + 1) * ub);
        uint32_t s = u < last ? slot_of(wb, u) : NO_SLOT, from, to;
        bool hit = false;

        if (s != NO_SLOT) {
            span(wb, u, offset, end, &from, &to);
            hit = mask_all(wb, s, from, to);
            if (out && wb->sink.put) {
                /* the sectors it holds are newer than the data area's, hit or not */
                for (uint32_t i = from; i < to; i++) {
                    uint64_t a = MAX(lo, u * ub + (uint64_t)i * FTL_WB_SECTOR);
                    uint64_t b = MIN(hi, u * ub + (uint64_t)(i + 1) * FTL_WB_SECTOR);
                    if (has_sector(wb, s, i)) {
                        memcpy((uint8_t *)out + (a - offset), slot_data(wb, s) + (a - u * ub),
                               b - a);
                    }
                }
            }
        }
        if (u < last && !hit && miss_from == end) {
            miss_from = lo;         /* a run of units read from flash starts */
        } else if ((u == last || hit) && miss_from < end) {
            uint64_t run_end = u < last ? lo : end;
            uint64_t t = wb->sink.read(wb->sink.opaque, miss_from, run_end - miss_from, now);
            done = MAX(done, t);
            wb->st.read_miss_bytes += run_end - miss_from;
            miss_from = end;
        }
        if (hit) {
            wb->st.read_hit_bytes += hi - lo;
        }
    }
    return done;
}

void ftl_wb_drop(FtlWb *wb, uint64_t offset, uint64_t len)
{
    uint64_t ub = wb->cfg.unit_bytes, end = offset + len;
    uint64_t first = offset / ub, last = (end + ub - 1) / ub;

    if (last - first > wb->held) {
        /* a large range: look at what is held, not at every unit */
        for (uint32_t s = wb->head, next; s != NO_SLOT; s = next) {
            next = wb->slots[s].next;
            if (wb->slots[s].unit >= first && wb->slots[s].unit < last) {
                uint32_t from, to;
                span(wb, wb->slots[s].unit, offset, end, &from, &to);
                mask_set(wb, s, from, to, false);
                if (mask_empty(wb, s)) {
                    release(wb, s, 0);
                    wb->st.dropped_units++;
                }
            }
        }
        return;
    }
    for (uint64_t u = first; u < last; u++) {
        uint32_t s = slot_of(wb, u), from, to;
        if (s != NO_SLOT) {
            span(wb, u, offset, end, &from, &to);
            mask_set(wb, s, from, to, false);
            if (mask_empty(wb, s)) {
                release(wb, s, 0);
                wb->st.dropped_units++;
            }
        }
    }
}

uint64_t ftl_wb_flush(FtlWb *wb, uint64_t now)
{
    if (wb->cfg.plp) {
        return now;         /* what it holds is already safe */
    }
    write_out(wb, 0, FTL_WB_FLUSH, now);
    return MAX(now, wb->last_done);
}

uint64_t ftl_wb_shutdown(FtlWb *wb, uint64_t now)
{
    write_out(wb, 0, FTL_WB_SHUTDOWN, now);
    return MAX(now, wb->last_done);
}

void ftl_wb_idle(FtlWb *wb, uint64_t now)
{
    write_out(wb, wb->low, FTL_WB_IDLE, now);
    wb->draining = false;
}

/* Every place free from `at`, nothing held. */
static void empty(FtlWb *wb, uint64_t at)
{
    wb->draining = false;
    while (wb->head != NO_SLOT) {
        release(wb, wb->head, at);
    }
}

void ftl_wb_power_loss(FtlWb *wb, uint64_t now)
{
    uint64_t units = wb->held, pb = nand_page_bytes(&wb->cfg.nand->geo), done;

    if (!wb->cfg.plp) {
        wb->st.lost_units += units;
        empty(wb, now);
        return;
    }
    done = write_out(wb, 0, FTL_WB_POWER, now);
    wb->st.plp_units = units;
    wb->st.plp_ns = done - now;
    wb->st.plp_uj = nand_hold_up_uj(wb->cfg.nand, wb->cfg.ctrl_mw, wb->cfg.chip_mw,
                                    (units * wb->cfg.unit_bytes + pb - 1) / pb, done - now);
}

FtlWb *ftl_wb_new(const FtlWbConfig *c, const FtlWbSink *sink, char **err)
{
    FtlWb *wb = g_new0(FtlWb, 1);

    wb->cfg = *c;
    wb->cfg.batch = MAX(c->batch, 1);
    wb->cfg.call_units = c->call_units ? MIN(c->call_units, wb->cfg.batch) : wb->cfg.batch;
    wb->sink = *sink;
    wb->cap = c->bytes / c->unit_bytes;
    /* at least one unit is written out each time, and one stays free for a new write */
    wb->high = MIN((uint64_t)wb->cap * c->high_pct / 100, wb->cap - 1);
    wb->low = MIN((uint64_t)wb->cap * c->low_pct / 100, wb->high ? wb->high - 1 : 0);
    wb->spu = c->unit_bytes / FTL_WB_SECTOR;
    wb->words = (wb->spu + 63) / 64;
    wb->slots = g_new0(WbSlot, wb->cap);
    wb->masks = g_new0(uint64_t, (uint64_t)wb->cap * wb->words);
    wb->free_slots = g_new(uint32_t, wb->cap);
    wb->batch = g_new(uint64_t, wb->cfg.call_units);
    wb->pick = g_new(uint32_t, wb->cfg.batch);
    if (sink->put) {
        /* touched as it fills: a large buffer costs host memory only when used */
        wb->data = g_try_malloc((uint64_t)wb->cap * c->unit_bytes);
        if (!wb->data) {
            *err = g_strdup_printf("wb_size_mb: %" PRIu64 " MiB of host memory for the "
                                   "write buffer's data could not be allocated",
                                   c->bytes >> 20);
            ftl_wb_free(wb);
            return NULL;
        }
    }
    wb->index = g_hash_table_new(g_direct_hash, g_direct_equal);
    deadline_heap_init(&wb->places);
    for (uint32_t i = 0; i < wb->cap; i++) {
        wb->free_slots[wb->nfree++] = wb->cap - 1 - i;
        deadline_heap_push(&wb->places, 0, wb, NULL);
    }
    wb->head = wb->tail = NO_SLOT;
    return wb;
}

FtlWb *ftl_wb_for_media(FemuMedia *m, const NandModel *nand, uint32_t units_per_pg,
                        const FtlWbConfig *c, const FtlWbSink *sink, const FemuWbData *data,
                        char **err)
{
    FtlWbConfig cfg = *c;
    FtlWbSink s = *sink;

    if (data) {
        m->wb_data = *data;
        s.put = femu_media_put_data;
        s.put_opaque = m;
    }
    cfg.nand = nand;
    /* a stripe: one whole (multi-plane) program on every chip, handed on program by program */
    cfg.call_units = nand->geo.pls_per_lun * MAX(units_per_pg, 1);
    cfg.batch = nand_luns(&nand->geo) * cfg.call_units;
    return ftl_wb_new(&cfg, &s, err);
}

void ftl_wb_free(FtlWb *wb)
{
    if (!wb) {
        return;
    }
    deadline_heap_destroy(&wb->places);
    if (wb->index) {
        g_hash_table_destroy(wb->index);
    }
    g_free(wb->data);
    g_free(wb->batch);
    g_free(wb->pick);
    g_free(wb->free_slots);
    g_free(wb->masks);
    g_free(wb->slots);
    g_free(wb);
}

const FtlWbStats *ftl_wb_stats(const FtlWb *wb)
{
    return &wb->st;
}

void ftl_wb_emit_stats(const FtlWb *wb, FemuMediaStatFn *emit, void *opaque)
{
    static const char *const cause[FTL_WB_CAUSES] = {
        "watermark", "space", "flush", "fua", "idle", "shutdown", "power",
    };
    const FtlWbStats *s = ftl_wb_stats(wb);

    emit(opaque, "wb_held_units", s->held_units);
    emit(opaque, "wb_write_units", s->write_units);
    emit(opaque, "wb_absorbed_units", s->absorbed_units);
    for (int c = 0; c < FTL_WB_CAUSES; c++) {
        g_autofree char *name = g_strdup_printf("wb_written_out_%s", cause[c]);
        emit(opaque, name, s->written_out[c]);
    }
    emit(opaque, "wb_waits", s->waits);
    emit(opaque, "wb_wait_ns", s->wait_ns);
    emit(opaque, "wb_read_hit_bytes", s->read_hit_bytes);
    emit(opaque, "wb_read_miss_bytes", s->read_miss_bytes);
    emit(opaque, "wb_dropped_units", s->dropped_units);
    emit(opaque, "wb_lost_units", s->lost_units);
    emit(opaque, "wb_plp_units", s->plp_units);
    emit(opaque, "wb_plp_ns", s->plp_ns);
    emit(opaque, "wb_plp_nj", (uint64_t)(s->plp_uj * 1000 + 0.5));
}
