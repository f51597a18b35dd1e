#!/usr/bin/env python3
r"""Drives thoughtbox.exe under Wine as Claude Desktop does: one process per
client, MCP as newline-delimited JSON-RPC over its stdin and stdout, stdin
closed to stop it. Run by .ci/windows-smoke, which builds the binary and sets
WINEPREFIX and WINEPATH; by hand:

    WINEPREFIX=DIR WINEPATH=... python3 .ci/windows_smoke.py path/to/thoughtbox.exe

WINEPREFIX must name a prefix of its own: the run starts a server on the
default ledger there (%USERPROFILE%\.thoughtbox\thoughtbox.db) and rewrites
C:\tb-smoke. Every step prints one line, `ok` or `FAIL`; the exit status is
the number of failures (0: all passed). About a minute.

Wine is not Windows: a failure here is worth checking on Windows before it is
believed, and a pass says nothing of what Wine does not model (ACLs, console
control events, antivirus scanners holding files open).
"""

import getpass
import json
import os
import queue
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

EXE = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else None
PREFIX = os.environ.get("WINEPREFIX", "")
WINE = shutil.which("wine") or "wine"
# Every test file lives under C:\tb-smoke (the prefix's drive_c), a path
# with a space and a non-ASCII letter below it.
ROOT_WIN = "C:\\tb-smoke"
FAILURES = []


def unix_path(win):
    """The Linux path of a Wine path on C: or Z:."""
    drive, rest = win[0].upper(), win[2:].replace("\\", "/").lstrip("/")
    if drive == "C":
        return os.path.join(PREFIX, "drive_c", rest)
    if drive == "Z":
        return "/" + rest
    raise ValueError(win)


def check(name, cond, detail=""):
    print(("ok   " if cond else "FAIL ") + name + ("" if cond or not detail else f": {detail}"), flush=True)
    if not cond:
        FAILURES.append(name)
    return cond


def env(extra=None):
    e = {k: v for k, v in os.environ.items() if not k.startswith("THOUGHTBOX_")}
    e.setdefault("WINEDEBUG", "-all")
    e["RUST_LOG"] = "warn"
    e.update(extra or {})
    return e


def run_cli(*args, timeout=120, extra_env=None):
    """A command of the binary, to the end: (exit code, stdout, stderr)."""
    p = subprocess.run([WINE, EXE, *args], capture_output=True, env=env(extra_env), timeout=timeout,
                       cwd=unix_path(ROOT_WIN))
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


class Server:
    """One stdio server: requests are written as lines, answers read by a
    thread into a queue (notifications dropped)."""

    def __init__(self, *args, name="server", extra_env=None):
        self.name = name
        self.log = open(os.path.join(unix_path(ROOT_WIN), f"{name}.stderr"), "ab")
        # The working directory is the test folder: a path taken as relative lands there, not here.
        self.proc = subprocess.Popen(
            [WINE, EXE, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
            env=env(extra_env), cwd=unix_path(ROOT_WIN)
        )
        self.answers = queue.Queue()
        self.next_id = 0
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            line = line.strip()
            if not line:
                continue
            try:
                msg = json.loads(line)
            except ValueError:
                self.answers.put({"id": None, "error": {"message": f"not JSON on stdout: {line[:200]!r}"}})
                continue
            if "id" in msg and ("result" in msg or "error" in msg):
                self.answers.put(msg)
        self.answers.put(None)

    def send(self, method, params=None):
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.proc.stdin.write((json.dumps(msg) + "\n").encode())
        self.proc.stdin.flush()
        return self.next_id

    def receive(self, timeout=60):
        msg = self.answers.get(timeout=timeout)
        if msg is None:
            raise EOFError(f"{self.name} closed stdout")
        return msg

    def request(self, method, params=None, timeout=60):
        rid = self.send(method, params)
        while True:
            msg = self.receive(timeout)
            if msg.get("id") == rid:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg["result"]

    def initialize(self):
        info = self.request(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "claude-ai", "version": "0.14.0"},
            },
            timeout=120,
        )
        self.proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        self.proc.stdin.flush()
        return info

    @staticmethod
    def call_params(op, args):
        return {"name": "thoughtbox_gateway", "arguments": {"operation": op, "args": args or {}}}

    def call(self, op, args=None):
        """(is the answer an error, the answer's JSON)."""
        result = self.request("tools/call", self.call_params(op, args))
        return bool(result.get("isError")), json.loads(result["content"][0]["text"])

    def ok(self, op, args=None):
        err, answer = self.call(op, args)
        if err:
            raise RuntimeError(f"{op} {args}: {answer}")
        return answer

    def close(self, timeout=30):
        """Close stdin as a client does; the exit code and the seconds it took (None: still running)."""
        start = time.monotonic()
        self.proc.stdin.close()
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return None, timeout
        self.log.close()
        return rc, time.monotonic() - start

    def kill(self):
        self.proc.kill()
        self.proc.wait()
        self.log.close()


def stderr_of(name):
    with open(os.path.join(unix_path(ROOT_WIN), f"{name}.stderr"), "rb") as f:
        return f.read().decode("utf-8", "replace")


def ledger_counts(win_db):
    """(sessions, thoughts) read from the file by Python's own SQLite:
    immutable, since a read-only connection to a WAL file would leave a
    -wal and -shm beside it."""
    con = sqlite3.connect(f"file:{unix_path(win_db)}?mode=ro&immutable=1", uri=True)
    try:
        return (
            con.execute("SELECT count(*) FROM sessions").fetchone()[0],
            con.execute("SELECT count(*) FROM thoughts").fetchone()[0],
        )
    finally:
        con.close()


def step(fn):
    """Run one scenario; an exception is its failure, not the run's end."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001 (every failure is reported and counted)
        check(fn.__name__, False, f"{type(e).__name__}: {e}")


# --------------------------------------------------------------- scenarios


def help_runs():
    rc, out, err = run_cli("--help")
    check("--help exits 0 and prints usage", rc == 0 and "Usage" in out, f"rc={rc} {err[-400:]}")


def staged_flow():
    db = ROOT_WIN + "\\flow dir\\ünïcode\\ledger.db"
    srv = Server("--db", db, name="flow")
    info = srv.initialize()
    check("initialize answers serverInfo", "serverInfo" in info, str(info)[:200])
    tools = srv.request("tools/list")["tools"]
    check("tools/list has thoughtbox_gateway", any(t["name"] == "thoughtbox_gateway" for t in tools))
    state = srv.ok("get_state")
    check("get_state names the --db path", state.get("database", "").lower() == db.lower(), state.get("database"))
    sid = srv.ok("start_new", {"sessionTitle": "Windows smoke", "tags": ["smoke"]})["sessionId"]
    srv.ok("cipher", {"sessionId": sid, "brief": True})
    texts = [
        "Claude Desktop on Windows starts the server with a pipe for stdin",
        "The database sits under the user's profile",
        "Backslashes in paths must survive JSON and SQLite",
    ]
    for t in texts:
        srv.ok("thought", {"sessionId": sid, "thought": t, "nextThoughtNeeded": True})
    srv.ok("thought", {"sessionId": sid, "thought": "Alternative: a UNC path", "branchId": "unc",
                       "branchFromThought": 2, "nextThoughtNeeded": True})
    srv.ok("thought", {"sessionId": sid, "thought": "Revised: the profile is %USERPROFILE%",
                       "revisesThought": 2, "nextThoughtNeeded": True})
    # A 1 MiB thought crosses the pipe in many reads; a request ended by
    # CRLF, as a Windows client may write it, is one request.
    unit = "Ünïcödé 日本語 \r\n"
    big = unit * ((1 << 20) // len(unit.encode()))
    answer = srv.ok("thought", {"sessionId": sid, "thought": big, "nextThoughtNeeded": True})
    srv.proc.stdin.write((json.dumps({"jsonrpc": "2.0", "id": 9999, "method": "tools/call", "params": Server.call_params(
        "read_thoughts", {"sessionId": sid, "thoughtNumber": answer["thoughtNumber"], "full": True})}) + "\r\n").encode())
    srv.proc.stdin.flush()
    msg = srv.receive()
    back = json.loads(msg["result"]["content"][0]["text"])["thoughts"][0]["thought"] if "result" in msg else msg
    check(f"a {len(big.encode()) >> 10} KiB thought, sent in a CRLF-ended line, reads back whole", back == big, str(back)[:200])
    read = srv.ok("read_thoughts", {"sessionId": sid, "last": 10})
    check("read_thoughts gives the main chain", read["count"] == 5, json.dumps(read)[:300])
    listed = srv.ok("session", {"subOperation": "list", "sessionId": sid})
    check("session list has the session", any(s["id"] == sid for s in listed["sessions"]), str(listed)[:300])
    found = srv.ok("session", {"subOperation": "search", "query": "backslashes sqlite", "sessionId": sid})
    check("session search finds the thought", found["count"] == 1 and found["sessions"][0]["id"] == sid,
          str(found)[:300])
    dest = ROOT_WIN + "\\exports\\from agent"
    exported = srv.ok("session", {"subOperation": "export", "sessionId": sid, "destination": dest})
    manifest = None
    for dirpath, _dirs, files in os.walk(unix_path(dest)):
        if "manifest.json" in files:
            manifest = os.path.join(dirpath, "manifest.json")
    check("export to a backslashed destination writes files",
          exported.get("filesWritten", 0) >= 5 and manifest is not None, str(exported)[:300])
    check("the export's path is a Windows path", "\\" in exported.get("path", "") and "/" not in exported.get("path", ""),
          exported.get("path"))
    got = srv.ok("session", {"subOperation": "get", "sessionId": sid})
    check("session get has the branch", list(got.get("branches", {})) == ["unc"], str(got)[:300])
    rc, secs = srv.close()
    check("stdin closed: exits 0 within 2 s (Claude Desktop's grace)", rc == 0 and secs <= 2.0,
          f"rc={rc} after {secs:.1f}s; {stderr_of('flow')[-400:]}")
    leftovers = [n for n in os.listdir(os.path.dirname(unix_path(db))) if n not in ("ledger.db", "ledger.db.lock")]
    check("nothing but the ledger and its lock beside it (no -wal, -shm)", not leftovers, str(leftovers))
    check("one complete database after exit", ledger_counts(db) == (1, 6), f"counts={ledger_counts(db)}")
    return db


def default_location():
    srv = Server(name="default")
    srv.initialize()
    state = srv.ok("get_state")
    path = state.get("database", "")
    profile = "C:\\users\\" + getpass.getuser() + "\\.thoughtbox\\thoughtbox.db"
    check("default database is %USERPROFILE%\\.thoughtbox\\thoughtbox.db", path.lower() == profile.lower(), path)
    rc, _ = srv.close()
    check("default-location server exits 0", rc == 0, stderr_of("default")[-400:])


def tilde_and_env_paths():
    # Client configs pass values without a shell: `~\` and `%USERPROFILE%`
    # reach the server as written, and would otherwise name a folder under
    # whatever working directory the client chose.
    profile = "C:\\users\\" + getpass.getuser()
    for name, given, extra in [
        ("tilde", ["--db", "~\\tb-smoke-home\\t.db"], None),
        ("percent", [], {"THOUGHTBOX_DB": "%USERPROFILE%\\tb-smoke-home\\t.db"}),
        ("percent-data-dir", [], {"THOUGHTBOX_DATA_DIR": "%UserProfile%\\tb-smoke-home"}),
    ]:
        srv = Server(*given, name=name, extra_env=extra)
        srv.initialize()
        path = srv.ok("get_state").get("database", "")
        srv.close()
        want = profile + "\\tb-smoke-home\\" + ("thoughtbox.db" if name == "percent-data-dir" else "t.db")
        check(f"{name}: {given or extra} is {want}", path.lower() == want.lower(), path)
    leaked = [n for n in os.listdir(unix_path(ROOT_WIN)) if "%" in n or "~" in n]
    check("no folder named ~ or %...% made in the working directory", not leaked, str(leaked))
    rc, _, err = run_cli("info", extra_env={"THOUGHTBOX_DB": "%TB_SMOKE_UNSET%\\t.db"})
    check("an unset %VAR% in THOUGHTBOX_DB is refused, naming it", rc != 0 and "%TB_SMOKE_UNSET%, an environment variable that is not set" in err, f"rc={rc} {err[-300:]}")
    shutil.rmtree(unix_path(profile + "\\tb-smoke-home"), ignore_errors=True)


def agent_export_paths(db):
    srv = Server("--db", db, name="export-paths")
    srv.initialize()
    sid = srv.ok("start_new", {"sessionTitle": "export paths"})["sessionId"]
    srv.ok("cipher", {"sessionId": sid, "brief": True})
    srv.ok("thought", {"sessionId": sid, "thought": "one", "nextThoughtNeeded": True})
    for dest in [ROOT_WIN.replace("\\", "/") + "/exports/forward slashes", "c:\\TB-SMOKE\\exports\\Upper Case"]:
        err, answer = srv.call("session", {"subOperation": "export", "sessionId": sid, "destination": dest})
        check(f"export destination {dest}", not err and answer.get("filesWritten", 0) >= 2, str(answer)[:300])
    err, answer = srv.call("session", {"subOperation": "export", "sessionId": sid, "destination": "exports\\relative"})
    check("a relative export destination is refused", err and answer.get("code") == "INVALID_PAYLOAD", str(answer)[:300])
    err, answer = srv.call("session", {"subOperation": "export", "sessionId": sid, "destination": "\\no-drive"})
    check("a destination without a drive is refused", err, str(answer)[:300])
    rc, _ = srv.close()
    check("export-paths server exits 0", rc == 0, stderr_of("export-paths")[-300:])


def servers_start_together():
    db = ROOT_WIN + "\\together\\new.db"
    servers = [Server("--db", db, name=f"together-{i}") for i in range(3)]
    sids = []
    for srv in servers:
        srv.initialize()
        sid = srv.ok("start_new", {"sessionTitle": srv.name})["sessionId"]
        srv.ok("cipher", {"sessionId": sid, "brief": True})
        srv.ok("thought", {"sessionId": sid, "thought": "hello", "nextThoughtNeeded": True})
        sids.append(sid)
    codes = [srv.close()[0] for srv in servers]
    check("three servers started at once on a new file all serve and exit 0",
          codes == [0, 0, 0] and ledger_counts(db) == (3, 3), f"{codes} {ledger_counts(db)}")


def two_on_one_session(db, name, title):
    """Two servers on `db`, both past the guide on one new session."""
    a = Server("--db", db, name=f"{name}-a")
    b = Server("--db", db, name=f"{name}-b")
    a.initialize()
    b.initialize()
    sid = a.ok("start_new", {"sessionTitle": title})["sessionId"]
    a.ok("cipher", {"sessionId": sid, "brief": True})
    b.ok("cipher", {"sessionId": sid, "brief": True})
    return a, b, sid


def concurrent_writers(db):
    a, b, sid = two_on_one_session(db, "burst", "burst")
    sent = {a: [], b: []}
    for i in range(60):
        for srv in (a, b):
            sent[srv].append(srv.send("tools/call", Server.call_params(
                "thought", {"sessionId": sid, "thought": f"{srv.name} {i}", "nextThoughtNeeded": True})))
    numbers, errors = [], []
    for srv in (a, b):
        for _ in sent[srv]:
            msg = srv.receive(120)
            result = msg.get("result", {})
            if "error" in msg or result.get("isError"):
                errors.append(str(msg)[:200])
            else:
                numbers.append(json.loads(result["content"][0]["text"])["thoughtNumber"])
    check("two servers writing one session at once: 120 thoughts numbered 1..120",
          not errors and sorted(numbers) == list(range(1, 121)), f"{errors[:2]} {sorted(numbers)[:5]}..")
    codes = (a.close()[0], b.close()[0])
    check("both burst servers exit 0", codes == (0, 0), str(codes))


def killed_mid_stream(db, how):
    srv = Server("--db", db, name=f"kill-{how}")
    srv.initialize()
    sid = srv.ok("start_new", {"sessionTitle": f"killed by {how}"})["sessionId"]
    srv.ok("cipher", {"sessionId": sid, "brief": True})
    # Thoughts sent by a thread of their own until the server is gone,
    # killed after 20 answers (`wine taskkill` takes a second to start).
    base, most = srv.next_id, 1_000_000
    ids = range(base + 1, base + most + 1)

    def send_all():
        try:
            for n in range(1, most + 1):
                srv.send("tools/call", Server.call_params(
                    "thought", {"sessionId": sid, "thought": f"{how} step {n}", "thoughtNumber": n,
                                "nextThoughtNeeded": True}))
        except (BrokenPipeError, OSError, ValueError):
            pass

    sender = threading.Thread(target=send_all, daemon=True)
    sender.start()
    acked = set()
    while len(acked) < 20:
        msg = srv.receive()
        if msg.get("id") in ids and not msg.get("result", {}).get("isError", True):
            acked.add(msg["id"] - base)
    if how == "taskkill":
        subprocess.run([WINE, "taskkill", "/F", "/IM", "thoughtbox.exe"], env=env(), capture_output=True, timeout=60)
        try:
            srv.proc.wait(30)
        except subprocess.TimeoutExpired:
            srv.kill()
    else:
        srv.proc.send_signal(signal.SIGKILL)
        srv.proc.wait()
    # Whatever else arrived before it died was acknowledged too.
    while True:
        try:
            msg = srv.answers.get(timeout=2)
        except queue.Empty:
            break
        if msg is None:
            break
        if msg.get("id") in ids and not msg.get("result", {}).get("isError", True):
            acked.add(msg["id"] - base)
    again = Server("--db", db, name=f"kill-{how}-restart")
    again.initialize()
    got = again.ok("session", {"subOperation": "get", "sessionId": sid, "full": True})
    kept = {t["thoughtNumber"]: t["thought"] for t in got["thoughts"]}
    lost = sorted(n for n in acked if kept.get(n) != f"{how} step {n}")
    check(f"killed ({how}) mid-stream: all {len(acked)} acknowledged thoughts kept", not lost, f"lost {lost}")
    check(f"killed ({how}) while thoughts were still coming", srv.next_id < base + most, f"{len(acked)} answered")
    rc, _ = again.close()
    check(f"server restarted after {how} exits 0", rc == 0, stderr_of(f"kill-{how}-restart")[-400:])


def two_servers(db):
    a, b, sid = two_on_one_session(db, "two", "two writers")
    numbers = []
    for i in range(20):
        srv = a if i % 2 == 0 else b
        numbers.append(srv.ok("thought", {"sessionId": sid, "thought": f"writer {srv.name} {i}",
                                          "nextThoughtNeeded": True})["thoughtNumber"])
    check("two servers on one file number 1..20 without a gap", numbers == list(range(1, 21)), str(numbers))
    seen = b.ok("read_thoughts", {"sessionId": sid, "range": [1, 20]})
    check("each server reads the other's writes", seen["count"] == 20, str(seen)[:200])
    ra, _ = a.close()
    rb, _ = b.close()
    check("both servers exit 0", ra == 0 and rb == 0, f"{ra} {rb} {stderr_of('two-a')[-300:]} {stderr_of('two-b')[-300:]}")


def command_line(db):
    rc, out, err = run_cli("--db", db, "sessions", "list")
    check("sessions lists the sessions", rc == 0 and "Windows smoke" in out, f"rc={rc} {err[-400:]}")
    rc, out, err = run_cli("--db", db, "stats", "--json")
    check("stats --json", rc == 0 and json.loads(out or "null") is not None, f"rc={rc} {err[-400:]}")
    rc, out, err = run_cli("--db", db, "repair", "--check")
    check("repair --check passes", rc == 0, f"rc={rc} {out[-300:]} {err[-400:]}")
    tree = ROOT_WIN + "\\cli export"
    rc, out, err = run_cli("--db", db, "export", "--out", tree)
    check("export --out DIR", rc == 0 and os.path.exists(os.path.join(unix_path(tree), "config.json")),
          f"rc={rc} {err[-400:]}")
    other = ROOT_WIN + "\\imported\\other.db"
    rc, out, err = run_cli("--db", other, "import", tree)
    check("import DIR into a new ledger", rc == 0, f"rc={rc} {err[-400:]}")
    if rc == 0:
        check("the import has every session and thought", ledger_counts(other) == ledger_counts(db),
              f"{ledger_counts(other)} vs {ledger_counts(db)}")
    backups = ROOT_WIN + "\\backups"
    os.makedirs(unix_path(backups), exist_ok=True)
    rc, out, err = run_cli("--db", db, "backup", backups)
    made = [n for n in os.listdir(unix_path(backups)) if n.endswith(".db")]
    check("backup DIR makes one copy", rc == 0 and len(made) == 1, f"rc={rc} {made} {err[-400:]}")
    if made:
        copy = backups + "\\" + made[0]
        check("the backup has every thought", ledger_counts(copy) == ledger_counts(db),
              f"{ledger_counts(copy)} vs {ledger_counts(db)}")
    rc, out, err = run_cli("--db", db, "backup", backups + "\\named.db")
    check("backup FILE", rc == 0 and os.path.exists(unix_path(backups + "\\named.db")), f"rc={rc} {err[-400:]}")
    rc, out, err = run_cli("--db", db, "backup", backups + "\\named.db")
    check("backup FILE again replaces its own earlier copy", rc == 0, f"rc={rc} {err[-400:]}")
    upper = db.upper()
    rc, out, err = run_cli("--db", db, "backup", upper)
    check("backup onto the ledger itself, named in other letter case, is refused", rc != 0, f"rc={rc} {out} {err[-300:]}")
    check("the ledger is whole after that", ledger_counts(db)[1] > 0)
    # Two exports into one tree at once take turns (the tree's lock file).
    procs = [subprocess.Popen([WINE, EXE, "--db", db, "export", "--out", ROOT_WIN + "\\twice"], env=env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=unix_path(ROOT_WIN)) for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    check("two exports into one tree at once both succeed", all(p.returncode == 0 for p in procs),
          " | ".join(e.decode(errors="replace")[-200:] for _, e in outs))
    rc, out, err = run_cli("validate", ROOT_WIN + "\\twice")
    check("and leave a valid tree", rc == 0 and "0 invalid" in out, f"rc={rc} {out[-200:]} {err[-200:]}")
    sid = json.loads(run_cli("--db", db, "sessions", "list", "--json")[1])
    sid = (sid["sessions"] if isinstance(sid, dict) else sid)[0]["id"]
    rc, out, err = run_cli("--db", db, "export", "--session", sid, "--format", "markdown", "--out", ROOT_WIN + "\\one.md")
    check("export --format markdown --out FILE", rc == 0 and os.path.getsize(unix_path(ROOT_WIN + "\\one.md")) > 0,
          f"rc={rc} {err[-300:]}")
    ro = ROOT_WIN + "\\read-only.db"
    shutil.copy(unix_path(db), unix_path(ro))
    os.chmod(unix_path(ro), 0o444)  # Wine shows this as the read-only attribute.
    rc, out, err = run_cli("--db", ro, "repair")
    check("a read-only ledger is refused, named as given (no \\\\?\\)",
          rc != 0 and "marked read-only" in err and "\\\\?\\" not in err and ro in err, f"rc={rc} {err[-300:]}")
    events = ROOT_WIN + "\\events.jsonl"
    srv = Server("--db", db, "--events", events, name="events")
    srv.initialize()
    srv.ok("get_state")
    srv.close()
    check("--events FILE writes events", os.path.exists(unix_path(events)), stderr_of("events")[-300:])


def http_server(db):
    port = 17931
    log_name = "http"
    proc = subprocess.Popen([WINE, EXE, "--db", db, "serve", "--http", f"127.0.0.1:{port}"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=open(os.path.join(unix_path(ROOT_WIN), f"{log_name}.stderr"), "ab"), env=env())
    token_file = unix_path(db)[: -len(".db")] + ".token"
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not os.path.exists(token_file):
            time.sleep(0.2)
        token = open(token_file).read().strip() if os.path.exists(token_file) else ""
        check("serve --http writes the token file", len(token) >= 32, stderr_of(log_name)[-400:])


        def post(body, headers):
            req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST", headers={
                "Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers})
            deadline = time.monotonic() + 30
            while True:
                try:
                    with urllib.request.urlopen(req, timeout=30) as r:
                        return r.status, dict(r.headers), r.read().decode()
                except urllib.error.HTTPError as e:
                    return e.code, dict(e.headers), e.read().decode()
                except (ConnectionError, urllib.error.URLError):
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.3)

        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "curl", "version": "1"}}}
        status, _, _ = post(init, {})
        check("/mcp without the token is 401", status == 401, f"status {status}")
        status, headers, body = post(init, {"Authorization": f"Bearer {token}"})
        check("/mcp initialize with the bearer token", status == 200 and "serverInfo" in body, f"{status} {body[:300]}")
        said = stderr_of(log_name)  # Written before the server takes requests.
        check("it says where the token is, claiming no Unix mode",
              "created a bearer token in" in said and "0600" not in said, said[-300:])
        session = headers.get("Mcp-Session-Id") or headers.get("mcp-session-id")
        auth = {"Authorization": f"Bearer {token}", "Mcp-Protocol-Version": "2025-06-18"}
        if session:
            auth["Mcp-Session-Id"] = session
        post({"jsonrpc": "2.0", "method": "notifications/initialized"}, auth)
        status, _, body = post({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                "params": Server.call_params("get_state", {})}, auth)
        check("/mcp tools/call get_state", status == 200 and "stageName" in body, f"{status} {body[:300]}")
        req = urllib.request.Request(f"http://127.0.0.1:{port}/", headers={"Authorization": f"Bearer {token}"})
        with urllib.request.urlopen(req, timeout=30) as r:
            page = r.read().decode(errors="replace")
        check("the Observatory's page is served", r.status == 200 and "<html" in page.lower(), page[:200])
    finally:
        proc.kill()
        proc.wait()
    rc, out, err = run_cli("--db", db, "repair", "--check")
    check("ledger sound after the HTTP server was killed", rc == 0, f"rc={rc} {err[-300:]}")


def main():
    if not EXE or not os.path.exists(EXE) or not PREFIX:
        sys.exit("usage: WINEPREFIX=DIR windows_smoke.py PATH/TO/thoughtbox.exe (a prefix of its own, not ~/.wine)")
    shutil.rmtree(unix_path(ROOT_WIN), ignore_errors=True)
    os.makedirs(unix_path(ROOT_WIN))
    step(help_runs)
    db = ROOT_WIN + "\\flow dir\\ünïcode\\ledger.db"
    step(staged_flow)
    step(default_location)
    step(tilde_and_env_paths)
    step(lambda: agent_export_paths(db))
    step(lambda: killed_mid_stream(db, "kill"))
    step(lambda: killed_mid_stream(db, "taskkill"))
    step(lambda: two_servers(db))
    step(servers_start_together)
    step(lambda: concurrent_writers(db))
    step(lambda: command_line(db))
    step(lambda: http_server(db))
    print(f"{len(FAILURES)} failed" + (": " + ", ".join(FAILURES) if FAILURES else ""))
    sys.exit(min(len(FAILURES), 100))


if __name__ == "__main__":
    main()
