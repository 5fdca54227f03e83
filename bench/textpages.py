#!/usr/bin/env python3
"""Which crates own the executable's resident code pages.

    bench/textpages.py PID SYMBOLS_EXE [DELAY_S]

After DELAY_S (default 3) seconds, reads PID's page table (/proc/PID/pagemap, root
only) over its executable's r-x mapping and splits each resident 4 KiB page among
the symbols in it (`nm` of SYMBOLS_EXE: an unstripped build of the same code; the
stripped binary has the same layout), by crate. The kernel maps up to 64 KiB of
cached file pages around each page faulted (fault-around), so a resident page was
not necessarily executed: this is where resident code lies, by owner.
"""
import bisect
import os
import re
import struct
import subprocess
import sys
import time
from collections import defaultdict

PAGE = 4096


def crate_of(name):
    name = name.lstrip("<&*")
    if name.startswith("dyn "):
        name = name[4:]
    if name.startswith("mut ") or name.startswith("const "):
        name = name.split(" ", 1)[1]
    m = re.match(r"([A-Za-z_][A-Za-z0-9_]*)::", name)
    if m:
        return m.group(1)
    if name.startswith("_Z") or name.startswith("_R"):
        return "(mangled)"
    return "(C / libc glue: " + name[:24] + ")" if not name.startswith("(") else name


def main():
    pid, exe = int(sys.argv[1]), sys.argv[2]
    time.sleep(float(sys.argv[3]) if len(sys.argv) > 3 else 3.0)
    real = os.readlink(f"/proc/{pid}/exe")
    base, text = None, None
    for line in open(f"/proc/{pid}/maps"):
        f = line.split()
        if len(f) < 6 or f[5] != real:
            continue
        lo, hi = (int(x, 16) for x in f[0].split("-"))
        off = int(f[2], 16)
        if off == 0 and base is None:
            base = lo
        if f[1].startswith("r-x"):
            text = (lo, hi)
    present = []
    with open(f"/proc/{pid}/pagemap", "rb") as pm:
        pm.seek(text[0] // PAGE * 8)
        data = pm.read((text[1] - text[0]) // PAGE * 8)
    for i in range(len(data) // 8):
        (v,) = struct.unpack_from("<Q", data, i * 8)
        if v >> 63:
            present.append(text[0] + i * PAGE - base)
    out = subprocess.run(["nm", "-C", "--defined-only", "-S", exe], capture_output=True,
                         text=True).stdout
    syms = []
    for line in out.splitlines():
        f = line.split(" ", 3)
        if len(f) == 4 and f[2] in "tTwW":
            syms.append((int(f[0], 16), int(f[1], 16), f[3]))
    syms.sort()
    starts = [s[0] for s in syms]
    by_crate = defaultdict(float)
    for p in present:
        i = max(bisect.bisect_right(starts, p) - 1, 0)
        covered = 0
        while i < len(syms) and syms[i][0] < p + PAGE:
            a, size, name = syms[i]
            lo, hi = max(a, p), min(a + size, p + PAGE)
            if hi > lo:
                by_crate[crate_of(name)] += (hi - lo) / 1024
                covered += hi - lo
            i += 1
        if covered < PAGE:
            by_crate["(padding / no symbol)"] += (PAGE - covered) / 1024
    total = len(present) * PAGE / 1024
    windows = len({p // 65536 for p in present})
    print(f"resident text {total:.0f} KiB in {len(present)} pages, "
          f"{windows} distinct 64 KiB windows (of {(text[1] - text[0]) // 65536 + 1})")
    for name, kb in sorted(by_crate.items(), key=lambda kv: -kv[1])[:40]:
        print(f"{kb:8.0f} KiB  {name}")


if __name__ == "__main__":
    main()
