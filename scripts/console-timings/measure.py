"""Times the console in a pty as a user sees it (the screen rebuilt by vt.py):
start to rows, each filter typed (longest key echo while typing, last key to
the first matching row, also typed at 80 ms a key without waiting), idle CPU
from /proc/PID/stat, and the help key's latency and the console's CPU while
another process commits every 10 ms. The ledger must be adopted first.

    python3 scripts/console-timings/measure.py target/release/settle LEDGER \
        "account:acct-0042,key:k-0099*"

A quick tool for the live console work (issue 8); benches/console is the
full benchmark with floors."""
import os, pty, re, select, signal, sqlite3, subprocess, sys, threading, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from vt import Screen

BIN, LEDGER = sys.argv[1], sys.argv[2]
HZ = os.sysconf("SC_CLK_TCK")

def cpu(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / HZ  # utime + stime

class Console:
    def __init__(self):
        self.t0 = time.monotonic()
        pid, fd = pty.fork()
        if pid == 0:
            os.environ["TERM"] = "xterm-256color"
            os.execv(BIN, [BIN, LEDGER, "--operator", "bench"])
        self.pid, self.fd = pid, fd
        import fcntl, termios, struct
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 160, 0, 0))
        os.kill(pid, signal.SIGWINCH)
        self.buf = b""
        self.screen = Screen(50, 160)
    def read(self, timeout):
        r, _, _ = select.select([self.fd], [], [], timeout)
        if r:
            try:
                data = os.read(self.fd, 1 << 20)
                self.buf += data
                self.screen.feed(data)
            except OSError:
                pass
    def wait(self, pattern, since=0, limit=120.0):
        start = time.monotonic()
        rx = re.compile(pattern)
        while True:
            if rx.search(self.buf, since):
                return time.monotonic()
            if time.monotonic() - start > limit:
                return None
            self.read(0.005)
    def until(self, test, limit=120.0):
        start = time.monotonic()
        while not test(self.screen.lines()):
            if time.monotonic() - start > limit:
                return None
            self.read(0.005)
        return time.monotonic()
    def drain(self, secs):
        end = time.monotonic() + secs
        while time.monotonic() < end:
            self.read(0.02)
    def send(self, s):
        os.write(self.fd, s.encode())
    def close(self):
        self.send("q")
        self.drain(0.3)
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(self.pid, 0)

def top_key(filter_):
    out = subprocess.run([BIN, "list", LEDGER, "--queue", "--limit", "1", "--filter", filter_],
                         capture_output=True, text=True).stdout.splitlines()
    return out[1].split()[-1] if len(out) > 1 else None

def ms(a, b):
    return "n/a" if b is None else f"{(b - a) * 1000:.0f} ms"

c = Console()
first = c.until(lambda l: re.search(r"\d{4,}", l[4]))
print(f"start to first frame with rows: {ms(c.t0, first)}")
c.drain(1.0)
before = cpu(c.pid); c.drain(10); idle = (cpu(c.pid) - before) / 10 * 100
print(f"idle CPU over 10 s: {idle:.1f} %")

shown = subprocess.run([BIN, "list", LEDGER, "--queue", "--limit", "60"], capture_output=True, text=True).stdout
for f in sys.argv[3].split(","):
    key = top_key(f)
    if key and key in c.screen.lines()[4]:
        print(f"typing /{f}: its top row is the unfiltered top row; not timed")
        continue
    c.send("/")
    c.drain(0.2)
    worst = 0.0
    for i, ch in enumerate(f[:-1]):
        typed = "/" + f[: i + 1]
        s0 = time.monotonic(); c.send(ch)
        e = c.until(lambda l: any(typed in x for x in l), limit=60)
        worst = max(worst, (e or time.monotonic()) - s0)
        time.sleep(max(0.0, 0.08 - (time.monotonic() - s0)))
    # the longest a key goes unanswered: time until the echo of the last char
    since = len(c.buf)
    t = time.monotonic(); c.send(f[-1])
    done = c.until(lambda l: key in l[4]) if key else None
    print(f"typing /{f}: last key to first matching row ({key}): {ms(t, done)}; longest key echo while typing {worst*1000:.0f} ms")
    c.send("\x1b"); c.drain(1.5)
    # as a fast typist: 80 ms between keys, never waiting for the screen
    c.send("/"); c.drain(0.2)
    for ch in f[:-1]:
        c.send(ch); time.sleep(0.08)
    t = time.monotonic(); c.send(f[-1])
    done = c.until(lambda l: key in l[4]) if key else None
    print(f"  typed at 80 ms a key without waiting: last key to first matching row {ms(t, done)}")
    c.send("\x1b"); c.drain(1.5)

# another process commits every 10 ms
stop = threading.Event()
commits = [0]
def writer():
    db = sqlite3.connect(LEDGER, timeout=5)
    db.execute("PRAGMA journal_mode=WAL")
    i = 0
    while not stop.is_set():
        db.execute("UPDATE operations SET updated_at = strftime('%Y-%m-%dT%H:%M:%SZ','now') WHERE id = ?", (1 + i % 1000,))
        db.commit(); i += 1; commits[0] += 1
        time.sleep(0.01)
th = threading.Thread(target=writer); th.start()
c.drain(1.0)
before = cpu(c.pid); t = time.monotonic()
lat = []
for _ in range(10):
    since = len(c.buf); s = time.monotonic(); c.send("?")
    d = c.until(lambda l: any("Keys (esc closes)" in x for x in l), limit=10)
    lat.append((d - s) * 1000 if d else float("inf"))
    c.drain(0.3); c.send("\x1b")
    c.until(lambda l: not any("Keys (esc closes)" in x for x in l), limit=10); c.drain(0.3)
busy = (cpu(c.pid) - before) / (time.monotonic() - t) * 100
stop.set(); th.join()
lat.sort()
print(f"writer committing every 10 ms ({commits[0]} commits): '?' to help on screen median {lat[5]:.0f} ms, max {lat[-1]:.0f} ms; console CPU {busy:.0f} %")
c.close()
