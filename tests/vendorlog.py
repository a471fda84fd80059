"""The device's statistics page, vendor log 0xCA: one "name value" line per statistic
("mode blackbox", "completions 12", ...; a mixed device prefixes each model's with nsN_).
One parser for the qtest and the guest tests."""

LOG_ID = 0xCA
# the page as text, read in the guest with nvme-cli
GUEST_CMD = ("nvme get-log /dev/nvme0 --log-id=0xca --log-len=4096 --raw-binary"
             " | tr -d '\\0'")


def parse(text):
    """The page (bytes or text, NUL padding allowed) -> {name: int}, and the mode under
    "mode" as text. A line that is neither fails: the format is part of the interface."""
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode()
    out = {}
    for line in text.replace("\0", "").splitlines():
        if not line.strip():
            continue
        name, sep, value = line.strip().partition(" ")
        if not sep:
            raise ValueError("vendor log line without a value: %r" % line)
        if name == "mode":
            out[name] = value
        else:
            out[name] = int(value)
    return out
