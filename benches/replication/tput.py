# tput.py : thoughts/s, alternating A B A B: 1 process vs 4 processes on one file, with and without Litestream.
import sys, os, time, subprocess, json, shutil, threading
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__))); from drive import Server
LS = os.environ.get("LITESTREAM", "litestream"); TB = os.environ.get("TB", "target/release/thoughtbox")
def run(procs, total, litestream):
    out = os.environ.get("OUT", "/tmp/thoughtbox-tput"); shutil.rmtree(out, ignore_errors=True); os.makedirs(out); db = f"{out}/t.db"
    Server(db).close()
    ls = None
    if litestream:
        cfg = f"{out}/ls.yml"; open(cfg, "w").write(subprocess.check_output([TB, "--db", db, "replication", "config", "--dir", f"{out}/rep"]).decode())
        ls = subprocess.Popen([LS, "replicate", "-config", cfg], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); time.sleep(1.5)
    servers = [Server(db) for _ in range(procs)]
    sids = [s.call("start_new", {"sessionTitle": "t"})["sessionId"] for s in servers]
    [s.call("cipher", {}) for s in servers]
    per = total // procs
    def go(s, sid):
        for i in range(per): s.call("thought", {"sessionId": sid, "thought": f"thought {i} about the lighthouse", "nextThoughtNeeded": True})
    t0 = time.time(); ts = [threading.Thread(target=go, args=(s, sid)) for s, sid in zip(servers, sids)]
    [t.start() for t in ts]; [t.join() for t in ts]; dt = time.time() - t0
    [s.close() for s in servers]
    if ls: ls.terminate(); ls.wait()
    return round(per * procs / dt)
res = {}
for rnd in range(2):
    for key in [(1, False), (4, False), (1, True), (4, True)]:
        res.setdefault(f"{key[0]}proc{'+litestream' if key[1] else ''}", []).append(run(key[0], 4000, key[1]))
print(json.dumps(res))
