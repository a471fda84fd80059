/*
 * Firmware cores and the PCIe link; see frontend.h.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "frontend.h"
#include "media.h"
#include "../nand/timeline.h"

#include <glib.h>

struct FemuFrontend {
    FemuFrontendConfig cfg;
    uint64_t lane_rate;         /* bytes per microsecond of all lanes (0: no link) */
    uint64_t *core_free;        /* when each firmware core is next free */
    Timeline link[2];           /* [0] to the device, [1] to the host */
    FemuFrontendStats st;
};

uint32_t femu_pcie_lane_mbps(uint32_t gen)
{
    /* 2.5 and 5 GT/s with 8b/10b; 8, 16 and 32 GT/s with 128b/130b */
    static const uint32_t mbps[FEMU_PCIE_MAX_GEN + 1] = { 0, 250, 500, 985, 1969, 3938 };
    return gen <= FEMU_PCIE_MAX_GEN ? mbps[gen] : 0;
}

bool femu_frontend_check(const FemuFrontendConfig *c, char **err)
{
    uint32_t l = c->pcie_lanes;

    if (c->pcie_gen > FEMU_PCIE_MAX_GEN) {
        *err = g_strdup_printf("pcie_gen=%u is out of range: allowed 0 (no link model) or "
                               "1..%u", c->pcie_gen, FEMU_PCIE_MAX_GEN);
        return false;
    }
    if (l < 1 || l > FEMU_PCIE_MAX_LANES || (l & (l - 1))) {
        *err = g_strdup_printf("pcie_lanes=%u is not a link width: allowed 1, 2, 4, 8, 16", l);
        return false;
    }
    if (c->fw_cores > FEMU_FW_MAX_CORES) {
        *err = g_strdup_printf("fw_cores=%u is out of range: allowed 0 (no controller model) "
                               "or 1..%u", c->fw_cores, FEMU_FW_MAX_CORES);
        return false;
    }
    if (c->fw_cmd_ns > 1000000000ULL) {
        *err = g_strdup_printf("fw_cmd_ns=%" G_GUINT64_FORMAT " is out of range: allowed "
                               "0..1000000000", c->fw_cmd_ns);
        return false;
    }
    if (c->time_scale < 1 || c->time_scale > 1000000) {
        *err = g_strdup_printf("time_scale=%u is out of range: allowed 1..1000000",
                               c->time_scale);
        return false;
    }
    return true;
}

FemuFrontend *femu_frontend_new(const FemuFrontendConfig *c, char **err)
{
    FemuFrontend *f;

    *err = NULL;
    if (!femu_frontend_check(c, err) || (!c->pcie_gen && !c->fw_cores)) {
        return NULL;
    }
    f = g_new0(FemuFrontend, 1);
    f->cfg = *c;
    f->lane_rate = c->pcie_gen ? (uint64_t)femu_pcie_lane_mbps(c->pcie_gen) * c->pcie_lanes
                               : 0;
    f->core_free = g_new0(uint64_t, MAX(c->fw_cores, 1));
    tl_init(&f->link[0], false);
    tl_init(&f->link[1], false);
    return f;
}

void femu_frontend_free(FemuFrontend *f)
{
    if (f) {
        tl_destroy(&f->link[0]);
        tl_destroy(&f->link[1]);
        g_free(f->core_free);
        g_free(f);
    }
}

uint64_t femu_frontend_command(FemuFrontend *f, uint64_t arrival_ns)
{
    uint64_t cost = f->cfg.fw_cmd_ns * f->cfg.time_scale, start;
    uint32_t best = 0;

    f->st.commands++;
    if (!f->cfg.fw_cores) {
        return arrival_ns;
    }
    for (uint32_t i = 1; i < f->cfg.fw_cores; i++) {
        if (f->core_free[i] < f->core_free[best]) {
            best = i;
        }
    }
    start = MAX(arrival_ns, f->core_free[best]);
    f->core_free[best] = start + cost;
    f->st.fw_busy_ns += cost;
    return start + cost;
}

uint64_t femu_frontend_xfer_ns(const FemuFrontend *f, uint64_t bytes)
{
    if (!f->lane_rate) {
        return 0;
    }
    /* bytes / (bytes per us) in ns, rounded up */
    return (bytes * 1000 + f->lane_rate - 1) / f->lane_rate * f->cfg.time_scale;
}

uint64_t femu_frontend_transfer(FemuFrontend *f, bool to_host, uint64_t bytes, uint64_t at)
{
    Timeline *l = &f->link[to_host];
    uint64_t d = femu_frontend_xfer_ns(f, bytes), s;

    if (to_host) {
        f->st.bytes_to_host += bytes;
    } else {
        f->st.bytes_to_device += bytes;
    }
    if (!d) {
        return at;
    }
    s = tl_fit(l, at, d);
    tl_book(l, s, s + d);
    f->st.link_busy_ns[to_host] += d;
    return s + d;
}

const FemuFrontendStats *femu_frontend_stats(const FemuFrontend *f)
{
    return &f->st;
}

uint64_t femu_frontend_media_submit(FemuFrontend *f, FemuMedia *m, FemuMediaReq *r)
{
    uint64_t t, arrival = r->arrival_ns;

    if (f && r->op == FEMU_MEDIA_WRITE) {
        r->arrival_ns = femu_frontend_transfer(f, false, r->len, arrival);
    }
    t = femu_media_submit(m, r);
    r->arrival_ns = arrival;
    if (f && r->op == FEMU_MEDIA_READ) {
        t = femu_frontend_transfer(f, true, r->len, t);
    }
    return t;
}

void femu_frontend_retire(FemuFrontend *f, uint64_t t)
{
    tl_retire(&f->link[0], t);
    tl_retire(&f->link[1], t);
}

void femu_frontend_emit(const FemuFrontend *f, FemuMediaStatFn *emit, void *opaque)
{
    const FemuFrontendStats *fs = femu_frontend_stats(f);

    emit(opaque, "fw_commands", fs->commands);
    emit(opaque, "fw_busy_ns", fs->fw_busy_ns);
    emit(opaque, "pcie_bytes_to_host", fs->bytes_to_host);
    emit(opaque, "pcie_bytes_to_device", fs->bytes_to_device);
    emit(opaque, "pcie_to_host_busy_ns", fs->link_busy_ns[1]);
    emit(opaque, "pcie_to_device_busy_ns", fs->link_busy_ns[0]);
}
