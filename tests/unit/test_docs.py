"""The manual and the code cannot drift apart: every -device femu property hw/femu defines
is in a property table of the manual (README.md, docs/*.md) and every property the manual
names (in a table, on a `-device femu,...` line, in a `--dev "..."`) exists; the same both
ways for femu-sim's options and job-file options and for the run scripts' options; every
relative link between the manual's files reaches an existing file and heading; the docs
index lists every docs file. A static reading of the source, no build needed (the qtest
test_docs_properties.py asks the built QEMU the same question)."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import doccheck  # noqa: E402

pytestmark = pytest.mark.unit
# femu-sim's helper scripts whose every option the manual gives in their synopsis.
HELPERS = ("femu-stats.py", "femu-power-cut.py", "demo-plp.sh")


def test_every_property_documented():
    missing = sorted(doccheck.code_properties() - set(doccheck.documented_properties()))
    assert not missing, "properties hw/femu defines that no property table documents: %s" % (
        ", ".join(missing))


def test_every_documented_property_exists():
    code = doccheck.code_properties()
    unknown = sorted("%s (%s)" % (name, ", ".join(sorted(set(files))))
                     for name, files in doccheck.documented_properties().items()
                     if name not in code)
    assert not unknown, "property tables name what hw/femu does not define: %s" % (
        ", ".join(unknown))


def test_device_lines_name_real_properties():
    code = doccheck.code_properties()
    unknown = sorted({"%s in %s" % (k, f) for f, k in doccheck.device_lines() if k not in code})
    assert doccheck.device_lines(), "no -device femu line found in the manual"
    assert not unknown, "-device femu / --dev lines with properties that do not exist: %s" % (
        ", ".join(unknown))


def test_inline_settings_name_real_properties():
    """`name=value` in running text (`sra=on`, `plp_zones=0-1:5`) is a real property."""
    code = doccheck.code_properties()
    found = doccheck.inline_settings()
    unknown = sorted({"%s in %s" % (k, f) for f, k in found if k not in code})
    assert found, "no name=value setting found in the manual"
    assert not unknown, "settings in the text that are no -device femu property: %s" % (
        ", ".join(unknown))


def test_sim_options_documented_both_ways():
    code = doccheck.sim_options()
    where, table = doccheck.option_table("--dev-file")
    assert where, "no option table of femu-sim (a row for --dev-file) in the manual"
    assert not code - set(table), "femu-sim options missing from %s: %s" % (
        where.name, ", ".join(sorted(code - set(table))))
    assert not set(table) - code, "%s names femu-sim options sim/sim.c lacks: %s" % (
        where.name, ", ".join(sorted(set(table) - code)))


def femu_sim():
    """The built femu-sim: $FEMU_SIM, the unit tests' meson build's, or `make sim`'s."""
    build = Path(os.environ.get("FEMU_BUILD") or doccheck.ROOT / "build").resolve()
    for p in (os.environ.get("FEMU_SIM"), build / "unit" / "sim" / "femu-sim",
              build / "femu-sim"):
        if p and os.access(str(p), os.X_OK):
            return str(p)
    pytest.skip("no femu-sim built (make unit or make sim)")


def test_sim_help_agrees_with_the_manual():
    """femu-sim --help lists the options of the manual's table, and --help-dev only
    properties hw/femu defines (one list in the source for both)."""
    sim = femu_sim()
    helped = subprocess.run([sim, "--help"], capture_output=True, text=True, timeout=60).stdout
    _, table = doccheck.option_table("--dev-file")
    assert set(re.findall(r"^  (--[a-z-]+)", helped, re.M)) | {"--help"} == set(table)
    props = subprocess.run([sim, "--help-dev"], capture_output=True, text=True,
                           timeout=60).stdout
    names = {line.split("=")[0] for line in props.splitlines() if "=" in line}
    assert names and not names - doccheck.code_properties(), sorted(
        names - doccheck.code_properties())


def test_sim_job_options_documented_both_ways():
    code = doccheck.sim_job_options()
    docs = set()
    for f in doccheck.manual_files():
        docs |= doccheck.documented_job_options(f)
    assert code, "no job-file option table found in sim/jobfile.c"
    assert not code - docs, "job-file options femu-sim supports, not listed: %s" % (
        ", ".join(sorted(code - docs)))
    assert not docs - code, "job-file options listed as supported that sim/jobfile.c lacks: %s" % (
        ", ".join(sorted(docs - code)))


def test_launcher_options_documented_both_ways():
    code = doccheck.launcher_options()
    where, table = doccheck.option_table("--cmd")
    assert where, "no option table of the run scripts (a row for --cmd) in the manual"
    documented = set(table) - {"--"}          # `-- ARGS`: the rest goes to QEMU
    assert not code - documented, "run-script options missing from %s: %s" % (
        where.name, ", ".join(sorted(code - documented)))
    assert not documented - code, "%s names run-script options femu-launch.sh lacks: %s" % (
        where.name, ", ".join(sorted(documented - code)))


@pytest.mark.parametrize("script", sorted(p.name for p in
                                          (doccheck.ROOT / "femu-scripts").glob("run-*.sh")))
def test_run_script_help_lists_the_documented_options(script):
    """Each run-*.sh --help (the launcher's) gives the options the manual's table has."""
    r = subprocess.run(["bash", str(doccheck.ROOT / "femu-scripts" / script), "--help"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    helped = set(re.findall(r"^  (--[a-z-]+)", r.stdout, re.M))
    _, table = doccheck.option_table("--cmd")
    assert helped == set(table) - {"--"}, "%s --help: %s; the manual: %s" % (
        script, sorted(helped), sorted(set(table) - {"--"}))


@pytest.mark.parametrize("script", HELPERS)
def test_helper_script_options_documented_both_ways(script):
    code = doccheck.script_options(script) - {"--help"}
    docs = set()
    for f in doccheck.manual_files():
        for span in doccheck.CODE_SPAN.findall(doccheck.strip_fences(f.read_text())):
            if span.split() and span.split()[0].split("/")[-1] == script:
                docs |= {w.strip("[]|") for w in span.split() if w.strip("[]|").startswith("--")}
    assert docs, "the manual gives no synopsis of %s" % script
    assert not code - docs, "%s options the manual's synopsis lacks: %s" % (
        script, ", ".join(sorted(code - docs)))
    assert not docs - code, "the manual gives %s options it does not take: %s" % (
        script, ", ".join(sorted(docs - code)))


def test_links_resolve():
    bad = [b for f in doccheck.manual_files() for b in doccheck.broken_links(f)]
    assert not bad, "broken links:\n" + "\n".join(bad)


def test_docs_index_lists_every_file():
    index = doccheck.DOCS / "README.md"
    assert index.exists(), "docs/README.md, the manual's table of contents, is missing"
    listed = {(index.parent / t.partition("#")[0]).resolve()
              for t, _ in doccheck.links(index) if not t.startswith("#")}
    unlisted = sorted(f.name for f in doccheck.DOCS.glob("*.md")
                      if f != index and f.resolve() not in listed)
    assert not unlisted, "docs/README.md does not list: %s" % ", ".join(unlisted)
    front = {t.partition("#")[0] for t, _ in doccheck.links(doccheck.ROOT / "README.md")}
    assert "docs/README.md" in front, "README.md does not link the docs index"


def test_each_docs_file_opens_with_its_scope_and_neighbours():
    """A docs file starts with its title and a paragraph that links to another file."""
    bad = []
    for f in sorted(doccheck.DOCS.glob("*.md")):
        lines = f.read_text().split("\n")
        para = "\n".join(lines[1:]).strip().split("\n\n")[0]
        if not lines[0].startswith("# ") or not doccheck.LINK.search(para):
            bad.append(f.name)
    assert not bad, "docs files without a title and a first paragraph with links: %s" % (
        ", ".join(bad))


def test_readme_is_a_front_page():
    text = (doccheck.ROOT / "README.md").read_text()
    n = len(text.splitlines())
    assert n < 300, "README.md has %d lines: move the detail into docs/" % n
    for line in ("make demo ", "make check "):
        assert "\n" + line in text, "the quick start lost `%s`" % line.strip()
