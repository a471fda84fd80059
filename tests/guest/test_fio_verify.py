"""fio writes with crc32c verification: 4 KiB random and 128 KiB, at queue
depth 1 and 32, two jobs pinned to two vCPUs so both I/O queues carry I/O."""

import json

JOBS = """
[global]
filename=/dev/nvme0n1
direct=1
ioengine=io_uring
rw=randwrite
verify=crc32c
do_verify=1
verify_fatal=1
size=16m
numjobs=2
offset_increment=16m
cpus_allowed=0-1
cpus_allowed_policy=split
stonewall
[4k-qd1]
bs=4k
iodepth=1
offset=0
[4k-qd32]
bs=4k
iodepth=32
offset=32m
[128k-qd1]
bs=128k
iodepth=1
offset=64m
[128k-qd32]
bs=128k
iodepth=32
offset=96m
[4k-qd32-libaio]
ioengine=libaio
bs=4k
iodepth=32
offset=128m
"""

N_JOBS = 5 * 2
# Interrupts per NVMe queue vector (nvme0q1, nvme0q2, ...): completions
# posted on each I/O queue. (6.1's blk-mq debugfs has no per-queue counters.)
COMPLETED = "grep nvme0q /proc/interrupts"

CMD = f"""
cat > /tmp/verify.fio <<'JOBS'
{JOBS}
JOBS
echo @@irq-before@@; {COMPLETED}
fio /tmp/verify.fio --output-format=json --output=/tmp/fio.json
echo FIO_RC=$?
echo @@irq-after@@; {COMPLETED}
echo @@fio@@; cat /tmp/fio.json
"""


def per_queue(text):
    """{queue: interrupts} of the I/O queues (not the admin queue nvme0q0)."""
    counts = {}
    for line in text.splitlines():
        f = line.split()
        if f and f[-1].startswith("nvme0q") and f[-1] != "nvme0q0":
            counts[f[-1]] = sum(int(x) for x in f[1:] if x.isdigit())
    return counts


def test_fio_write_verify_on_two_queues(guest):
    r = guest(CMD, size=256, smp=2)
    s, why = r.sections(), r.describe()
    assert r.values().get("FIO_RC") == "0", why

    # fio may put warnings before the JSON (jobs sharing a file, here on
    # purpose with disjoint offsets)
    jobs = json.loads(s["fio"][s["fio"].index("{"):])["jobs"]
    assert len(jobs) == N_JOBS, why
    for j in jobs:
        assert j["error"] == 0, f"job {j['jobname']} error {j['error']}\n{why}"
        # every block written once, then read back for verification
        assert j["write"]["io_bytes"] == 16 << 20, f"{j['jobname']} wrote {j['write']['io_bytes']}"
        assert j["read"]["io_bytes"] == 16 << 20, f"{j['jobname']} verified {j['read']['io_bytes']}"

    before, after = per_queue(s["irq-before"]), per_queue(s["irq-after"])
    assert len(after) >= 2, f"expected 2 I/O queues: {after}\n{why}"
    used = [h for h in after if after[h] - before.get(h, 0) >= 1000]
    assert len(used) >= 2, f"I/O did not spread over two queues: {before} -> {after}"
