"""First open of an unadopted ledger: time to rows, view switches during
adoption, the progress shown, time until adopted. Usage: adopt.py BIN LEDGER"""
import os, sys, time, re
exec(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "measure.py")).read().split("c = Console()")[0])
c = Console()
first = c.until(lambda l: re.search(r"\d{4,}", l[4]), limit=120)
print(f"start to first frame with rows: {ms(c.t0, first)}")
seen, lat, view = [], [], "1"
while time.monotonic() - c.t0 < 120:
    head = c.screen.lines()[0]
    m = re.search(r"ADOPTING \d+/\d+", head)
    if m and m.group(0) not in seen: seen.append(m.group(0))
    if "ADOPTING" not in head:
        break
    view = "2" if view == "1" else "1"
    title = "┌ All" if view == "2" else "┌ Queue"
    s = time.monotonic(); c.send(view)
    d = c.until(lambda l: l[2].startswith(title) and re.search(r"\d{4,}", l[4]), limit=60)
    lat.append(((d or time.monotonic()) - s) * 1000)
    c.drain(0.2)
print(f"adopted after {time.monotonic() - c.t0:.1f} s; progress seen: {seen}")
print(c.screen.lines()[0].rstrip()); print(c.screen.lines()[-2].rstrip())
lat.sort()
if lat: print(f"view switch to rows during adoption ({len(lat)}): median {lat[len(lat)//2]:.0f} ms, max {lat[-1]:.0f} ms")
c.close()
