#!/usr/bin/env python3
"""Links with a delay, jitter and loss between emulated hosts, where the kernel has no netem.

An Ethernet switch in user space: it opens one TAP device per host (their names are the
arguments), learns which host each MAC address is behind, and hands every frame on to its
destination (or to every other host: broadcasts, unknown addresses) after the delay, plus a
random part of the jitter, each frame drawn on its own, so frames sent close together may
arrive in another order. `--loss` drops that percentage of frames at random. hosts.sh starts
it before moving each TAP device into its host's namespace (an open device keeps working
there) and ends it at `down`; `--ready FILE` is written once every device is open.

Frames come one at a time, at most the device's MTU: a TAP device without a virtio header
takes no segmentation offload, so the kernel cuts TCP's large sends into frames before
handing them over. What it cannot hand on at once (a full queue on the receiving device) is
dropped, as a switch would.
"""
import argparse
import errno
import fcntl
import heapq
import os
import random
import select
import signal
import struct
import sys
import time

TUNSETIFF = 0x400454CA
IFF_TAP = 0x0002
IFF_NO_PI = 0x1000


def open_tap(name):
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TAP | IFF_NO_PI))
    return fd


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--delay-ms", type=float, default=0.0, help="one-way delay of every frame")
    p.add_argument("--jitter-ms", type=float, default=0.0, help="a random extra delay up to this")
    p.add_argument("--loss", type=float, default=0.0, help="percentage of frames dropped")
    p.add_argument("--ready", help="a file written once every device is open")
    p.add_argument("--stats", help="a file written at the end: frames forwarded, dropped, reordered")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("taps", nargs="+")
    a = p.parse_args()
    if a.delay_ms < 0 or a.jitter_ms < 0 or not 0 <= a.loss <= 100:
        p.error("the delay and jitter must be >= 0, the loss 0..100")
    rng = random.Random(a.seed)
    fds = [open_tap(name) for name in a.taps]
    running = [True]
    signal.signal(signal.SIGTERM, lambda *_: running.__setitem__(0, False))
    signal.signal(signal.SIGINT, lambda *_: running.__setitem__(0, False))
    if a.ready:
        with open(a.ready, "w") as f:
            f.write(f"{os.getpid()}\n")
    behind = {}  # MAC address -> index of the device it was last seen on
    queue = []  # (due, sequence, from, to, frame)
    seq = 0
    counts = {"forwarded": 0, "dropped": 0, "reordered": 0}
    last = {}  # (from, to) -> sequence of the last frame handed on between them
    while running[0]:
        timeout = max(0.0, queue[0][0] - time.monotonic()) if queue else 0.5
        try:
            readable, _, _ = select.select(fds, [], [], timeout)
        except InterruptedError:
            continue
        now = time.monotonic()
        for fd in readable:
            i = fds.index(fd)
            while True:
                try:
                    frame = os.read(fd, 65536)
                except BlockingIOError:
                    break
                except OSError as e:
                    if e.errno in (errno.EAGAIN, errno.EIO):  # EIO: not up yet in its namespace
                        break
                    raise
                if len(frame) < 14:
                    continue
                behind[frame[6:12]] = i
                dst = frame[0:6]
                if dst[0] & 1 or dst not in behind:
                    targets = [j for j in range(len(fds)) if j != i]
                else:
                    targets = [behind[dst]] if behind[dst] != i else []
                for j in targets:
                    if a.loss and rng.random() * 100 < a.loss:
                        counts["dropped"] += 1
                        continue
                    due = now + (a.delay_ms + rng.random() * a.jitter_ms) / 1000.0
                    heapq.heappush(queue, (due, seq, i, j, frame))
                    seq += 1
        now = time.monotonic()
        while queue and queue[0][0] <= now:
            _, n, i, j, frame = heapq.heappop(queue)
            # A frame handed on after one sent later between the same two hosts.
            if last.get((i, j), -1) > n:
                counts["reordered"] += 1
            else:
                last[(i, j)] = n
            try:
                os.write(fds[j], frame)
                counts["forwarded"] += 1
            except OSError:
                counts["dropped"] += 1
    line = " ".join(f"{k} {v}" for k, v in counts.items())
    if a.stats:
        with open(a.stats, "w") as f:
            f.write(line + "\n")
    print(f"linkemu: {line}", file=sys.stderr)


if __name__ == "__main__":
    main()
