"""A minimal terminal screen for the timing scripts: cursor moves, clears
and text, enough to read back what ratatui draws (SGR is ignored)."""
import re, unicodedata
TOK = re.compile(r"\x1b\[([0-9;?]*)([A-Za-z@])|\x1b[()][0-9A-Za-z]|\x1b[=>78M]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|([^\x1b]+)", re.S)
class Screen:
    def __init__(self, rows, cols):
        self.rows, self.cols = rows, cols
        self.grid = [[" "] * cols for _ in range(rows)]
        self.r = self.c = 0
        self.pending = ""
    def feed(self, data: bytes):
        text = self.pending + data.decode("utf-8", "replace")
        # keep an unterminated escape for the next feed
        i = text.rfind("\x1b")
        if i != -1 and not TOK.fullmatch(text[i:]) and len(text) - i < 32:
            text, self.pending = text[:i], text[i:]
        else:
            self.pending = ""
        for m in TOK.finditer(text):
            if m.group(2):
                p, cmd = m.group(1), m.group(2)
                if cmd == "H":
                    a = [int(x) if x else 1 for x in p.split(";")] if p else [1, 1]
                    self.r, self.c = a[0] - 1, (a[1] - 1 if len(a) > 1 else 0)
                elif cmd == "J" and p in ("2", "3"):
                    self.grid = [[" "] * self.cols for _ in range(self.rows)]
                elif cmd == "K":
                    for c in range(self.c, self.cols): self.grid[self.r][c] = " "
            elif m.group(3):
                for ch in m.group(3):
                    if ch in "\r\n": continue
                    if 0 <= self.r < self.rows and 0 <= self.c < self.cols:
                        self.grid[self.r][self.c] = ch
                    self.c += 2 if unicodedata.east_asian_width(ch) in "WF" else 1
    def lines(self):
        return ["".join(row) for row in self.grid]
