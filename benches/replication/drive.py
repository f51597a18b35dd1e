# Drive N thoughtbox stdio servers writing thoughts; optional clean exit per batch.
import json, subprocess, sys, time, os, threading
BIN = os.environ.get("TB", "target/release/thoughtbox")
class Server:
    def __init__(self, db, extra=()):
        self.p = subprocess.Popen([BIN, "--db", db, "serve", "--no-stages", *extra], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=open(db + f".{os.getpid()}.{id(self)}.log", "w"))
        self.n = 0
        self.rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "d", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    def send(self, m):
        self.p.stdin.write((json.dumps(m) + "\n").encode()); self.p.stdin.flush()
    def rpc(self, method, params):
        self.n += 1
        self.send({"jsonrpc": "2.0", "id": self.n, "method": method, "params": params})
        while True:
            line = self.p.stdout.readline()
            if not line: raise RuntimeError("server gone")
            m = json.loads(line)
            if m.get("id") == self.n: return m
    def call(self, op, args):
        r = self.rpc("tools/call", {"name": "thoughtbox_gateway", "arguments": {"operation": op, "args": args}})
        res = r["result"]
        if res.get("isError"): raise RuntimeError(res["content"][0]["text"])
        return json.loads(res["content"][0]["text"])
    def close(self):
        t = time.time(); self.p.stdin.close(); self.p.wait(); return time.time() - t
    def kill(self):
        self.p.kill(); self.p.wait()
