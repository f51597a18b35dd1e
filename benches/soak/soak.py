#!/usr/bin/env python3
"""Soak driver for thoughtbox: one long-running server over stdio, stdlib only.

Usage: soak.py DBPATH OUTDIR MAX_SECONDS MAX_THOUGHTS [WINDOW]
Writes OUTDIR/metrics.jsonl (one line per window), OUTDIR/findings.jsonl (errors to valid
input, unexpected answers), OUTDIR/stderr.txt (server stderr), OUTDIR/acked.json (what was
acknowledged), OUTDIR/final.json (end checks).
"""
import json, os, random, subprocess, sys, time, uuid, sqlite3, re

BIN = os.environ.get("TB_BIN", "target/release/thoughtbox")
DB, OUT = sys.argv[1], sys.argv[2]
MAX_SECONDS, MAX_THOUGHTS = float(sys.argv[3]), int(sys.argv[4])
WINDOW = int(sys.argv[5]) if len(sys.argv) > 5 else 25000
os.makedirs(OUT, exist_ok=True)
rng = random.Random(21)

# ---------------------------------------------------------------- text
SYL = ["ka", "lo", "mi", "ren", "tu", "vas", "qel", "dor", "pin", "sha", "ix", "bre", "nol", "fu", "gat",
       "hem", "jor", "zel", "wic", "yas", "cro", "plu", "ter", "obi", "lan"]
VOCAB = sorted({"".join(rng.choice(SYL) for _ in range(rng.randint(2, 4))) for _ in range(4000)})
rng.shuffle(VOCAB)
VOCAB = VOCAB[:3000]
WEIGHTS = [1.0 / (i + 1) for i in range(len(VOCAB))]
CUM = []
acc = 0.0
for w in WEIGHTS:
    acc += w
    CUM.append(acc)
COMMON = "soakword"  # in every thought
MID = VOCAB[300]      # mid frequency
rare_words = []       # (word, session_id)


def text(extra=None):
    n = rng.randint(40, 90)
    words = rng.choices(VOCAB, cum_weights=CUM, k=n)
    words.insert(rng.randint(0, n), COMMON)
    if extra:
        words.insert(rng.randint(0, n), extra)
    return " ".join(words)


# ---------------------------------------------------------------- process
stderr_f = open(os.path.join(OUT, "stderr.txt"), "w")
proc = subprocess.Popen([BIN, "--db", DB], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                        stderr=stderr_f, bufsize=1 << 16)
PID = proc.pid
findings = open(os.path.join(OUT, "findings.jsonl"), "a")
metrics_f = open(os.path.join(OUT, "metrics.jsonl"), "a")
nfind = {"n": 0}


def finding(kind, **kw):
    nfind["n"] += 1
    kw["kind"] = kind
    kw["t"] = round(time.time() - T0, 1)
    kw["thoughts"] = stats["thoughts"]
    s = json.dumps(kw)
    if len(s) > 20000:
        s = s[:20000] + "...(cut)"
    findings.write(s + "\n")
    findings.flush()


next_id = [0]
lat = {}  # kind -> list of seconds (window)
lat_all = {}  # kind -> list (all, for first/last comparisons we keep per window only)


def send_line(line):
    proc.stdin.write(line.encode() + b"\n")
    proc.stdin.flush()


def read_answer(want_id, req_for_log):
    while True:
        raw = proc.stdout.readline()
        if not raw:
            finding("stdout_eof", request=req_for_log)
            raise SystemExit("server stdout closed")
        try:
            m = json.loads(raw)
        except Exception:
            finding("non_json_stdout", line=raw[:2000].decode("utf-8", "replace"))
            continue
        if not isinstance(m, dict) or m.get("jsonrpc") != "2.0":
            finding("non_jsonrpc_stdout", line=raw[:2000].decode("utf-8", "replace"))
            continue
        if "id" in m and "method" not in m:
            if m["id"] == want_id:
                return m
            finding("unexpected_id", got=m.get("id"), want=want_id, line=raw[:500].decode("utf-8", "replace"))
            continue
        # server notification or request
        finding("server_message", line=raw[:1000].decode("utf-8", "replace"))
        if "id" in m and "method" in m:
            send_line(json.dumps({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32601, "message": "no"}}))


def rpc(method, params=None):
    next_id[0] += 1
    i = next_id[0]
    m = {"jsonrpc": "2.0", "id": i, "method": method}
    if params is not None:
        m["params"] = params
    send_line(json.dumps(m))
    return read_answer(i, m)


def gw(kind, op, args=None, expect_error=False, **extra_top):
    """Call the gateway. Returns (payload dict, isError). Records latency under kind."""
    arguments = {"operation": op}
    if args is not None:
        arguments["args"] = args
    arguments.update(extra_top)
    next_id[0] += 1
    i = next_id[0]
    req = {"jsonrpc": "2.0", "id": i, "method": "tools/call",
           "params": {"name": "thoughtbox_gateway", "arguments": arguments}}
    line = json.dumps(req)
    t = time.perf_counter()
    send_line(line)
    ans = read_answer(i, req)
    dt = time.perf_counter() - t
    lat.setdefault(kind, []).append(dt)
    if "error" in ans:
        if not expect_error:
            finding("jsonrpc_error_valid_input", op_kind=kind, request=arguments, answer=ans)
        return ans["error"], True
    res = ans["result"]
    payload = res.get("structuredContent")
    if payload is None:
        try:
            payload = json.loads(res["content"][0]["text"])
        except Exception:
            payload = {"_raw": res}
    err = bool(res.get("isError"))
    if err and not expect_error:
        finding("error_valid_input", op_kind=kind, request=arguments, answer=payload)
    if expect_error and not err:
        finding("no_error_bad_input", op_kind=kind, request=arguments, answer=str(payload)[:2000])
    if dt > 2.0:
        finding("slow_call", op_kind=kind, seconds=round(dt, 3), request=str(arguments)[:500])
    return payload, err


# ---------------------------------------------------------------- state
class S:
    __slots__ = ("id", "title", "tags", "main", "branches", "target", "closed", "huge", "rare", "created")

    def __init__(self, sid, title, tags, target, huge):
        self.id, self.title, self.tags, self.target, self.huge = sid, title, tags, target, huge
        self.main = []          # acknowledged main-chain numbers, in order
        self.branches = {}      # branch id -> list of numbers
        self.closed = False
        self.rare = []
        self.created = time.time()

    def count(self):
        return len(self.main) + sum(len(v) for v in self.branches.values())


sessions = {}          # id -> S
order = []             # creation order of ids (incl. deleted; filtered on use)
deleted = set()
stats = {"thoughts": 0, "sessions_created": 0, "deleted": 0, "bad_inputs": 0, "reads": 0}
T0 = time.time()
cur = None             # current S
branch_state = None    # (bid, from, remaining) when writing a branch
nbranch = [0]


def size_target():
    r = rng.random()
    if r < 0.50:
        return rng.randint(5, 10)
    if r < 0.80:
        return rng.randint(11, 60)
    if r < 0.955:
        return rng.randint(60, 400)
    return rng.randint(400, 3000)


def start_new(huge=False):
    global cur, branch_state
    k = stats["sessions_created"]
    tags = ["soak", "area-%d" % (k % 37)]
    if huge:
        tags.append("huge")
    if k % 11 == 0:
        tags.append("eleven")
    title = "%s session %d %s" % (rng.choice(VOCAB[:200]), k, "huge" if huge else "")
    p, err = gw("start_new", "start_new", {"sessionTitle": title.strip(), "tags": tags,
                                           "description": text()[:300]})
    if err:
        return None
    sid = p["session"]["id"]
    target = rng.randint(20000, 45000) if huge else size_target()
    s = S(sid, title, tags, target, huge)
    sessions[sid] = s
    order.append(sid)
    stats["sessions_created"] += 1
    cur = s
    branch_state = None
    return s


def load_context(s, kind="load_context", reopen=None, back=False):
    global cur, branch_state
    a = {"sessionId": s.id}
    if reopen is not None:
        a["reopen"] = reopen
    p, err = gw(kind, "load_context", a)
    if err:
        return False
    ri = p.get("restorationInfo", {})
    exp_next = (max(s.main) + 1) if s.main else 1
    if ri.get("thoughtCount") != s.count() or ri.get("currentThoughtNumber") not in (exp_next - 1, exp_next) \
            or ("#%d" % exp_next) not in str(ri.get("message")):
        finding("load_context_mismatch", sessionId=s.id, got=ri, expCount=s.count(), expNext=exp_next)
    if not back:
        cur = s
        branch_state = None
        if reopen is not False:
            s.closed = False
    return True


def add_thought(close=False):
    """One thought in cur, following the plan (branch / revision / main)."""
    global branch_state
    s = cur
    a = {"nextThoughtNeeded": not close}
    extra = None
    if rng.random() < 0.0015:
        extra = "rz" + "".join(rng.choice("bcdfghjklmnpqrstvwxz") for _ in range(9))
    a["thought"] = text(extra)
    chain = None
    if close:
        branch_state = None
    if branch_state is None and not close and len(s.main) >= 3 and rng.random() < 0.012:
        nbranch[0] += 1
        bid = "br-%d" % nbranch[0]
        frm = rng.choice(s.main)
        branch_state = [bid, frm, rng.randint(2, 15)]
        a["branchId"] = bid
        a["branchFromThought"] = frm
        chain = bid
        expected = frm + 1
    elif branch_state is not None:
        bid = branch_state[0]
        a["branchId"] = bid
        chain = bid
        lst = s.branches[bid]
        expected = max(lst) + 1
        if rng.random() < 0.05:
            a["revisesThought"] = rng.choice(lst)
    else:
        expected = (max(s.main) + 1) if s.main else 1
        if s.main and rng.random() < 0.02:
            a["revisesThought"] = rng.choice(s.main)
    if rng.random() < 0.3:
        a["totalThoughts"] = max(expected, s.target)
    p, err = gw("thought", "thought", a)
    if err:
        return False
    n = p.get("thoughtNumber")
    nid = p.get("nodeId")
    exp_nid = "%s:%s%d" % (s.id, (chain + ":") if chain else "", expected)
    if n != expected or nid != exp_nid or p.get("sessionId") != s.id:
        finding("thought_number_mismatch", expected=expected, expNode=exp_nid, answer=p, request=a)
    if chain:
        s.branches.setdefault(chain, []).append(n)
        branch_state[2] -= 1
        if branch_state[2] <= 0:
            branch_state = None
    else:
        s.main.append(n)
    if extra:
        s.rare.append(extra)
        rare_words.append((extra, s.id))
    stats["thoughts"] += 1
    if close:
        if not p.get("sessionClosed"):
            finding("close_not_reported", answer=p)
        s.closed = True
    return True


def live(pred=lambda s: True):
    return [sessions[i] for i in order if i not in deleted and pred(sessions[i])]


# ---------------------------------------------------------------- reads
def pick_old():
    ids = [i for i in order[: max(1, len(order) // 10)] if i not in deleted]
    return sessions[rng.choice(ids)] if ids else None


def small_sessions():
    return live(lambda s: 0 < s.count() <= 300)


def reads_round():
    """A mix of reads, measured by kind."""
    stats["reads"] += 1
    s = cur
    if s and s.main and not s.closed:
        gw("read_last", "read_thoughts", {"last": 5})
        mx = max(s.main)
        st = rng.randint(1, mx)
        gw("read_range", "read_thoughts", {"range": [st, min(mx, st + 19)], "sessionId": s.id})
        p, _ = gw("get_structure", "get_structure", {})
        if isinstance(p, dict) and p.get("totalThoughts") not in (None, s.count()):
            finding("structure_count_mismatch", sessionId=s.id, got=p.get("totalThoughts"), exp=s.count())
    gw("get_state", "get_state", {})
    # old session reads (no switch)
    o = pick_old()
    if o and o.main:
        gw("read_range_old", "read_thoughts", {"range": [1, min(20, max(o.main))], "sessionId": o.id})
        p, _ = gw("structure_old", "get_structure", {"sessionId": o.id})
        if isinstance(p, dict) and p.get("totalThoughts") != o.count():
            finding("structure_count_mismatch", sessionId=o.id, got=p.get("totalThoughts"), exp=o.count())
        gw("session_get_meta", "session", {"subOperation": "get", "sessionId": o.id, "includeThoughts": False})
    # list sessions variants
    gw("list_updated", "list_sessions", {"sortBy": "updatedAt", "sortOrder": "desc", "limit": 20})
    gw("list_created_asc", "list_sessions", {"sortBy": "createdAt", "sortOrder": "asc", "limit": 20,
                                              "offset": rng.randint(0, max(0, len(order) - 20))})
    gw("list_tag_title", "list_sessions", {"tags": ["soak", "area-%d" % rng.randint(0, 36)], "sortBy": "title",
                                            "limit": 50})
    gw("session_list_status", "session", {"subOperation": "list", "status": "completed", "limit": 20,
                                          "sortBy": "updatedAt"})
    gw("list_updated_deep", "list_sessions", {"sortBy": "updatedAt", "limit": 20,
                                             "offset": max(0, len(order) - len(deleted) - 25)})
    gw("list_search_title", "list_sessions", {"search": rng.choice(VOCAB[:200]), "limit": 10})
    # search (the first pays for indexing the thoughts written since the last search)
    gw("search_index_pending", "session", {"subOperation": "search", "query": "qqpendingprobe", "limit": 10})
    gw("search_common", "session", {"subOperation": "search", "query": COMMON, "limit": 10})
    gw("search_mid", "session", {"subOperation": "search", "query": MID + " " + VOCAB[5], "limit": 10})
    if rare_words:
        w, sid = rng.choice(rare_words[-2000:] if rng.random() < 0.5 else rare_words)
        p, err = gw("search_rare", "session", {"subOperation": "search", "query": w, "limit": 10})
        if not err and sid not in deleted:
            ids = [x["session"]["id"] for x in p.get("sessions", [])]
            if sid not in ids:
                finding("rare_search_miss", word=w, sessionId=sid, got=ids)
    gw("search_none", "session", {"subOperation": "search", "query": "zzqqxxnothing", "limit": 10})
    # exports of small sessions
    sm = small_sessions()
    if sm:
        e = rng.choice(sm)
        gw("export_md", "session", {"subOperation": "export", "sessionId": e.id, "format": "markdown"})
        p, err = gw("export_json", "session", {"subOperation": "export", "sessionId": e.id, "format": "json"})
        if not err:
            c = p.get("content")
            try:
                c = json.loads(c) if isinstance(c, str) else c
                nodes = c.get("nodes")
                if nodes is not None and len(nodes) != e.count():
                    finding("export_count_mismatch", sessionId=e.id, got=len(nodes), exp=e.count())
            except Exception as ex:
                finding("export_parse", err=str(ex))
        gw("deep_small", "deep_analysis", {"sessionId": e.id, "analysisType": "full"})
        gw("analyze_small", "session", {"subOperation": "analyze", "sessionId": e.id})
    # knowledge
    gw("k_search", "knowledge", {"subOperation": "search", "query": rng.choice(VOCAB[:50])})
    gw("k_list_patterns", "knowledge", {"subOperation": "list_patterns", "tags": ["kt-%d" % rng.randint(0, 9)],
                                        "limit": 20, "includeContent": False})


def old_load_context_probe():
    """load_context of an old session (reopen false), then back to the current one."""
    o = pick_old()
    if o is None or o is cur:
        return
    load_context(o, "load_context_old", reopen=False, back=True)
    if cur is not None:
        load_context(cur, "load_context_back", back=True)


def knowledge_write():
    k = stats["thoughts"]
    gw("k_create_pattern", "knowledge", {"subOperation": "create_pattern", "title": "pattern %d %s" % (k, rng.choice(VOCAB)),
                                         "description": text()[:300], "content": text() + "\n" + text(),
                                         "tags": ["kt-%d" % (k % 10), "soak"]})
    gw("k_write_note", "knowledge", {"subOperation": "write_scratchpad", "topic": "topic %d" % rng.randint(0, 300),
                                     "content": text()})


def delete_one():
    cands = live(lambda s: s.closed and s is not cur and s.count() <= 1000 and not s.huge)
    if not cands:
        return
    d = rng.choice(cands[: max(1, len(cands) // 2)])
    p, err = gw("session_delete", "session", {"subOperation": "delete", "sessionId": d.id})
    if not err:
        if p.get("thoughtsDeleted") != d.count():
            finding("delete_count_mismatch", sessionId=d.id, got=p, exp=d.count())
        deleted.add(d.id)
        stats["deleted"] += 1
        p2, err2 = gw("bad_get_deleted", "session", {"subOperation": "get", "sessionId": d.id}, expect_error=True)
        if not err2 or p2.get("code") != "SESSION_NOT_FOUND":
            finding("deleted_still_there", sessionId=d.id, answer=str(p2)[:500])


BAD = 0


def bad_input():
    global BAD
    BAD += 1
    stats["bad_inputs"] += 1
    k = BAD % 13
    other = live(lambda s: s is not cur)
    if k == 0:
        gw("bad", "thought", {"thought": "missing flag"}, expect_error=True)
    elif k == 1:
        gw("bad", "thought", {"thought": "x", "nextThoughtNeeded": True, "branchId": "Bad_ID"}, expect_error=True)
    elif k == 2:
        gw("bad", "thought", {"thought": "x", "nextThoughtNeeded": True, "revisesThought": 10 ** 9}, expect_error=True)
    elif k == 3:
        gw("bad", "thinkk", {}, expect_error=True)
    elif k == 4:
        gw("bad", "read_thoughts", {"thoughtNumber": 10 ** 8}, expect_error=True)
    elif k == 5:
        gw("bad", "session", {"subOperation": "get", "sessionId": str(uuid.uuid4())}, expect_error=True)
    elif k == 6:
        gw("bad", "load_context", {"sessionId": str(uuid.uuid4())}, expect_error=True)
    elif k == 7:
        gw("bad", "knowledge", {"subOperation": "get_pattern", "id": "no-such-pattern-xyz"}, expect_error=True)
    elif k == 8:
        gw("bad", "read_thoughts", {"range": [5, 2]}, expect_error=True)
    elif k == 9:
        next_id[0] += 1
        i = next_id[0]
        line = '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"thoughtbox_gateway","arguments":{"operation":"get_state","x":NaN}}}' % i
        t = time.perf_counter()
        send_line(line)
        ans = read_answer(i, line)
        lat.setdefault("bad", []).append(time.perf_counter() - t)
        if "error" not in ans or ans["error"].get("code") != -32700:
            finding("nan_line_unexpected", answer=ans)
    elif k == 10:
        gw("bad", "thought", {"thought": "   ", "nextThoughtNeeded": True}, expect_error=True)
    elif k == 11:
        if other:
            gw("bad", "thought", {"thought": "wrong session", "nextThoughtNeeded": True, "sessionId": rng.choice(other).id},
               expect_error=True)
    elif k == 12:
        gw("bad", "thought", {"thought": "x", "nextThoughtNeeded": True, "thougthNumber": 3}, expect_error=True)


# ---------------------------------------------------------------- metrics
def proc_status():
    d = {}
    try:
        with open("/proc/%d/status" % PID) as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("VmRSS", "VmHWM", "Threads"):
                    d[k] = int(v.split()[0])
        d["fds"] = len(os.listdir("/proc/%d/fd" % PID))
        with open("/proc/%d/stat" % PID) as f:
            parts = f.read().rsplit(")", 1)[1].split()
            d["cpu_s"] = (int(parts[11]) + int(parts[12])) / os.sysconf("SC_CLK_TCK")
    except Exception as ex:
        d["err"] = str(ex)
    return d


def fsize(p):
    try:
        return os.path.getsize(p)
    except OSError:
        return -1


wal_max = [0]
shm_max = [0]


def sample_files():
    w, s = fsize(DB + "-wal"), fsize(DB + "-shm")
    wal_max[0] = max(wal_max[0], w)
    shm_max[0] = max(shm_max[0], s)


def pct(v, q):
    if not v:
        return None
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))]


last_window = {"t": time.time(), "n": 0, "cpu": 0.0}


def write_metrics(final=False):
    now = time.time()
    st = proc_status()
    row = {"thoughts": stats["thoughts"], "elapsed_s": round(now - T0, 1),
           "rate": round((stats["thoughts"] - last_window["n"]) / max(1e-9, now - last_window["t"]), 1),
           "sessions_live": len(order) - len(deleted), "sessions_created": stats["sessions_created"],
           "deleted": stats["deleted"], "findings": nfind["n"],
           "rss_kb": st.get("VmRSS"), "hwm_kb": st.get("VmHWM"), "threads": st.get("Threads"),
           "fds": st.get("fds"), "server_cpu_s": st.get("cpu_s"),
           "wal": fsize(DB + "-wal"), "shm": fsize(DB + "-shm"), "wal_max_window": wal_max[0],
           "shm_max_window": shm_max[0], "db": fsize(DB), "lat": {}}
    for k, v in sorted(lat.items()):
        row["lat"][k] = {"n": len(v), "p50_ms": round(pct(v, 0.5) * 1000, 3), "p99_ms": round(pct(v, 0.99) * 1000, 3),
                         "max_ms": round(max(v) * 1000, 3)}
    if final:
        row["final"] = True
    metrics_f.write(json.dumps(row) + "\n")
    metrics_f.flush()
    print("[%7.1fs] %8d thoughts %6.0f/s rss=%s hwm=%s thr=%s fds=%s wal=%s/%s db=%.1fMB thought p50/p99=%s/%s find=%d" % (
        row["elapsed_s"], row["thoughts"], row["rate"], row["rss_kb"], row["hwm_kb"], row["threads"], row["fds"],
        row["wal"], row["wal_max_window"], row["db"] / 1e6,
        row["lat"].get("thought", {}).get("p50_ms"), row["lat"].get("thought", {}).get("p99_ms"), nfind["n"]), flush=True)
    lat.clear()
    wal_max[0] = 0
    shm_max[0] = 0
    last_window.update(t=now, n=stats["thoughts"])


# ---------------------------------------------------------------- main loop
init = rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                          "clientInfo": {"name": "soak", "version": "1"}})
send_line(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
start_new()
gw("cipher", "cipher", {"brief": True})
write_metrics()

huge_pool = []       # huge sessions not finished
chunk_left = 0       # thoughts left in this visit of cur
# Periodic work: [what runs, the thought count it runs at next, how far the run after is].
schedule = [
    [sample_files, 500, lambda: 500],
    [reads_round, 2000, lambda: rng.randint(1500, 3000)],
    [knowledge_write, 700, lambda: rng.randint(500, 1200)],
    [delete_one, 3000, lambda: rng.randint(1500, 3000)],
    [bad_input, 1100, lambda: rng.randint(600, 1400)],
    [old_load_context_probe, 5000, lambda: 5000],
]
next_huge_probe = 50000
next_window = WINDOW
ops_since_switch = 0


def choose_next():
    """After a session finished (or a chunk of a huge one): pick what to work on next."""
    global chunk_left
    r = rng.random()
    unfinished_huge = [h for h in huge_pool if h.id not in deleted and len(h.main) + sum(map(len, h.branches.values())) < h.target]
    if unfinished_huge and r < 0.15:
        h = rng.choice(unfinished_huge)
        load_context(h)
        chunk_left = rng.randint(1000, 4000)
        return
    if len(huge_pool) < 12 and stats["thoughts"] >= len(huge_pool) * 60000 and r < 0.5:
        h = start_new(huge=True)
        if h:
            huge_pool.append(h)
            chunk_left = rng.randint(1000, 4000)
            return
    closed = live(lambda s: s.closed and not s.huge and s.count() < 2000)
    if closed and r > 0.97:
        o = rng.choice(closed)
        load_context(o)        # reopen
        chunk_left = rng.randint(1, 5)
        o.target = o.count() + chunk_left
        return
    s = start_new()
    chunk_left = s.target if s else 0


try:
    chunk_left = cur.target
    while True:
        if stats["thoughts"] >= MAX_THOUGHTS or time.time() - T0 > MAX_SECONDS:
            break
        s = cur
        if s is None or s.closed:
            choose_next()
            continue
        if chunk_left <= 0:
            choose_next()
            continue
        done = s.count() + 1 >= s.target
        close = done and not s.huge and rng.random() < 0.8
        if done and s.huge:
            close = True
        ok = add_thought(close=close)
        chunk_left -= 1
        if done:
            chunk_left = 0
        if not ok and not close:
            # error on valid thought already recorded; avoid spinning
            chunk_left -= 10
        n = stats["thoughts"]
        for job in schedule:
            if n >= job[1]:
                job[0]()
                job[1] += job[2]()
        if n >= next_huge_probe and huge_pool:
            h = max(huge_pool, key=lambda x: x.count())
            if h.id not in deleted:
                p, _ = gw("structure_huge", "get_structure", {"sessionId": h.id})
                gw("read_range_huge", "read_thoughts", {"range": [1, 20], "sessionId": h.id})
                gw("session_get_meta_huge", "session", {"subOperation": "get", "sessionId": h.id, "includeThoughts": False})
                gw("deep_huge", "deep_analysis", {"sessionId": h.id, "analysisType": "full"})
                if h is not cur and cur is not None:
                    load_context(h, "load_context_huge", reopen=False, back=True)
                    load_context(cur, "load_context_back", back=True)
            next_huge_probe += 50000
        if n >= next_window:
            write_metrics()
            next_window += WINDOW
finally:
    write_metrics(final=True)
    # acknowledged state
    ack = {sid: {"main": s.main, "branches": s.branches, "closed": s.closed, "title": s.title}
           for sid, s in sessions.items() if sid not in deleted}
    with open(os.path.join(OUT, "acked.json"), "w") as f:
        json.dump({"sessions": ack, "deleted": sorted(deleted), "stats": stats}, f)
    st_before = proc_status()
    t = time.time()
    proc.stdin.close()
    rest = proc.stdout.read()
    rc = proc.wait(timeout=120)
    exit_s = time.time() - t
    final = {"rc": rc, "exit_seconds": round(exit_s, 2), "stdout_after_close": rest[:2000].decode("utf-8", "replace"),
             "wal_exists": os.path.exists(DB + "-wal"), "shm_exists": os.path.exists(DB + "-shm"),
             "status_before_close": st_before, "stats": stats}
    # verification
    con = sqlite3.connect(DB)
    final["integrity_check"] = con.execute("PRAGMA integrity_check").fetchall()[:10]
    db_rows = {}
    for sid, bid, num in con.execute("SELECT session_id, branch_id, thought_number FROM thoughts"):
        db_rows.setdefault(sid, []).append((bid, num))
    db_sessions = {r[0]: r[1] for r in con.execute("SELECT id, thought_count FROM sessions")}
    missing, extra, bad_counts = [], [], []
    for sid, s in sessions.items():
        if sid in deleted:
            if sid in db_sessions or sid in db_rows:
                extra.append(("deleted_session_present", sid))
            continue
        exp = sorted([(None, n) for n in s.main] + [(b, n) for b, l in s.branches.items() for n in l],
                     key=lambda x: (x[0] or "", x[1]))
        got = sorted(db_rows.get(sid, []), key=lambda x: (x[0] or "", x[1]))
        if exp != got:
            se, sg = set(exp), set(got)
            missing.append({"sid": sid, "missing": list(se - sg)[:10], "extra": list(sg - se)[:10],
                            "nexp": len(exp), "ngot": len(got)})
        if db_sessions.get(sid) != len(exp):
            bad_counts.append((sid, db_sessions.get(sid), len(exp)))
    unknown = [sid for sid in db_sessions if sid not in sessions]
    final.update(sessions_db=len(db_sessions), sessions_acked=len(sessions) - len(deleted),
                 thoughts_db=sum(len(v) for v in db_rows.values()),
                 thoughts_acked=sum(sessions[s].count() for s in sessions if s not in deleted),
                 mismatched_sessions=missing[:20], n_mismatched=len(missing), bad_thought_counts=bad_counts[:20],
                 unknown_sessions=unknown[:20], extra=extra[:20])
    with open(os.path.join(OUT, "final.json"), "w") as f:
        json.dump(final, f, indent=1)
    print(json.dumps(final, indent=1)[:4000])
