#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Tiny Ethernet hub for lite-vm guests over unix datagram sockets.

Usage: hub.py HUB_SOCKET PARENT_PID GUEST_SOCKET...

Each guest runs -netdev dgram with local.path=GUEST_SOCKET and
remote.path=HUB_SOCKET. Every frame received from one guest is repeated to
all other guests (a hub, not a switch: the guest NICs filter by MAC).
Exits when PARENT_PID is gone, so it never outlives the lite-vm run.
"""
import os
import select
import socket
import sys
import time


def parent_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    hub_path, parent, guests = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        os.unlink(hub_path)
    except FileNotFoundError:
        pass
    sock.bind(hub_path)
    last_check = time.monotonic()
    while True:
        now = time.monotonic()
        if now - last_check >= 1.0:
            last_check = now
            if not parent_alive(parent):
                break
        ready, _, _ = select.select([sock], [], [], 1.0)
        if not ready:
            continue
        frame, sender = sock.recvfrom(65536)
        for guest in guests:
            if guest == sender:
                continue
            try:
                sock.sendto(frame, socket.MSG_DONTWAIT, guest)
            except OSError:
                pass  # guest not up, gone or not reading: drop the frame, like a wire
    sock.close()
    os.unlink(hub_path)


if __name__ == "__main__":
    main()
