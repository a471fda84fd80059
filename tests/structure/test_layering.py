"""The tree the design asks for, checked on the built objects and the sources.

- no two source files under hw/femu share a name;
- the controller's files call each other one way only (no file both calls and is called by
  another), read from the symbols each object defines and uses;
- the QEMU-free model files include no QEMU header;
- the controller core names no namespace kind: kinds are reached through ns-kind.h.
"""

import os
import pathlib
import re
import subprocess

import pytest

pytestmark = pytest.mark.unit

REPO = pathlib.Path(__file__).resolve().parents[2]
FEMU = REPO / "hw" / "femu"
BUILD = pathlib.Path(os.environ.get("FEMU_BUILD", REPO / "build"))
OBJDIR = BUILD / "qemu-build" / "libcommon.a.p"
KIND_DIRS = ("nossd", "bbssd", "zns")
CORE = ("admin.c", "backend.c", "ctrl.c", "dataplane.c", "dma.c", "io.c", "namespaces.c",
        "ns-kind.c", "nvm.c", "queues.c")


def sources():
    return sorted(p for p in FEMU.rglob("*") if p.suffix in (".c", ".h"))


def test_no_two_source_files_share_a_name():
    seen = {}
    for p in sources():
        assert p.name not in seen, "%s and %s" % (seen[p.name], p)
        seen[p.name] = p


def model_files():
    text = "\n".join(p.read_text() for p in FEMU.rglob("meson.build"))
    names = []
    for m in re.finditer(r"femu_model_files \+?= files\(([^)]*)\)", text):
        names += re.findall(r"'([^']+)'", m.group(1))
    return names


def test_model_code_includes_no_qemu_header():
    model = set(model_files())
    assert "nand/nand.c" in model and "zone.c" in model, model
    checked = 0
    for p in sources():
        rel = p.relative_to(FEMU)
        if p.suffix == ".c" and (str(rel) in model or p.name in model):
            header = p.with_suffix(".h")
            for f in [p] + ([header] if header.exists() else []):
                for inc in re.findall(r'#include [<"]([^>"]+)[>"]', f.read_text()):
                    assert not inc.startswith(("qemu/", "hw/", "system/", "block/", "exec/",
                                               "qapi/", "qom/")) and inc != "femu.h" \
                        and not inc.endswith("/femu.h"), "%s includes %s" % (f, inc)
            checked += 1
    assert checked >= 9


def test_core_names_no_kind():
    for name in CORE + ("femu.h",):
        text = (FEMU / name).read_text()
        for word in ("zns", "zone", "bbssd", "blackbox", "ftl", "ocssd"):
            hits = [line for line in text.splitlines()
                    if re.search(r"\b%s" % word, line, re.I)]
            assert not hits, "%s names %s: %s" % (name, word, hits[:3])


def symbols(obj):
    out = subprocess.run(["nm", "--defined-only", str(obj)], capture_output=True, text=True,
                         check=True).stdout
    defined = {line.split()[-1] for line in out.splitlines() if line.split()[1] in "TDBR"}
    out = subprocess.run(["nm", "--undefined-only", str(obj)], capture_output=True, text=True,
                         check=True).stdout
    used = {line.split()[-1] for line in out.splitlines()}
    return defined, used


def test_controller_files_call_one_way():
    objs = sorted(OBJDIR.glob("hw_femu_*.o"))
    if not objs:
        pytest.skip("no QEMU build in %s (make qemu)" % OBJDIR)
    info = {o.name[len("hw_femu_"):-len(".c.o")]: symbols(o) for o in objs}
    owner = {}
    for name, (defined, _) in info.items():
        for sym in defined:
            owner[sym] = name
    calls = {name: {owner[s] for s in used if s in owner} - {name}
             for name, (_, used) in info.items()}
    both_ways = sorted({tuple(sorted((a, b))) for a in calls for b in calls[a]
                        if a in calls.get(b, ())})
    assert not both_ways, "files calling each other both ways: %s" % both_ways
    # and the whole graph has no cycle
    state = {}

    def visit(v, path):
        state[v] = 1
        for w in calls[v]:
            assert state.get(w) != 1, "cycle: %s" % " -> ".join(path + [v, w])
            if w not in state:
                visit(w, path + [v])
        state[v] = 2

    for v in calls:
        if v not in state:
            visit(v, [])
    # the kinds are reached through the table only
    for core in CORE:
        c = core[:-2]
        for kind in KIND_DIRS:
            assert not any(f.startswith(kind + "_") for f in calls.get(c, ())), \
                "%s calls into %s/" % (core, kind)
