"""The device's statistics page, vendor log 0xCA: one "name value" line per statistic
("mode blackbox", "completions 12", ...; a mixed device prefixes each model's with nsN_).
One parser for the qtest and the guest tests."""

import re

LOG_ID = 0xCA
# the page as text, read in the guest with nvme-cli in one command: nvme-cli reads in
# --xfer-len pieces (4 KiB by default) at growing offsets, and an offset past the end of
# the page is refused (Invalid Field), as the specification wants
GUEST_CMD = ("nvme get-log /dev/nvme0 --log-id=0xca --log-len=65536 --xfer-len=65536"
             " --raw-binary | tr -d '\\0'")
LINE = re.compile(r"^([a-z][a-z0-9_]*) (\d+|[a-z]+)$", re.M)


def parse(text):
    """The page (bytes or text; NUL padding and other lines around it are skipped) ->
    {name: int}, with the mode as text under "mode"."""
    if isinstance(text, (bytes, bytearray)):
        # the page ends at its NUL padding; a longer read leaves the buffer's old bytes
        text = bytes(text).split(b"\0", 1)[0].decode()
    stats = {}
    for name, value in LINE.findall(text):
        # one name twice would leave QMP's stats (the same emitter) ambiguous
        if name in stats:
            raise ValueError("statistic %r appears twice on the statistics page" % name)
        stats[name] = value if name == "mode" else int(value)
    return stats
