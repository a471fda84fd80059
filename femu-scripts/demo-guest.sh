# Runs inside the guest for `make demo`: show the drive, then write and verify data on it.
set -e
nvme list
lsblk /dev/nvme0n1
fio --name=demo --filename=/dev/nvme0n1 --rw=randwrite --bs=4k --iodepth=16 \
    --ioengine=io_uring --direct=1 --size=128M --verify=crc32c \
    --output-format=terse --terse-version=3 > /tmp/fio.out
echo "fio 4 KiB random write + crc32c verify of 128 MiB: OK"
nvme smart-log /dev/nvme0 | grep -E 'Data Units|host_(read|write)_commands'
