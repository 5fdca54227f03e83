// LD_PRELOAD helper for bench/smaps.py: when the process exits, copies its
// /proc/self/smaps and /proc/self/status (VmHWM: the peak RSS) to $SMAPS_AT_EXIT.smaps
// and $SMAPS_AT_EXIT.status. File-backed pages are never unmapped before exit, so this
// snapshot holds every code page the run touched, including the end of the run
// (merging, JSON, findings), which 0.2 s sampling misses.
//
//   cc -shared -fPIC -O2 -o /tmp/smaps_at_exit.so bench/smaps_at_exit.c
//   SMAPS_AT_EXIT=/tmp/run LD_PRELOAD=/tmp/smaps_at_exit.so latscope load …
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void copy(const char *from, const char *prefix, const char *suffix) {
    char to[4096];
    snprintf(to, sizeof to, "%s%s", prefix, suffix);
    int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    char buf[65536];
    ssize_t n;
    while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof buf)) > 0) {
        if (write(out, buf, (size_t)n) != n) break;
    }
    if (in >= 0) close(in);
    if (out >= 0) close(out);
}

__attribute__((destructor)) static void at_exit(void) {
    const char *prefix = getenv("SMAPS_AT_EXIT");
    if (!prefix || !*prefix) return;
    copy("/proc/self/smaps", prefix, ".smaps");
    copy("/proc/self/status", prefix, ".status");
}
