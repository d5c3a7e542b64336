#!/usr/bin/env python3
"""A minimal, unsandboxed POST /run in Python asyncio (stdlib only).

The comparison point for bench/run.sh: the same endpoint shape as tregd's
(token header, JSON body {"tool", "args", "timeout_s"}, JSON answer with
exit_code, stdout, stderr, duration_ms, timed_out, redacted), the CLI run
with asyncio.create_subprocess_exec and both pipes read concurrently, the
secret masked by a plain str.replace.  No privilege separation, no run
user, no rlimits, no seccomp, no audit database: what a quick server would
do, so the comparison shows what tregd's isolation costs or saves.

    python3 server.py PORT TOKEN BIN
"""

import asyncio
import json
import os
import shutil
import sys
import time

SECRET = "s3cr3t-value-bench"
OUTPUT_MAX = 1_000_000


async def run_cli(path, args, timeout):
    t0 = time.monotonic()
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8",
           "MY_SECRET": SECRET}
    proc = await asyncio.create_subprocess_exec(
        path, *args, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env=env, start_new_session=True)
    timed_out = False
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
    except asyncio.TimeoutError:
        timed_out = True
        os.killpg(proc.pid, 9)
        out, err = await proc.communicate()
    ms = int((time.monotonic() - t0) * 1000)
    redacted = 0
    streams = []
    for raw in (out, err):
        text = raw.decode("utf-8", "replace")
        redacted += text.count(SECRET)
        streams.append(text.replace(SECRET, "***")[:OUTPUT_MAX])
    code = proc.returncode if not timed_out else -9
    return {"exit_code": code, "stdout": streams[0], "stderr": streams[1],
            "duration_ms": ms, "timed_out": timed_out, "redacted": redacted}


class Server:
    def __init__(self, token, tool, path):
        self.token = token
        self.tool = tool
        self.path = path

    async def handle(self, reader, writer):
        try:
            while True:
                line = await reader.readline()
                if not line:
                    break
                method, target, _ = line.decode("latin-1").split(" ", 2)
                headers = {}
                while True:
                    h = await reader.readline()
                    if h in (b"\r\n", b"\n", b""):
                        break
                    k, _, v = h.decode("latin-1").partition(":")
                    headers[k.strip().lower()] = v.strip()
                n = int(headers.get("content-length", "0"))
                body = await reader.readexactly(n) if n else b""
                status, answer = await self.route(method, target, headers,
                                                  body)
                data = json.dumps(answer).encode()
                writer.write(b"HTTP/1.1 %d X\r\nContent-Type: "
                             b"application/json\r\nContent-Length: %d\r\n\r\n"
                             % (status, len(data)) + data)
                await writer.drain()
                if headers.get("connection", "").lower() == "close":
                    break
        except (ConnectionError, ValueError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def route(self, method, target, headers, body):
        if method == "GET" and target == "/meta":
            return 200, {"name": "run-py"}
        if method != "POST" or target != "/run":
            return 404, {"detail": "not found"}
        if headers.get("x-treg-token") != self.token:
            return 401, {"detail": "invalid token"}
        try:
            req = json.loads(body)
            args = req.get("args", [])
            timeout = max(1, min(600, int(req.get("timeout_s", 120))))
        except (ValueError, TypeError, AttributeError):
            return 400, {"detail": "malformed JSON body"}
        if req.get("tool") != self.tool:
            return 404, {"detail": "no tool '%s' in this org" %
                         req.get("tool")}
        if not isinstance(args, list) or not all(isinstance(a, str)
                                                 for a in args):
            return 422, {"detail": "args must be an array of strings"}
        result = await run_cli(self.path, args, timeout)
        result["tool"] = self.tool
        return 200, result


async def main():
    port, token, tool = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    path = shutil.which(tool, path="/usr/local/bin:/usr/bin:/bin")
    if path is None:
        sys.exit("run-py: %s is not installed" % tool)
    srv = Server(token, tool, path)
    server = await asyncio.start_server(srv.handle, "127.0.0.1", port)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
