# exp.py MODE CLEAN OUTDIR : 4 servers x 500 thoughts while Litestream replicates; then restore and count.
import sys, os, time, subprocess, threading, json, glob, shutil
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__))); from drive import Server
LS = os.environ.get("LITESTREAM", "litestream")
mode, clean, out = sys.argv[1], sys.argv[2] == "clean", sys.argv[3]
shutil.rmtree(out, ignore_errors=True); os.makedirs(out)
db = f"{out}/t.db"; rep = f"{out}/replica"
extra = ("--checkpoints", mode)
# Create the ledger first, so Litestream has a file to watch.
s = Server(db, extra); s.call("get_state", {}); s.close()
cfg = f"{out}/litestream.yml"
open(cfg, "w").write(subprocess.check_output([os.environ.get("TB", "target/release/thoughtbox"), "--db", db, "replication", "config", "--dir", rep]).decode())
ls = subprocess.Popen([LS, "replicate", "-config", cfg, "-log-level", "debug"], stdout=open(f"{out}/ls.log","w"), stderr=subprocess.STDOUT)
time.sleep(1.5)
exits = []; maxwal = [0]; acked = {}
def walwatch(stop):
    while not stop.is_set():
        try: maxwal[0] = max(maxwal[0], os.path.getsize(db + "-wal"))
        except OSError: pass
        time.sleep(0.05)
stop = threading.Event(); threading.Thread(target=walwatch, args=(stop,), daemon=True).start()
def worker(w):
    sid = None; n = 0
    srv = Server(db, extra)
    sid = srv.call("start_new", {"sessionTitle": f"w{w}"})["sessionId"]
    for i in range(500):
        if clean and i and i % 50 == 0:
            exits.append(srv.close()); srv = Server(db, extra)
        r = srv.call("thought", {"sessionId": sid, "thought": f"w{w} t{i+1} text", "thoughtNumber": i + 1, "totalThoughts": 500, "nextThoughtNeeded": True})
        acked[(w, i + 1)] = time.time()
    if clean: exits.append(srv.close())
    else: srv.kill()
t0 = time.time()
ts = [threading.Thread(target=worker, args=(w,)) for w in range(4)]
[t.start() for t in ts]; [t.join() for t in ts]
wall = time.time() - t0
time.sleep(2.5)  # > sync interval
ls.kill(); ls.wait(); stop.set()
subprocess.run([LS, "restore", "-o", f"{out}/restored.db", f"file://{rep}"], check=True, capture_output=True)
import sqlite3
c = sqlite3.connect(f"{out}/restored.db")
n = c.execute("select count(*) from thoughts").fetchone()[0]
logs = "".join(open(f).read() for f in glob.glob(db + ".*.log"))
lslog = open(f"{out}/ls.log").read()
snaps = sum(1 for l in lslog.splitlines() if "snap=true" in l and "msg=sync" in l)
exits.sort()
print(json.dumps({"mode": mode, "clean": clean, "restored": n, "acked": len(acked), "wall_s": round(wall,2),
  "exit_p50_ms": round(1000*exits[len(exits)//2]) if exits else None, "exit_max_ms": round(1000*exits[-1]) if exits else None,
  "exits": len(exits), "could_not_empty": logs.count("could not empty the WAL at exit"), "max_wal_MiB": round(maxwal[0]/2**20,1),
  "ls_snapshots": snaps, "ls_errors": lslog.count("level=ERROR")}))
