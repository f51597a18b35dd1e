# exp3.py MODE OUTDIR : Litestream restarts while one server stays up; others come and go cleanly.
import sys, os, time, subprocess, json, shutil, sqlite3, re
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__))); from drive import Server
LS = os.environ.get("LITESTREAM", "litestream"); TB = os.environ.get("TB", "target/release/thoughtbox")
mode, out = sys.argv[1], sys.argv[2]
shutil.rmtree(out, ignore_errors=True); os.makedirs(out)
db = f"{out}/t.db"; rep = f"{out}/replica"; extra = ("--checkpoints", mode)
keeper = Server(db, extra); sid = keeper.call("start_new", {"sessionTitle": "r"})["sessionId"]
cfg = f"{out}/litestream.yml"
open(cfg, "w").write(subprocess.check_output([TB, "--db", db, "replication", "config", "--dir", rep]).decode())
n = 0
def write(srv, k):
    global n
    for i in range(k):
        n += 1; srv.call("thought", {"sessionId": sid, "thought": f"t{n}", "thoughtNumber": n, "totalThoughts": n, "nextThoughtNeeded": True})
for rnd in range(4):
    ls = subprocess.Popen([LS, "replicate", "-config", cfg, "-log-level", "debug"], stdout=open(f"{out}/ls{rnd}.log", "w"), stderr=subprocess.STDOUT)
    time.sleep(1.5); write(keeper, 100); time.sleep(1.5)
    ls.terminate(); ls.wait()
    write(keeper, 50)
    other = Server(db, extra); write(other, 50); other.close()
    time.sleep(2.5)  # the keeper's quiet checkpoint would run now
ls = subprocess.Popen([LS, "replicate", "-config", cfg, "-log-level", "debug"], stdout=open(f"{out}/ls9.log", "w"), stderr=subprocess.STDOUT)
time.sleep(3); keeper.close(); time.sleep(1.5); ls.terminate(); ls.wait()
snaps = []; reasons = set()
for f in sorted(os.listdir(out)):
    if f.startswith("ls") and f.endswith(".log"):
        t = open(f"{out}/{f}").read()
        snaps.append(sum(1 for l in t.splitlines() if "snap=true" in l and "msg=sync" in l))
        reasons |= set(re.findall(r'reason="([^"]+)"', t))
subprocess.run([LS, "restore", "-o", f"{out}/restored.db", f"file://{rep}"], check=True, capture_output=True)
got = sqlite3.connect(f"{out}/restored.db").execute("select count(*) from thoughts").fetchone()[0]
print(json.dumps({"mode": mode, "written": n, "restored": got, "snapshots_per_litestream_start": snaps, "reasons": sorted(reasons)}))
