# Runs inside the guest for `make demo`: show the zoned drive, then write and verify data.
set -e
nvme list
echo "zoned: $(cat /sys/block/nvme0n1/queue/zoned), $(cat /sys/block/nvme0n1/queue/nr_zones) zones"
blkzone report -c 3 /dev/nvme0n1
fio --name=demo --filename=/dev/nvme0n1 --zonemode=zbd --rw=write --bs=128k --iodepth=8 \
    --ioengine=libaio --direct=1 --size=128M --verify=crc32c \
    --output-format=terse --terse-version=3 > /tmp/fio.out
echo "fio sequential zoned write + crc32c verify of 128 MiB: OK"
blkzone report -c 3 /dev/nvme0n1
nvme smart-log /dev/nvme0 | grep -E 'Data Units|host_(read|write)_commands'
