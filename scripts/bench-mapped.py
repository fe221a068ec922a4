#!/usr/bin/env python3
"""What `settle list --queue --limit 50` costs on a team's own table of a
million rows, against psql running the same statements.

Starts a throwaway PostgreSQL cluster (initdb, pg_ctl; as the `postgres`
user when run as root), makes rocket-rides' `idempotency_keys` with its
own DDL (`sample-data/mapping/rocket-rides.sql`) and ROWS keys (97 in 100
finished, 1 in 100 stuck), and opens it through the sample mapping
(`sample-data/mapping/rocket-rides.toml`). The server logs every statement
settle runs; the script takes the list's own statements from that log
(the page and its count, with the parameters settle bound) and has psql
run exactly those, as PREPARE and EXECUTE on a fresh connection. Each
command runs RUNS times after a warm-up; the script prints every wall
time and the medians, and stops the cluster.

    python3 scripts/bench-mapped.py [--settle target/debug/settle]
        [--rows 1000000] [--runs 7]
"""

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DDL = os.path.join(ROOT, "sample-data", "mapping", "rocket-rides.sql")
MAPPING = os.path.join(ROOT, "sample-data", "mapping", "rocket-rides.toml")

SEED = """INSERT INTO idempotency_keys (idempotency_key, user_id, request_method,
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


def bindir():
    for base in sorted(os.listdir("/usr/lib/postgresql"), reverse=True):
        path = os.path.join("/usr/lib/postgresql", base, "bin")
        if os.path.exists(os.path.join(path, "initdb")):
            return path
    found = shutil.which("initdb")
    if found:
        return os.path.dirname(found)
    sys.exit("bench-mapped: no PostgreSQL server binaries (initdb, pg_ctl): install postgresql")


def as_server(argv):
    return ["runuser", "-u", "postgres", "--"] + argv if os.geteuid() == 0 else argv


def run(argv, **kw):
    return subprocess.run(argv, check=True, capture_output=True, text=True, **kw)


def timed(argv):
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


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
    """Each statement the server executed with its bound parameters."""
    found = []
    for entry in entries(log_text):
        m = re.search(r"LOG:  duration: [0-9.]+ ms  execute [^:]*: (.*)", entry, re.S)
        if m:
            found.append([m.group(1).strip(), []])
            continue
        d = re.search(r"DETAIL:  parameters: (.*)", entry, re.S)
        if d and found:
            found[-1][1] = re.findall(r"\$\d+ = ('(?:[^']|'')*'|NULL)", d.group(1))
            found[-1][0] = re.sub(r"\nDETAIL:.*", "", found[-1][0], flags=re.S)
    return found


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--settle", default=os.path.join(ROOT, "target", "debug", "settle"))
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    bins = bindir()
    work = tempfile.mkdtemp(prefix="settle-bench-mapped-")
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
        psql = [os.path.join(bins, "psql"), "-X", "-q", "-h", sock, "-p", port, "-U", "postgres"]
        run(psql + ["-c", "CREATE DATABASE rides"])
        db = psql + ["-d", "rides"]
        run(db + ["-f", DDL])
        print(f"loading {args.rows} keys ...", flush=True)
        run(db + ["-c", SEED.replace("ROWS", str(args.rows))])
        run(db + ["-c", "VACUUM ANALYZE idempotency_keys"])
        stuck = run(db + ["-At", "-c", "SELECT count(*) FROM idempotency_keys WHERE "
                          "recovery_point <> 'finished' AND locked_at < now() - interval '90 seconds'"])
        print(f"{args.rows} keys, {stuck.stdout.strip()} stuck")
        address = f"postgresql://postgres@{sock.replace('/', '%2F')}:{port}/rides"
        listing = [args.settle, "list", address, "--map", MAPPING, "--queue", "--limit", "50"]

        timed(listing)
        mark = os.path.getsize(log)
        settle_times = [timed(listing) for _ in range(args.runs)]
        with open(log, encoding="utf-8", errors="replace") as f:
            f.seek(mark)
            tail = f.read()
        # The last run's statements: from its last parse of the settle schema check on.
        ran = executed(tail)
        last = [i for i, (sql, _) in enumerate(ran) if "to_regclass('settle.decisions')" in sql]
        ran = ran[last[-1] + 1:] if last else ran
        reads = [(sql, params) for sql, params in ran if sql.lstrip().upper().startswith("SELECT")]
        script = []
        for i, (sql, params) in enumerate(reads):
            script.append(f"PREPARE q{i} AS {sql};")
            script.append(f"EXECUTE q{i}({', '.join(params)});" if params else f"EXECUTE q{i};")
        script_file = os.path.join(work, "same.sql")
        with open(script_file, "w", encoding="utf-8") as f:
            f.write("\n".join(script) + "\n")
        page_file = os.path.join(work, "page.sql")
        with open(page_file, "w", encoding="utf-8") as f:
            f.write("\n".join(script[:2]) + "\n")
        same = db + ["-f", script_file]
        page = db + ["-f", page_file]
        timed(same)
        psql_times = [timed(same) for _ in range(args.runs)]
        page_times = [timed(page) for _ in range(args.runs)]

        print(f"settle's list ran {len(reads)} reads after opening:")
        for sql, params in reads:
            print(f"  {' '.join(sql.split())[:110]}...  params {params}")
        fmt = lambda ts: " ".join(f"{t * 1000:.0f}" for t in ts)
        s, p, q = (statistics.median(t) for t in (settle_times, psql_times, page_times))
        print(f"settle list --queue --limit 50        ms: {fmt(settle_times)}  median {s * 1000:.0f}")
        print(f"psql, the same reads (page and count) ms: {fmt(psql_times)}  median {p * 1000:.0f}")
        print(f"psql, the page alone                  ms: {fmt(page_times)}  median {q * 1000:.0f}")
        print(f"settle / psql (same reads): {s / p:.2f}x; settle / psql (page alone): {s / q:.2f}x")
    finally:
        subprocess.run(as_server([os.path.join(bins, "pg_ctl"), "-D", data, "-m", "fast", "stop"]),
                       capture_output=True)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
