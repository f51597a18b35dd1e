# r100k.py [OUT] : 100,000 thoughts from 4 servers while Litestream replicates; then restore time (3 runs) and repair --check.
import sys, os, time, subprocess, json, shutil, threading
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__))); from drive import Server
LS = os.environ.get("LITESTREAM", "litestream"); TB = os.environ.get("TB", "target/release/thoughtbox"); out = sys.argv[1] if len(sys.argv) > 1 else "/tmp/thoughtbox-r100k"
shutil.rmtree(out, ignore_errors=True); os.makedirs(out); db = f"{out}/t.db"
Server(db).close()
cfg = f"{out}/ls.yml"; open(cfg, "w").write(subprocess.check_output([TB, "--db", db, "replication", "config", "--dir", f"{out}/rep"]).decode())
ls = subprocess.Popen([LS, "replicate", "-config", cfg], stdout=open(f"{out}/ls.log", "w"), stderr=subprocess.STDOUT); time.sleep(1.5)
servers = [Server(db) for _ in range(4)]
sids = [s.call("start_new", {"sessionTitle": f"s{i}"})["sessionId"] for i, s in enumerate(servers)]
[s.call("cipher", {}) for s in servers]
def go(s, sid, k):
    for i in range(25000):
        s.call("thought", {"sessionId": sid, "thought": f"writer {k} thought {i}: a line of reasoning about lighthouses, tides and the keeper's log, long enough to look like a thought", "nextThoughtNeeded": True})
t0 = time.time(); ts = [threading.Thread(target=go, args=(s, sid, k)) for k, (s, sid) in enumerate(zip(servers, sids))]
[t.start() for t in ts]; [t.join() for t in ts]; wall = time.time() - t0
[s.close() for s in servers]; time.sleep(3); ls.terminate(); ls.wait()
res = {"write_s": round(wall, 1), "db_MiB": round((os.path.getsize(db) + (os.path.getsize(db + "-wal") if os.path.exists(db + "-wal") else 0)) / 2**20, 1)}
files = sum(len(fs) for _, _, fs in os.walk(f"{out}/rep")); res["replica_files"] = files
res["replica_MiB"] = round(sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(f"{out}/rep") for f in fs) / 2**20, 1)
times = []
for i in range(3):
    o = f"{out}/restored{i}.db"; t = time.time()
    subprocess.run([LS, "restore", "-o", o, f"file://{out}/rep"], check=True, capture_output=True); times.append(round(time.time() - t, 2))
res["restore_s"] = times
t = time.time(); r = subprocess.run([TB, "--db", f"{out}/restored0.db", "repair", "--check", "--json"], capture_output=True); res["check_s"] = round(time.time() - t, 2)
res["check"] = json.loads(r.stdout)["sound"]; res["thoughts"] = json.loads(r.stdout)["thoughts"]
print(json.dumps(res))
