/* A TCP ping-pong over loopback between two processes, 40 bytes each way, sent with one
 * send() (argument 0) or with a four-part sendmsg() (argument 1), received by polling epoll
 * with a zero timeout as UCX's TCP transport does. It isolates the cost of the I/O vector that
 * UCX 1.13.1 uses for every user active message (docs/performance.md, "Waits that serve a
 * peer"). Build: cc -O2 -o /tmp/tcp_pingpong tests/bench/tcp_pingpong.c; run alternately:
 * for i in 1 2 3; do /tmp/tcp_pingpong 0; /tmp/tcp_pingpong 1; done */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define MSG 40
#define ROUNDS 200000

static int use_sendmsg;

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static void send_one(int fd) {
    char b[MSG];
    memset(b, 1, sizeof b);
    ssize_t n;
    if (use_sendmsg) {
        /* transport header, protocol header, user header, payload */
        struct iovec iov[4] = {{b, 8}, {b + 8, 8}, {b + 16, 16}, {b + 32, 8}};
        struct msghdr m = {0};
        m.msg_iov = iov;
        m.msg_iovlen = 4;
        n = sendmsg(fd, &m, 0);
    } else {
        n = send(fd, b, sizeof b, 0);
    }
    if (n != MSG) {
        perror("send");
        exit(1);
    }
}

static void receive_one(int fd, int ep) {
    char b[MSG];
    int got = 0;
    struct epoll_event e;
    while (got < MSG) {
        if (epoll_wait(ep, &e, 1, 0) < 1) continue;
        ssize_t n = recv(fd, b, MSG - got, 0);
        if (n > 0) got += (int)n;
    }
}

/* Non-blocking, no Nagle, watched by a new epoll set (returned). */
static int prepare(int fd) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fcntl(fd, F_SETFL, O_NONBLOCK);
    int ep = epoll_create1(0);
    struct epoll_event e = {.events = EPOLLIN};
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e);
    return ep;
}

int main(int argc, char **argv) {
    use_sendmsg = argc > 1 && atoi(argv[1]) == 1;
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (bind(ls, (void *)&a, sizeof a) || listen(ls, 1) || getsockname(ls, (void *)&a, &len)) {
        perror("listen");
        return 1;
    }
    if (fork() == 0) {
        int s = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(s, (void *)&a, sizeof a)) {
            perror("connect");
            exit(1);
        }
        int ep = prepare(s);
        for (int i = 0; i < ROUNDS; i++) {
            receive_one(s, ep);
            send_one(s);
        }
        exit(0);
    }
    int s = accept(ls, NULL, NULL);
    int ep = prepare(s);
    double t0 = 0;
    for (int i = 0; i < ROUNDS; i++) {
        if (i == ROUNDS / 10) t0 = now_us();
        send_one(s);
        receive_one(s, ep);
    }
    printf("%s: %.3f us per round trip\n", use_sendmsg ? "sendmsg, 4 parts" : "send",
           (now_us() - t0) / (ROUNDS - ROUNDS / 10));
    return 0;
}
