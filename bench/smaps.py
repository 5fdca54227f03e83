#!/usr/bin/env python3
"""Where a process's resident memory is: /proc/PID/smaps at its largest, by kind.

    bench/smaps.py PID [OUT]     sample until PID exits (every 0.2 s); print the
                                 breakdown of the snapshot with the largest Rss, and
                                 keep that snapshot's raw smaps in OUT if given
    bench/smaps.py --file SMAPS EXE
                                 the breakdown of a saved smaps (EXE: the path of the
                                 executable as the smaps names it), e.g. the one
                                 bench/smaps_at_exit.c writes as the process exits

Kinds: the executable's pages by permission (r-x text, r-- rodata and relocated
read-only data, rw- data), each shared library likewise, [heap] (glibc's main arena),
[stack], io_uring's rings and provided buffers (anon_inode:[io_uring] and the like),
and the other anonymous mappings: thread stacks (a mapping just above a 4 KiB
PROT_NONE guard page), glibc's per-thread arenas (64 MiB reserved each) and large
allocations (mmap'd by malloc above its threshold). `Anonymous` counts the private
pages written to, file-backed or not (relocations make an executable's data
anonymous); the rest of Rss is clean file pages shared with the page cache.
"""
import os
import sys
import time


def read_smaps(pid):
    with open(f"/proc/{pid}/smaps") as f:
        return parse(f.read())


def parse(text):
    maps, cur = [], None
    if True:
        for line in text.splitlines():
            head = line.split()
            if not head:
                continue
            if "-" in head[0] and not head[0].endswith(":"):
                lo, hi = (int(x, 16) for x in head[0].split("-"))
                cur = {
                    "lo": lo,
                    "hi": hi,
                    "perm": head[1],
                    "path": " ".join(head[5:]) if len(head) > 5 else "",
                }
                maps.append(cur)
            elif head[0].endswith(":") and len(head) >= 2 and head[1].isdigit():
                cur[head[0][:-1]] = int(head[1])
    return maps


def exe_of(pid):
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return ""


def classify(maps, exe):
    out = {}
    prev = None
    for m in maps:
        size = (m["hi"] - m["lo"]) // 1024
        path = m["path"]
        perm = m["perm"][:3]
        if path == exe:
            kind = f"exe {perm}"
        elif path.startswith("/"):
            kind = f"{os.path.basename(path)} {perm}"
        elif path in ("[heap]", "[stack]", "[vdso]", "[vvar]", "[vsyscall]"):
            kind = path
        elif "io_uring" in path:
            kind = "io_uring rings"
        elif path:
            kind = path
        elif perm == "---":
            kind = "guard / reserved (---)"
        elif prev is not None and prev["perm"].startswith("---") and prev["hi"] == m["lo"] and (
            prev["hi"] - prev["lo"]
        ) == 4096:
            kind = f"thread stack ({size // 1024} MiB each)"
        elif prev is not None and prev["perm"].startswith("---") and prev["hi"] == m["lo"]:
            kind = "malloc arena (per thread)"
        else:
            kind = "anon (malloc mmap, other)"
        prev = m
        k = out.setdefault(kind, {"n": 0, "size": 0, "Rss": 0, "Anonymous": 0, "Private_Dirty": 0})
        k["n"] += 1
        k["size"] += size
        for f in ("Rss", "Anonymous", "Private_Dirty"):
            k[f] += m.get(f, 0)
    return out


def report(best, exe, head):
    kinds = classify(best, exe)
    rss = sum(m.get("Rss", 0) for m in best)
    anon = sum(k["Anonymous"] for k in kinds.values())
    print(f"{head} Rss {rss / 1024:.2f} MiB "
          f"(anonymous {anon / 1024:.2f}, file {(rss - anon) / 1024:.2f}); exe {exe}")
    print(f"{'kind':40} {'maps':>4} {'size KiB':>10} {'Rss KiB':>8} {'Anon KiB':>8}")
    for name, k in sorted(kinds.items(), key=lambda kv: -kv[1]["Rss"]):
        if k["Rss"] == 0:
            continue
        print(f"{name:40} {k['n']:4} {k['size']:10} {k['Rss']:8} {k['Anonymous']:8}")


def main():
    if sys.argv[1] == "--file":
        report(parse(open(sys.argv[2]).read()), sys.argv[3], "at exit:")
        return
    pid = int(sys.argv[1])
    keep = sys.argv[2] if len(sys.argv) > 2 else None
    exe = exe_of(pid)
    best, best_raw, best_rss, when, t0 = None, None, -1, 0.0, time.time()
    while True:
        try:
            raw = open(f"/proc/{pid}/smaps").read()
            maps = read_smaps(pid)
        except (OSError, ValueError, KeyError):
            break
        rss = sum(m.get("Rss", 0) for m in maps)
        if rss > best_rss:
            best, best_raw, best_rss, when = maps, raw, rss, time.time() - t0
        time.sleep(0.2)
    if best is None:
        print("no sample")
        return
    if keep:
        with open(keep, "w") as f:
            f.write(best_raw)
    report(best, exe, f"largest sampled (at {when:.1f} s):")


if __name__ == "__main__":
    main()
