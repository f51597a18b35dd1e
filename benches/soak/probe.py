#!/usr/bin/env python3
"""Timings and memory on a large ledger (one the soak test left), through one server over stdio.

Usage: probe.py DB [BIN]    (BIN: target/release/thoughtbox, or $TB_BIN)

Prints the p50 of `list_sessions` by status and by tags, of `session search` for a word in
every thought (`soakword`) and a common one (`pinvassha`), and the server's resident memory
after four `deep_analysis` calls of the largest session and two seconds later. Run it with an
older build and a newer one on the same ledger to compare them; a build of a newer schema
migrates the ledger, after which an older one refuses it.
"""
import json, os, sqlite3, statistics, subprocess, sys, time

DB = sys.argv[1]
BIN = sys.argv[2] if len(sys.argv) > 2 else os.environ.get("TB_BIN", "target/release/thoughtbox")
proc = subprocess.Popen([BIN, "--db", DB], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                        stderr=subprocess.DEVNULL)
next_id = 0


def rpc(method, params=None, notify=False):
    global next_id
    m = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        m["params"] = params
    if not notify:
        next_id += 1
        m["id"] = next_id
    proc.stdin.write((json.dumps(m) + "\n").encode())
    proc.stdin.flush()
    if notify:
        return None
    while True:
        answer = json.loads(proc.stdout.readline())
        if answer.get("id") == next_id:
            return answer


def gw(op, args):
    """One gateway call: (answer, milliseconds)."""
    t = time.perf_counter()
    r = rpc("tools/call", {"name": "thoughtbox_gateway", "arguments": {"operation": op, "args": args}})
    ms = (time.perf_counter() - t) * 1000
    res = r["result"]
    if res.get("isError"):
        raise SystemExit(f"{op} {args}: {res}")
    return res.get("structuredContent") or json.loads(res["content"][0]["text"]), ms


def p50(op, args, n):
    times = [gw(op, args)[1] for _ in range(n)]
    return statistics.median(times)


def rss_mib():
    with open(f"/proc/{proc.pid}/status") as f:
        line = next(l for l in f if l.startswith("VmRSS"))
    return int(line.split()[1]) / 1024


rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "probe", "version": "1"}})
rpc("notifications/initialized", notify=True)
for name, args in [
    ("status completed", {"status": "completed", "limit": 20}),
    ("status active", {"status": "active", "limit": 20}),
    ("tags soak + area-3, by title", {"tags": ["soak", "area-3"], "sortBy": "title", "limit": 50}),
    ("no filter, by updatedAt", {"sortBy": "updatedAt", "limit": 20}),
]:
    print(f"list_sessions {name}: p50 {p50('list_sessions', args, 30):.2f} ms")
largest = sqlite3.connect(DB).execute("SELECT id FROM sessions ORDER BY thought_count DESC LIMIT 1").fetchone()[0]
gw("load_context", {"sessionId": largest, "reopen": False})
gw("session", {"subOperation": "search", "query": "warmup", "limit": 10})
for word in ["soakword", "pinvassha"]:
    ms = p50("session", {"subOperation": "search", "query": word, "limit": 10}, 15)
    print(f"session search {word}: p50 {ms:.2f} ms")
gw("cipher", {"brief": True})
for _ in range(4):
    gw("deep_analysis", {"sessionId": largest, "analysisType": "full"})
print(f"RSS after 4 deep_analysis of the largest session: {rss_mib():.1f} MiB")
time.sleep(2)
print(f"RSS 2 s later: {rss_mib():.1f} MiB")
proc.stdin.close()
proc.wait()
