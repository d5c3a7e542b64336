#!/usr/bin/env python3
# Raw HTTP clients for http_test: what curl cannot do (bytes as written,
# many connections, a client that never reads).
#
#   http_client.py raw PORT            send stdin as is, print the answer
#   http_client.py halfclose PORT      the same, shutting the sending side
#                                      down right after the request
#   http_client.py big413 PORT N       POST N body bytes before reading
#   http_client.py trickle PORT N SECS N connections, one byte every 2 s
#   http_client.py noread PORT N TOKEN SECS [stream [COMMAND]]
#                                      N runs whose answer is never read
#   http_client.py hold PORT N SECS [STATUS]
#                                      N idle connections; prints how many
#                                      were refused at once with STATUS
#                                      (default 429)

import resource
import socket
import sys
import time


def connect(port, src=None, rcvbuf=None):
    s = socket.socket()
    if rcvbuf:
        # Before connect: the window is agreed on in the handshake.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        # And a network's segment size: with loopback's 64 KiB one the
        # daemon's kernel takes some 2 MB of an answer nobody reads.
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, 1400)
    if src:
        s.bind((src, 0))
    s.connect(("127.0.0.1", port))
    return s


def read_all(s, timeout=3.0):
    s.settimeout(timeout)
    out = b""
    try:
        while True:
            d = s.recv(65536)
            if not d:
                break
            out += d
    except (socket.timeout, ConnectionResetError):
        pass
    return out


def raise_nofile():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def main():
    cmd, port = sys.argv[1], int(sys.argv[2])
    if cmd in ("raw", "halfclose"):
        s = connect(port)
        s.sendall(sys.stdin.buffer.read())
        if cmd == "halfclose":
            s.shutdown(socket.SHUT_WR)
        sys.stdout.buffer.write(read_all(s, 2.0))
    elif cmd == "big413":
        n = int(sys.argv[3])
        s = connect(port)
        s.sendall(b"POST /users HTTP/1.1\r\nHost: t\r\n"
                  b"Content-Type: application/json\r\n"
                  b"Content-Length: %d\r\n\r\n" % n)
        s.sendall(b"x" * n)
        sys.stdout.buffer.write(read_all(s))
    elif cmd == "trickle":
        raise_nofile()
        n, secs = int(sys.argv[3]), float(sys.argv[4])
        socks = []
        for i in range(n):
            # Many source addresses: the per-address cap is not the test.
            socks.append(connect(port, "127.0.%d.%d" % (1 + i // 200,
                                                        2 + i % 200)))
        for s in socks:
            s.sendall(b"G")
        print("ready", flush=True)
        end = time.time() + secs
        while time.time() < end:
            time.sleep(2)
            for s in socks:
                try:
                    s.sendall(b"E")
                except OSError:
                    pass
    elif cmd == "noread":
        raise_nofile()
        n, token, secs = int(sys.argv[3]), sys.argv[4], float(sys.argv[5])
        stream = b"true" if len(sys.argv) > 6 and sys.argv[6] else b"false"
        cmd = sys.argv[7] if len(sys.argv) > 7 else "head -c 1000000 /dev/zero"
        body = (b'{"tool": "sh-skill", "stream": ' + stream +
                b', "args": ["-c", "' + cmd.encode() + b'"]}')
        socks = []
        for i in range(n):
            s = connect(port, "127.0.%d.%d" % (1 + i // 200, 2 + i % 200),
                        4096)
            s.sendall(b"POST /run HTTP/1.1\r\nHost: t\r\n"
                      b"X-Treg-Token: " + token.encode() + b"\r\n"
                      b"Content-Length: %d\r\n\r\n" % len(body) + body)
            socks.append(s)
        print("ready", flush=True)
        time.sleep(secs)
    elif cmd == "hold":
        n, secs = int(sys.argv[3]), float(sys.argv[4])
        want = b"HTTP/1.1 " + (sys.argv[5] if len(sys.argv) > 5
                               else "429").encode()
        socks = [connect(port) for i in range(n)]
        refused = 0
        for s in socks:
            s.settimeout(0.5)
            try:
                if s.recv(1024).startswith(want):
                    refused += 1
            except socket.timeout:
                pass
        print(refused, flush=True)
        time.sleep(secs)


main()
