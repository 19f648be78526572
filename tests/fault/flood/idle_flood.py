#!/usr/bin/env python3
"""Idle TCP connections to a port, held until a file appears (issue #23's attack).

    idle_flood.py HOST PORT COUNT STOP_FILE

Opens COUNT connections (no TLS handshake, no byte sent), prints "open COUNT CONNECTED" once
the kernel has answered them all (bounded: 10 s), holds them until STOP_FILE exists (bounded:
300 s), closes every one and prints "closed". Loopback only: the caller passes 127.0.0.1.
"""
import os
import resource
import select
import socket
import sys
import time


def main():
    host, port, count, stop = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, count + 64) if hard != resource.RLIM_INFINITY else count + 64
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    socks = []
    for _ in range(count):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        s.connect_ex((host, port))
        socks.append(s)
    # Wait (bounded) until every connect has an answer from the kernel.
    poller = select.poll()
    for s in socks:
        poller.register(s, select.POLLOUT)
    answered = set()
    end = time.monotonic() + 10
    while len(answered) < len(socks) and time.monotonic() < end:
        for fd, _ in poller.poll(200):
            answered.add(fd)
            poller.unregister(fd)
    connected = sum(1 for s in socks if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0)
    print(f"open {count} {connected}", flush=True)
    end = time.monotonic() + 300
    while not os.path.exists(stop) and time.monotonic() < end:
        time.sleep(0.05)
    for s in socks:
        s.close()
    print("closed", flush=True)


if __name__ == "__main__":
    main()
