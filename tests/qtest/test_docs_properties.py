"""The built QEMU's -device femu properties and the manual agree: every property
`-device femu,help` lists (less those every PCI device has) is in a property table of
README.md or docs/*.md, and every property those tables name is one QEMU lists. The QOM
properties read and set over QMP (`stats`, `power-cut`) are named in the manual too.
tests/unit/test_docs.py makes the same comparison from the source alone."""

import os
import re
import subprocess
import sys
import tempfile

import pytest

import qtest_machine
from qtest import QEMULaunchError, QTest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import doccheck  # noqa: E402

pytestmark = [
    pytest.mark.qtest,
    pytest.mark.skipif(qtest_machine.DEVICE == "stock", reason="femu's properties"),
    pytest.mark.skipif(not os.access(qtest_machine.QEMU, os.X_OK),
                       reason="no QEMU binary at %s" % qtest_machine.QEMU),
]
RUNTIME = {"stats", "power-cut"}        # QOM properties for QMP, not -device options


def device_help(device):
    """The property names QEMU lists for `-device DEVICE,help`."""
    r = subprocess.run([qtest_machine.QEMU, "-nodefaults", "-device", device + ",help"],
                       capture_output=True, text=True, timeout=60)
    assert "%s options:" % device in r.stdout, r.stderr
    return set(re.findall(r"^  ([^=\s]+)=", r.stdout, re.M))


@pytest.fixture(scope="module")
def femu_properties():
    """femu's own properties: what it lists less what two plain PCI devices both list."""
    common = device_help("edu") & device_help("pci-testdev")
    return device_help("femu") - common


def test_every_qemu_property_documented(femu_properties):
    documented = set(doccheck.documented_properties())
    missing = sorted(femu_properties - RUNTIME - documented)
    assert not missing, "-device femu,help lists properties no table documents: %s" % (
        ", ".join(missing))


def test_every_documented_property_is_in_qemu(femu_properties):
    unknown = sorted(set(doccheck.documented_properties()) - femu_properties)
    assert not unknown, "property tables name what -device femu,help lacks: %s" % (
        ", ".join(unknown))


def test_source_and_qemu_agree(femu_properties):
    """The static reading of hw/femu (the unit test's) finds what QEMU builds."""
    assert doccheck.code_properties() == femu_properties - RUNTIME


def refusal(props):
    """QEMU's message refusing -device femu,PROPS (QEMU started with no guest)."""
    with tempfile.TemporaryDirectory() as d:
        bios = os.path.join(d, "empty-bios.bin")
        with open(bios, "wb") as f:
            f.write(bytes(65536))
        r = subprocess.run([qtest_machine.QEMU, "-machine", "q35", "-accel", "qtest",
                            "-display", "none", "-nodefaults", "-bios", bios,
                            "-device", "femu," + props],
                           capture_output=True, text=True, timeout=60)
    assert r.returncode != 0, "QEMU took -device femu,%s" % props
    return r.stderr


def test_modes_documented():
    """The femu_mode row's range and meaning and the ns_types row's list name the modes
    QEMU offers (its refusal of an unknown one lists them)."""
    rows = doccheck.property_rows()
    offered = dict(re.findall(r"(\d+) \((\w+)\)", refusal("femu_mode=99").split("allowed")[-1]))
    lo, hi = map(int, re.match(r"(\d+)\.\.(\d+)$", rows["femu_mode"]["range"]).groups())
    assert {str(m) for m in range(lo, hi + 1)} == set(offered), (
        "femu_mode's range is %d..%d; QEMU offers %s" % (lo, hi, sorted(offered)))
    for m in offered:
        assert re.search(r"\b%s \w+" % m, rows["femu_mode"]["meaning"]), (
            "femu_mode's meaning does not say what %s is" % m)
    names = set(re.findall(r"allowed (.*)$", refusal("namespaces=2,ns_types=zns:foo"),
                           re.M)[0].split(", "))
    assert names == set(offered.values())
    documented = {s for s in doccheck.CODE_SPAN.findall(rows["ns_types"]["range"])
                  if doccheck.NAME.match(s)}
    assert documented == names, "ns_types lists %s; QEMU takes %s" % (
        sorted(documented), sorted(names))


@pytest.mark.parametrize("props", doccheck.device_examples())
def test_manual_device_lines_start(props):
    """Each complete -device femu line of the manual starts a controller as written."""
    qtest_machine.skip_unless_qemu()
    try:
        qt = QTest(qtest_machine.QEMU, ["-device", "femu," + props])
    except QEMULaunchError as e:
        pytest.fail("the manual's -device femu,%s is refused:\n%s" % (props, e.output))
    qt.close()


def test_runtime_properties_named(femu_properties):
    assert RUNTIME <= femu_properties
    text = "".join(f.read_text() for f in doccheck.manual_files())
    for name in RUNTIME:
        assert "`%s`" % name in text, "the manual never names the QOM property %s" % name
