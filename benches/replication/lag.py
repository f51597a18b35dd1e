# lag.py OUT SECONDS : one server writes a thought every 20 ms; a follower restore (-f, 100 ms) is polled
# with fresh read-only connections; lag = first seen in the replica copy - acknowledged.
import sys, os, time, subprocess, json, shutil, sqlite3, threading
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__))); from drive import Server
LS = os.environ.get("LITESTREAM", "litestream"); TB = os.environ.get("TB", "target/release/thoughtbox"); out = sys.argv[1]; secs = float(sys.argv[2])
shutil.rmtree(out, ignore_errors=True); os.makedirs(out)
db = f"{out}/t.db"; rep = f"{out}/replica"
p = Server(db); sid = p.call("start_new", {"sessionTitle": "lag"})["sessionId"]; p.call("cipher", {})
cfg = f"{out}/ls.yml"; open(cfg, "w").write(subprocess.check_output([TB, "--db", db, "replication", "config", "--dir", rep]).decode())
ls = subprocess.Popen([LS, "replicate", "-config", cfg], stdout=open(f"{out}/ls.log", "w"), stderr=subprocess.STDOUT)
time.sleep(2.5)
fol = subprocess.Popen([LS, "restore", "-f", "-follow-interval", "100ms", "-o", f"{out}/standby.db", f"file://{rep}"], stdout=open(f"{out}/fol.log", "w"), stderr=subprocess.STDOUT)
time.sleep(2)
seen = {}; stop = threading.Event()
def watch():
    while not stop.is_set():
        try:
            c = sqlite3.connect(f"file:{out}/standby.db?mode=ro", uri=True)
            m = c.execute("select coalesce(max(thought_number),0) from thoughts").fetchone()[0]; c.close()
            now = time.time()
            for n in range(len(seen) + 1, m + 1): seen.setdefault(n, now)
        except sqlite3.Error: pass
        time.sleep(0.02)
threading.Thread(target=watch, daemon=True).start()
acked = {}; t0 = time.time(); n = 0
while time.time() - t0 < secs:
    n += 1; p.call("thought", {"sessionId": sid, "thought": f"t{n}", "nextThoughtNeeded": True}); acked[n] = time.time()
    time.sleep(0.02)
time.sleep(4); stop.set()
lags = sorted(seen[k] - acked[k] for k in acked if k in seen)
q = lambda f: round(1000 * lags[min(len(lags) - 1, int(f * len(lags)))])
print(json.dumps({"thoughts": n, "seen": len(lags), "lag_p50_ms": q(0.5), "lag_p99_ms": q(0.99), "lag_max_ms": round(1000*lags[-1])}))
fol.terminate(); p.close(); ls.terminate(); fol.wait(); ls.wait()
