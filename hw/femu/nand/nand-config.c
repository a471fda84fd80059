/*
 * The flash's properties -> NandGeometry and NandTiming; see nand-config.h.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qobject/qobject.h"
#include "qom/object.h"
#include "qom/qom-qobject.h"
#include "nand-config.h"
#include "presets.h"

const Property femu_flash_props[] = { FEMU_FLASH_PROPS(FEMU_QDEV_ITEM, FemuFlashParams) };
const size_t femu_flash_nr_props = ARRAY_SIZE(femu_flash_props);

/* Whether property `prop` holds a value other than its default. */
static bool prop_given(Object *obj, ObjectProperty *op, const char *prop, Error **errp,
                       bool *given)
{
    QObject *now = object_property_get_qobject(obj, prop, errp);

    if (!now) {
        return false;
    }
    *given = op->defval && !qobject_is_equal(now, op->defval);
    qobject_unref(now);
    return true;
}

bool femu_flash_apply_preset(Object *obj, const char *name, Error **errp)
{
    const FemuPreset *p = femu_preset_find(name);
    ObjectProperty *blocks = object_property_find(obj, "blks_per_pl");
    g_auto(GStrv) items = NULL;
    bool blocks_given = false;

    if (!name) {
        return true;
    }
    if (!p) {
        error_setg(errp, "flash_preset='%s' is not known: allowed %s", name,
                   femu_preset_names());
        return false;
    }
    if (blocks && !prop_given(obj, blocks, "blks_per_pl", errp, &blocks_given)) {
        return false;
    }
    items = g_strsplit(p->props, ",", -1);
    for (char **item = items; *item; item++) {
        g_auto(GStrv) kv = g_strsplit(*item, "=", 2);
        ObjectProperty *op = object_property_find(obj, kv[0]);
        bool given;

        if (!op || !kv[1]) {
            error_setg(errp, "flash_preset=%s: '%s' is not a property", name, *item);
            return false;
        }
        if (!prop_given(obj, op, kv[0], errp, &given)) {
            return false;
        }
        /* given another value: that wins; so do blocks given, over the preset's OP */
        if (given || (blocks_given && !strcmp(kv[0], "op_pcent"))) {
            continue;
        }
        if (!object_property_parse(obj, kv[0], kv[1], errp)) {
            error_prepend(errp, "flash_preset=%s: ", name);
            return false;
        }
    }
    return true;
}

bool femu_flash_options(const FemuFlashParams *p, NandTiming *t, Error **errp)
{
    g_autofree char *err = NULL;

    if (!flash_params_options(p, t, &err)) {
        error_setg(errp, "%s", err);
        return false;
    }
    return true;
}

bool femu_fill_timing(const char *prefix, uint8_t flash_type, int64_t rd, int64_t wr,
                      int64_t er, const FemuFlashParams *p, NandTiming *t, Error **errp)
{
    g_autofree char *err = NULL;

    if (!flash_params_timing(prefix, flash_type, rd, wr, er, p, t, &err)) {
        error_setg(errp, "%s", err);
        return false;
    }
    return true;
}
