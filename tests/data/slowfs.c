/* slowfs: a FUSE filesystem holding one file, /disk.img, served from a backing file
 * with latency added to every read, write and fsync, an extra delay on fsync (a
 * costly cache flush) and periodic stalls (every op arriving in the first STALL_FOR
 * of each STALL_EVERY period waits for its end). The disk tests put a loop device
 * (direct I/O, so its I/Os reach this process concurrently) and ext4 on /disk.img:
 * a block device with a network volume's per-I/O latency, which this kernel cannot
 * otherwise make (no device-mapper delay, no nbd, no netem).
 *
 *   slowfs BACKING DELAY_US FSYNC_EXTRA_US STALL_EVERY_US STALL_FOR_US MOUNTPOINT [fuse opts]
 *
 * Built by tests/util_slowfs.rs with `cc ... $(pkg-config --cflags --libs fuse3)`. */
#define FUSE_USE_VERSION 35
#include <fuse.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int backing = -1;
static long delay_us, fsync_delay_us, stall_every_us, stall_for_us;
static struct timespec t0;

static long now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (t.tv_sec - t0.tv_sec) * 1000000L + (t.tv_nsec - t0.tv_nsec) / 1000;
}

static void pause_us(long us) {
    if (us <= 0) return;
    struct timespec d = { us / 1000000, (us % 1000000) * 1000 };
    while (nanosleep(&d, &d) == -1 && errno == EINTR) {}
}

/* Every I/O: the stall window it arrives in (if any), then the added latency. */
static void slow(long extra) {
    if (stall_every_us > 0) {
        long phase = now_us() % stall_every_us;
        if (phase < stall_for_us) pause_us(stall_for_us - phase);
    }
    pause_us(delay_us + extra);
}

static int sf_getattr(const char *path, struct stat *st, struct fuse_file_info *fi) {
    (void)fi;
    memset(st, 0, sizeof *st);
    if (strcmp(path, "/") == 0) { st->st_mode = S_IFDIR | 0755; st->st_nlink = 2; return 0; }
    if (strcmp(path, "/disk.img") != 0) return -ENOENT;
    struct stat b;
    if (fstat(backing, &b) < 0) return -errno;
    st->st_mode = S_IFREG | 0600; st->st_nlink = 1; st->st_size = b.st_size;
    st->st_blocks = b.st_blocks; st->st_blksize = 4096;
    return 0;
}

static int sf_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
                      struct fuse_file_info *fi, enum fuse_readdir_flags fl) {
    (void)off; (void)fi; (void)fl;
    if (strcmp(path, "/") != 0) return -ENOENT;
    fill(buf, ".", NULL, 0, 0); fill(buf, "..", NULL, 0, 0); fill(buf, "disk.img", NULL, 0, 0);
    return 0;
}

static int sf_open(const char *path, struct fuse_file_info *fi) {
    if (strcmp(path, "/disk.img") != 0) return -ENOENT;
    (void)fi;
    return 0;
}

static int sf_read(const char *path, char *buf, size_t n, off_t off, struct fuse_file_info *fi) {
    (void)path; (void)fi;
    slow(0);
    ssize_t r = pread(backing, buf, n, off);
    return r < 0 ? -errno : (int)r;
}

static int sf_write(const char *path, const char *buf, size_t n, off_t off, struct fuse_file_info *fi) {
    (void)path; (void)fi;
    slow(0);
    ssize_t r = pwrite(backing, buf, n, off);
    return r < 0 ? -errno : (int)r;
}

static int sf_fsync(const char *path, int datasync, struct fuse_file_info *fi) {
    (void)path; (void)datasync; (void)fi;
    slow(fsync_delay_us);
    return 0;
}

static int sf_flush(const char *path, struct fuse_file_info *fi) { (void)path; (void)fi; return 0; }

static void *sf_init(struct fuse_conn_info *conn, struct fuse_config *cfg) {
    conn->max_background = 256;
    conn->congestion_threshold = 192;
    cfg->attr_timeout = 0; cfg->entry_timeout = 0;
    return NULL;
}

static const struct fuse_operations ops = {
    .getattr = sf_getattr, .readdir = sf_readdir, .open = sf_open, .read = sf_read,
    .write = sf_write, .fsync = sf_fsync, .flush = sf_flush, .init = sf_init,
};

int main(int argc, char **argv) {
    if (argc < 7) { fprintf(stderr, "usage: slowfs BACKING DELAY_US FSYNC_US EVERY_US FOR_US MNT [opts]\n"); return 2; }
    backing = open(argv[1], O_RDWR);
    if (backing < 0) { perror(argv[1]); return 1; }
    delay_us = atol(argv[2]); fsync_delay_us = atol(argv[3]);
    stall_every_us = atol(argv[4]); stall_for_us = atol(argv[5]);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    argv[5] = argv[0];
    return fuse_main(argc - 5, argv + 5, &ops, NULL);
}
