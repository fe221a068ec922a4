#!/usr/bin/env python3
"""What settle costs on a million rows of a table it reads in place (Oban's
`oban_jobs`, Graphile Worker's `_private_jobs`, a team's own
`idempotency_keys` through a mapping), against psql running the same
statements: `settle list --queue --limit 50`, and the console's first frame
with the queue's rows on the screen (read through a terminal emulator,
pyte, installed in target/bench-venv on first use) against psql's first
page.

Starts a throwaway PostgreSQL cluster (initdb, pg_ctl; as the `postgres`
user when run as root), makes each engine's tables as its own migrations
do (Oban: tests/fixtures/jobqueue/oban.sql, written from its migrations;
Graphile Worker: its own `runMigrations` from npm, in target/node-graphile,
which `scripts/test --install-only` installs; rocket-rides: its own DDL,
sample-data/mapping/rocket-rides.sql) and ROWS rows, about 1 in 100 stuck.
The server logs every statement settle runs; the script takes one list's
statements from that log (with the parameters settle bound) and has psql
run exactly those, as PREPARE and EXECUTE on a fresh connection. Each
command runs RUNS times after a warm-up; the script prints every wall
time and the medians, and stops the cluster (SETTLE_BENCH_HOLD=FILE keeps
it up, to look at, while FILE exists).

    python3 scripts/bench-queues.py [--engine oban,graphile,mapped]
        [--settle target/debug/settle] [--rows 1000000] [--runs 7]
"""

import argparse
import fcntl
import os
import re
import select
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DDL = os.path.join(ROOT, "sample-data", "mapping", "rocket-rides.sql")
MAPPING = os.path.join(ROOT, "sample-data", "mapping", "rocket-rides.toml")
OBAN_DDL = os.path.join(ROOT, "tests", "fixtures", "jobqueue", "oban.sql")
GRAPHILE_JS = os.path.join(ROOT, "tests", "fixtures", "jobqueue", "graphile", "graphile.js")
GRAPHILE_MODULES = os.path.join(ROOT, "target", "node-graphile", "node_modules")
BENCH_VENV = os.path.join(ROOT, "target", "bench-venv")

MAPPED_SEED = """INSERT INTO idempotency_keys (idempotency_key, user_id, request_method,
    request_path, request_params, recovery_point, locked_at, last_run_at, created_at,
    response_code, response_body)
SELECT 'key-' || i, 1 + i % 5000, 'POST', '/rides',
    jsonb_build_object('origin_lat', i % 90, 'origin_lon', i % 180,
        'target_lat', i % 89, 'target_lon', i % 179),
    CASE WHEN i % 100 < 97 THEN 'finished'
        ELSE (ARRAY['started', 'ride_created', 'charge_created'])[1 + i % 3] END,
    CASE WHEN i % 100 = 97 THEN now() - interval '10 minutes'
        WHEN i % 100 = 98 THEN now() END,
    now() - (i || ' seconds')::interval,
    now() - (i || ' seconds')::interval - interval '1 minute',
    CASE WHEN i % 100 < 97 THEN 201 END,
    CASE WHEN i % 100 < 97
        THEN '{"message": "Payment accepted. Your pilot is on their way!"}'::jsonb END
FROM generate_series(1, ROWS) i"""

# Oban's rows as its engine leaves them: 97 in 100 completed, 1 discarded
# after its one attempt timed out, 1 executing (every other one on a node
# that died two hours ago: an orphan), 1 available.
OBAN_SEED = """INSERT INTO oban_jobs (state, queue, worker, args, errors, attempt,
    max_attempts, inserted_at, scheduled_at, attempted_at, completed_at, attempted_by,
    discarded_at)
SELECT (CASE WHEN i % 100 < 97 THEN 'completed' WHEN i % 100 = 97 THEN 'discarded'
        WHEN i % 100 = 98 THEN 'executing' ELSE 'available' END)::oban_job_state,
    (ARRAY['payments', 'mail', 'reports'])[1 + i % 3],
    (ARRAY['MyApp.Charge', 'MyApp.Receipt', 'MyApp.Report'])[1 + i % 3],
    jsonb_build_object('order', i),
    CASE WHEN i % 100 = 97 THEN ARRAY[jsonb_build_object('attempt', 1,
        'at', '2026-12-01T00:00:00.000000Z', 'error', '** (Req.TransportError) timeout')]
        ELSE ARRAY[]::jsonb[] END,
    CASE WHEN i % 100 = 99 THEN 0 ELSE 1 END,
    CASE WHEN i % 100 = 97 THEN 1 ELSE 20 END,
    t, t,
    CASE WHEN i % 100 = 98 AND i % 200 = 98 THEN t - interval '2 hours'
        WHEN i % 100 <> 99 THEN t END,
    CASE WHEN i % 100 < 97 THEN t END,
    CASE WHEN i % 100 <> 99 THEN ARRAY['web-1', 'c4e1f7a2-0b6d-4d1e-9c55-1f0e8a7d3b21'] END,
    CASE WHEN i % 100 = 97 THEN t END
FROM generate_series(1, ROWS) i,
    LATERAL (SELECT timezone('UTC', now()) - ((ROWS - i) || ' seconds')::interval AS t) at"""

# Graphile deletes a job that succeeded: a million rows is a backlog.
# 98 in 100 wait (run_at ahead), 1 failed with no attempt left, 1 in 200
# locked five hours ago by a worker that died, 1 in 200 waiting for its retry.
GRAPHILE_SEED = """INSERT INTO graphile_worker._private_tasks (identifier)
    VALUES ('charge'), ('receipt'), ('report');
INSERT INTO graphile_worker._private_job_queues (queue_name)
    VALUES ('payments'), ('mail');
INSERT INTO graphile_worker._private_jobs (job_queue_id, task_id, payload, run_at,
    attempts, max_attempts, last_error, created_at, updated_at, key, locked_at, locked_by)
SELECT CASE WHEN i % 3 = 2 THEN NULL ELSE 1 + i % 3 END, 1 + i % 3,
    json_build_object('order', i),
    CASE WHEN i % 100 < 98 THEN now() + interval '1 day' ELSE t END,
    CASE WHEN i % 100 = 98 THEN 3 WHEN i % 100 = 99 THEN 1 ELSE 0 END, 3,
    CASE WHEN i % 100 >= 98 THEN 'Error: provider timed out after 30s' END,
    t, t,
    CASE WHEN i % 2 = 0 THEN 'job-' || i END,
    CASE WHEN i % 200 = 199 THEN now() - interval '5 hours' END,
    CASE WHEN i % 200 = 199 THEN 'worker-dead' END
FROM generate_series(1, ROWS) i,
    LATERAL (SELECT now() - ((ROWS - i) || ' seconds')::interval AS t) at"""

def bindir():
    for base in sorted(os.listdir("/usr/lib/postgresql"), reverse=True):
        path = os.path.join("/usr/lib/postgresql", base, "bin")
        if os.path.exists(os.path.join(path, "initdb")):
            return path
    found = shutil.which("initdb")
    if found:
        return os.path.dirname(found)
    sys.exit("bench-queues: no PostgreSQL server binaries (initdb, pg_ctl): install postgresql")


def as_server(argv):
    return ["runuser", "-u", "postgres", "--"] + argv if os.geteuid() == 0 else argv


def run(argv, **kw):
    return subprocess.run(argv, check=True, capture_output=True, text=True, **kw)


def timed(argv):
    start = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    took = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"bench-queues: {' '.join(argv)} failed: {done.stderr}")
    return took


def entries(log):
    """The log's entries (a timestamp opens each), as one text each."""
    out = []
    for line in log.splitlines():
        if re.match(r"^\d{4}-\d\d-\d\d ", line):
            out.append(line)
        elif out:
            out[-1] += "\n" + line
    return out


def executed(log_text):
    """Each statement the server executed, with the parameters bound to it.
    The server logs a DETAIL entry of its own after the bind (and after the
    execute) it belongs to."""
    found = []
    bound, last = [], None
    for entry in entries(log_text):
        d = re.search(r"\] DETAIL:  parameters: (.*)", entry, re.S)
        if d:
            params = re.findall(r"\$\d+ = ('(?:[^']|'')*'|NULL)", d.group(1))
            if last == "bind":
                bound = params
            elif last == "execute" and found:
                found[-1][1] = params
            continue
        m = re.search(r"LOG:  duration: [0-9.]+ ms  (parse|bind|execute) [^:]*: (.*)", entry, re.S)
        last = m.group(1) if m else None
        if last == "execute":
            found.append([m.group(2).strip(), bound])
            bound = []
    return found


def ensure_pyte():
    """pyte, from target/bench-venv (made on first use), for the screen."""
    try:
        import pyte  # noqa: F401
        return
    except ImportError:
        pass
    python = os.path.join(BENCH_VENV, "bin", "python")
    if not os.path.exists(python):
        print(f"bench-queues: installing pyte in {BENCH_VENV} (pip)", flush=True)
        run([sys.executable, "-m", "venv", BENCH_VENV])
        run([os.path.join(BENCH_VENV, "bin", "pip"), "install", "-q",
             "--disable-pip-version-check", "pyte==0.8.2"])
    if os.environ.get("SETTLE_BENCH_VENV") == "1":
        sys.exit(f"bench-queues: pyte is not importable from {BENCH_VENV}: remove it")
    os.environ["SETTLE_BENCH_VENV"] = "1"
    os.execv(python, [python] + sys.argv)


class Engine:
    """One kind of table: how its schema is made, seeded and opened."""

    def __init__(self, name, flags, stuck):
        self.name, self.flags, self.stuck = name, flags, stuck

    def make(self, db, env, rows):
        if self.name == "mapped":
            run(db + ["-f", DDL])
            run(db + ["-c", MAPPED_SEED.replace("ROWS", str(rows))])
        elif self.name == "oban":
            run(db + ["-f", OBAN_DDL])
            run(db + ["-c", OBAN_SEED.replace("ROWS", str(rows))])
        else:
            if not os.path.isdir(os.path.join(GRAPHILE_MODULES, "graphile-worker")):
                sys.exit(f"bench-queues: no graphile-worker in {GRAPHILE_MODULES}: "
                         "run scripts/test --install-only")
            migrate_graphile(env)
            run(db + ["-c", GRAPHILE_SEED.replace("ROWS", str(rows))])
        for table in ("idempotency_keys", "oban_jobs", "graphile_worker._private_jobs"):
            subprocess.run(db + ["-c", f"VACUUM ANALYZE {table}"], capture_output=True)


def migrate_graphile(env):
    """Graphile's own migrations, through graphile.js, whose process ends
    when its stdin closes (so it is given one that stays open)."""
    with tempfile.TemporaryFile(mode="w+") as err:
        child = subprocess.Popen(["node", GRAPHILE_JS, "migrate"], stdin=subprocess.PIPE,
                                 stdout=subprocess.DEVNULL, stderr=err,
                                 env={**env, "NODE_PATH": GRAPHILE_MODULES})
        code = child.wait(timeout=120)
        child.stdin.close()
        if code != 0:
            err.seek(0)
            sys.exit(f"bench-queues: graphile.js migrate failed: {err.read()}")


ENGINES = {
    "oban": Engine("oban", [], """SELECT id FROM oban_jobs WHERE state = 'discarded'
        OR (state = 'retryable' AND attempt >= max_attempts)
        OR (state = 'executing' AND attempted_at < timezone('UTC', now()) - interval '1 hour')"""),
    "graphile": Engine("graphile", [], """SELECT id FROM graphile_worker._private_jobs
        WHERE attempts >= max_attempts OR locked_at < now() - interval '4 hours'"""),
    "mapped": Engine("mapped", ["--map", MAPPING], """SELECT id FROM idempotency_keys
        WHERE recovery_point <> 'finished' AND locked_at < now() - interval '90 seconds'"""),
}


def first_frame(argv, top_id, timeout=60):
    """Seconds from exec to a screen (120x40, read through pyte) whose list
    shows the row `top_id`; None if it never did."""
    import pyte
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    screen = pyte.Screen(120, 40)
    stream = pyte.ByteStream(screen)
    # What the program asks the terminal (its cursor position), answered.
    screen.write_process_input = lambda data: os.write(master, data.encode())
    row = re.compile(rf"^│\s+{top_id}\s")
    start = time.perf_counter()
    child = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave,
                             start_new_session=True,
                             env={**os.environ, "TERM": "xterm-256color"})
    os.close(slave)
    took = None
    try:
        while time.perf_counter() - start < timeout:
            ready, _, _ = select.select([master], [], [], 0.5)
            if not ready:
                continue
            try:
                stream.feed(os.read(master, 65536))
            except OSError:
                break
            if any(row.match(line) for line in screen.display):
                took = time.perf_counter() - start
                break
        if took is None:
            print("  the console never showed the row; its screen:\n  "
                  + "\n  ".join(screen.display), flush=True)
        os.write(master, b"q")
        try:
            child.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
    finally:
        os.close(master)
    return took


def measure(engine, args, psql, sock, port, work, log):
    name = engine.name
    run(psql + ["-c", f"CREATE DATABASE {name}"])
    db = psql + ["-d", name]
    env = {**os.environ, "PGHOST": sock, "PGPORT": port, "PGUSER": "postgres",
           "PGDATABASE": name}
    for k in ("PGSERVICE", "PGPASSWORD", "DATABASE_URL"):
        env.pop(k, None)
    print(f"== {name}: loading {args.rows} rows ...", flush=True)
    loading = time.perf_counter()
    engine.make(db, env, args.rows)
    stuck = [int(x) for x in run(db + ["-At", "-c", engine.stuck]).stdout.split()]
    print(f"{args.rows} rows ({time.perf_counter() - loading:.0f} s to load), "
          f"{len(stuck)} in the queue, the newest {max(stuck)}")
    address = f"postgresql://postgres@{sock.replace('/', '%2F')}:{port}/{name}"
    listing = [args.settle, "list", address, *engine.flags, "--queue", "--limit", "50"]

    # Adoption's settle schema first (a first list makes it), then one run
    # whose statements the log keeps.
    timed(listing)
    mark = os.path.getsize(log)
    timed(listing)
    with open(log, encoding="utf-8", errors="replace") as f:
        f.seek(mark)
        tail = f.read()
    settle_times = [timed(listing) for _ in range(args.runs)]
    reads = [(sql, params) for sql, params in executed(tail)
             if sql.lstrip().upper().startswith(("SELECT", "WITH"))]
    script = []
    for i, (sql, params) in enumerate(reads):
        script.append(f"PREPARE q{i} AS {sql};")
        script.append(f"EXECUTE q{i}({', '.join(params)});" if params else f"EXECUTE q{i};")
    # The page: the read that orders and limits the queue's rows.
    pages = [i for i, (sql, _) in enumerate(reads)
             if re.search(r"\bLIMIT\b", sql, re.I) and re.search(r"ORDER BY", sql, re.I)]
    if not pages:
        sys.exit(f"bench-queues: no page read among settle's statements: {reads}")
    same_file, page_file = (os.path.join(work, f"{name}-{n}.sql") for n in ("same", "page"))
    with open(same_file, "w", encoding="utf-8") as f:
        f.write("\n".join(script) + "\n")
    with open(page_file, "w", encoding="utf-8") as f:
        f.write("\n".join(script[2 * pages[0]:2 * pages[0] + 2]) + "\n")
    same, page = db + ["-f", same_file], db + ["-f", page_file]
    timed(same)
    psql_times = [timed(same) for _ in range(args.runs)]
    page_times = [timed(page) for _ in range(args.runs)]
    console = [args.settle, address, *engine.flags]
    first_frame(console, max(stuck))
    frames = [first_frame(console, max(stuck)) for _ in range(args.runs)]

    print(f"settle's list ran {len(reads)} reads (the page is read {pages[0] + 1}):")
    for sql, params in reads:
        print(f"  {' '.join(sql.split())[:110]}...  params {params}")
    fmt = lambda ts: " ".join("-" if t is None else f"{t * 1000:.0f}" for t in ts)
    seen = [t for t in frames if t is not None]
    s, p, q = (statistics.median(t) for t in (settle_times, psql_times, page_times))
    c = statistics.median(seen) if seen else None
    print(f"settle list --queue --limit 50        ms: {fmt(settle_times)}  median {s * 1000:.0f}")
    print(f"psql, the same reads                  ms: {fmt(psql_times)}  median {p * 1000:.0f}")
    print(f"psql, the page alone                  ms: {fmt(page_times)}  median {q * 1000:.0f}")
    print(f"console, exec to the queue's rows     ms: {fmt(frames)}  "
          f"median {'-' if c is None else f'{c * 1000:.0f}'}")
    print(f"{name}: list / psql (same reads) {s / p:.2f}x; list / psql (page alone) "
          f"{s / q:.2f}x; first frame / psql's first page "
          f"{'-' if c is None else f'{c / q:.2f}x'}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--settle", default=os.path.join(ROOT, "target", "debug", "settle"))
    ap.add_argument("--engine", default="oban,graphile,mapped")
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    engines = []
    for name in args.engine.split(","):
        if name not in ENGINES:
            sys.exit(f"bench-queues: --engine {name}: one of {', '.join(ENGINES)}")
        engines.append(ENGINES[name])
    ensure_pyte()
    bins = bindir()
    work = tempfile.mkdtemp(prefix="settle-bench-queues-")
    if os.geteuid() == 0:
        run(["chown", "postgres", work])
    data, sock, log = (os.path.join(work, n) for n in ("data", "sock", "server.log"))
    os.mkdir(sock)
    if os.geteuid() == 0:
        run(["chown", "postgres", sock])
    port = "54" + str(40 + os.getpid() % 50)
    run(as_server([os.path.join(bins, "initdb"), "-D", data, "-A", "trust", "-U", "postgres"]))
    opts = f"-k {sock} -p {port} -c listen_addresses='' -c fsync=off -c log_min_duration_statement=0"
    run(as_server([os.path.join(bins, "pg_ctl"), "-D", data, "-o", opts, "-l", log, "-w", "start"]))
    try:
        psql = [os.path.join(bins, "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", sock, "-p", port, "-U", "postgres"]
        for engine in engines:
            measure(engine, args, psql, sock, port, work, log)
        hold = os.environ.get("SETTLE_BENCH_HOLD")
        if hold:
            print(f"holding the cluster (socket {sock}, port {port}, log {log}) "
                  f"while {hold} exists", flush=True)
            while os.path.exists(hold):
                time.sleep(1)
    finally:
        subprocess.run(as_server([os.path.join(bins, "pg_ctl"), "-D", data, "-m", "fast", "stop"]),
                       capture_output=True)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
