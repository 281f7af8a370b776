/* PE 0 plays a hostile local process against its own job's oshrun bootstrap, from forked
 * children: a fake abort with no introduction, a wrong secret, the right secret claiming a
 * rank that is taken or belongs to another PE's process, and (as root) a connection by
 * another user, and a flood of 600 connections that say nothing, held open together. The job
 * must ignore every one of them and finish normally; oshrun logs each refusal, and the flood
 * must not cost it a thread per connection (it prints oshrun's thread count during the flood). Every PE also checks that the socket's directory is private and that its own TCP
 * listeners (UCX's) are bound to loopback only, the job being on one host; it prints how many
 * it holds (none where the PEs map each other: spml ucx then opens no TCP transport). */
#include "check.h"
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *sock_path;

static int connect_boot(void) {
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    strncpy(a.sun_path, sock_path, sizeof a.sun_path - 1);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Frames: little-endian u32 body length, then a tag byte and the fields. */
static void send_frame(int fd, const unsigned char *body, uint32_t len) {
    unsigned char hdr[4] = {len, len >> 8, len >> 16, len >> 24};
    (void)!write(fd, hdr, 4);
    (void)!write(fd, body, len);
}

static uint32_t put_u32(unsigned char *p, uint32_t v) {
    p[0] = v, p[1] = v >> 8, p[2] = v >> 16, p[3] = v >> 24;
    return 4;
}

static void send_abort(int fd, int code) {
    unsigned char b[64];
    const char *msg = "PE 0 called shmem_global_exit(0)";
    uint32_t n = 0;
    b[n++] = 7;
    n += put_u32(b + n, (uint32_t)code);
    n += put_u32(b + n, strlen(msg));
    memcpy(b + n, msg, strlen(msg));
    send_frame(fd, b, n + strlen(msg));
}

static void send_hello(int fd, uint32_t rank, const unsigned char *secret, uint32_t len) {
    unsigned char b[128];
    uint32_t n = 0;
    b[n++] = 1;
    n += put_u32(b + n, rank);
    n += put_u32(b + n, getpid());
    n += put_u32(b + n, len);
    memcpy(b + n, secret, len);
    send_frame(fd, b, n + len);
}

/* The job's secret, from the environment oshrun gave this PE. */
static uint32_t job_secret(unsigned char *out) {
    const char *h = getenv("RSHMEM_BOOT_SECRET");
    uint32_t n = 0;
    for (; h && h[2 * n] && h[2 * n + 1] && n < 64; n++) sscanf(h + 2 * n, "%2hhx", &out[n]);
    return n;
}

/* Run `attack` in a child; returns its exit status. */
static int in_child(void (*attack)(void)) {
    pid_t p = fork();
    if (p == 0) {
        signal(SIGPIPE, SIG_IGN); /* oshrun may hang up before the abort is written */
        attack();
        usleep(100000); /* let oshrun read it before the connection closes */
        _exit(0);
    }
    int st;
    waitpid(p, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 99;
}

static void abort_without_hello(void) {
    int fd = connect_boot();
    if (fd >= 0) send_abort(fd, 0);
}

static void wrong_secret(void) {
    unsigned char s[32];
    memset(s, 0x5a, sizeof s);
    int fd = connect_boot();
    if (fd >= 0) send_hello(fd, 0, s, sizeof s), send_abort(fd, 0);
}

static void taken_rank(void) {
    unsigned char s[64];
    uint32_t n = job_secret(s);
    int fd = connect_boot();
    if (fd >= 0) send_hello(fd, 0, s, n), send_abort(fd, 0);
}

static void another_pes_rank(void) {
    unsigned char s[64];
    uint32_t n = job_secret(s);
    int fd = connect_boot();
    if (fd >= 0) send_hello(fd, 1, s, n), send_abort(fd, 0);
}

static void other_user(void) {
    if (setgid(65534) != 0 || setuid(65534) != 0) _exit(2);
    int fd = connect_boot();
    _exit(fd >= 0 ? 1 : 0); /* 0: refused by the directory's permissions */
}

/* Listening TCP sockets this process owns. */
static int listeners;

/* Whether every listening TCP socket this process owns is bound to loopback (counted in
 * `listeners`). */
static int listeners_on_loopback(void) {
    char inodes[64][32];
    int ni = 0;
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    while ((e = readdir(d)) != NULL && ni < 64) {
        char path[300], target[64];
        snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
        ssize_t k = readlink(path, target, sizeof target - 1);
        if (k > 0 && (target[k] = 0, !strncmp(target, "socket:[", 8))) {
            snprintf(inodes[ni++], 32, "%.*s", (int)(strlen(target) - 9), target + 8);
        }
    }
    closedir(d);
    int ok = 1;
    const char *files[2] = {"/proc/self/net/tcp", "/proc/self/net/tcp6"};
    for (int f = 0; f < 2; f++) {
        FILE *fp = fopen(files[f], "r");
        char line[512];
        if (!fp) continue;
        (void)!fgets(line, sizeof line, fp);
        while (fgets(line, sizeof line, fp)) {
            char local[64], remote[64], st[8], inode[32];
            if (sscanf(line, "%*s %63s %63s %7s %*s %*s %*s %*s %*s %31s", local, remote, st, inode) != 4) continue;
            if (strcmp(st, "0A")) continue; /* LISTEN */
            for (int i = 0; i < ni; i++) {
                if (strcmp(inodes[i], inode)) continue;
                listeners++;
                int lo = f == 0 ? !strncmp(local, "0100007F", 8)
                                : !strncmp(local, "00000000000000000000000001000000", 32) ||
                                      !strncmp(local, "0000000000000000FFFF00000100007F", 32);
                if (!lo) {
                    fprintf(stderr, "PE %d: TCP listener %s is not on loopback\n", shmem_my_pe(), local);
                    ok = 0;
                }
            }
        }
        fclose(fp);
    }
    return ok;
}

/* Threads of the process `pid` (from /proc/<pid>/status). */
static int threads_of(pid_t pid) {
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    int t = -1;
    while (f && fgets(line, sizeof line, f)) {
        if (!strncmp(line, "Threads:", 8)) t = atoi(line + 8);
    }
    if (f) fclose(f);
    return t;
}

/* 600 connections at once, none saying a word; oshrun is this PE's parent. */
static void flood(void) {
    static int fds[600];
    int opened = 0;
    for (int i = 0; i < 600; i++) {
        fds[i] = connect_boot();
        opened += fds[i] >= 0;
    }
    usleep(300000);
    printf("intruder: flood of %d connections, oshrun has %d threads\n", opened, threads_of(getppid()));
    fflush(stdout);
    for (int i = 0; i < 600; i++)
        if (fds[i] >= 0) close(fds[i]);
}

int main(void) {
    shmem_init();
    int me = shmem_my_pe();
    sock_path = getenv("RSHMEM_BOOT_SOCKET");
    CHECK(sock_path != NULL);

    char dir[512];
    snprintf(dir, sizeof dir, "%s", sock_path);
    struct stat st;
    CHECK(stat(dirname(dir), &st) == 0);
    CHECK(S_ISDIR(st.st_mode) && (st.st_mode & 077) == 0 && st.st_uid == geteuid());
    CHECK(listeners_on_loopback());
    printf("intruder: PE %d holds %d TCP listener(s)\n", me, listeners);
    fflush(stdout);

    shmem_barrier_all();
    if (me == 0) {
        CHECK(in_child(abort_without_hello) == 0);
        CHECK(in_child(wrong_secret) == 0);
        CHECK(in_child(taken_rank) == 0);
        CHECK(in_child(another_pes_rank) == 0);
        if (geteuid() == 0) CHECK(in_child(other_user) == 0);
        flood();
        usleep(200000);
    }
    shmem_barrier_all();
    REPORT_OK("intruder");
    shmem_finalize();
    return 0;
}
