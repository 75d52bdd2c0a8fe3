/*
 * The floor of a request/response test on loopback: one blocking
 * ping-pong, no clock read, no histogram, nothing but send and receive.
 * A tool measuring TCP_RR or UDP_RR cannot do better than this loop.
 *
 * usage: rr-floor tcp|udp REQ RESP SECONDS CLIENT_CPU SERVER_CPU
 * prints: transactions per second (a CPU of -1 leaves that end unpinned)
 *
 * usage: rr-floor stream SEND RECV SECONDS CLIENT_CPU SERVER_CPU
 * prints: bits per second sent by a blocking TCP send loop, the floor of
 * TCP_STREAM.
 * Like netperf and netbisect by default, TCP_NODELAY is left off.
 */
#define _GNU_SOURCE
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t done;
static void stop(int sig) { (void)sig; done = 1; }

static void pin(int cpu)
{
	cpu_set_t set;
	if (cpu < 0) return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) { perror("pin"); exit(2); }
}

/* All of n bytes, or 0 at end of file or when the time is up. */
static int full(int fd, char *buf, size_t n, int udp)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = recv(fd, buf + got, n - got, 0);
		if (r <= 0) return 0;
		if (udp) return 1;
		got += (size_t)r;
	}
	return 1;
}

static int udp, stream, srv;
static size_t req, resp;
static char *sbuf;

/* The server: a thread, as netbisect's in-process server is (a switch
 * between threads of one process is cheaper than between processes). */
static void *serve(void *cpu)
{
	pin(*(int *)cpu);
	int fd = srv;
	if (!udp) {
		fd = accept(srv, 0, 0);
		if (stream) {
			while (recv(fd, sbuf, resp, 0) > 0) {}
			return 0;
		}
		while (full(fd, sbuf, req, 0) && send(fd, sbuf, resp, 0) > 0) {}
		return 0;
	}
	struct sockaddr_in from;
	socklen_t flen = sizeof(from);
	if (recvfrom(fd, sbuf, req, 0, (void *)&from, &flen) <= 0 ||
	    connect(fd, (void *)&from, flen)) return 0;
	do {
		if (send(fd, sbuf, resp, 0) <= 0) break;
	} while (recv(fd, sbuf, req, 0) > 0);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 7) {
		fprintf(stderr, "usage: rr-floor tcp|udp|stream REQ RESP SECONDS CPU CPU\n");
		return 2;
	}
	udp = argv[1][0] == 'u';
	stream = argv[1][0] == 's';
	int type = udp ? SOCK_DGRAM : SOCK_STREAM;
	req = strtoul(argv[2], 0, 10);
	resp = strtoul(argv[3], 0, 10);
	int seconds = atoi(argv[4]), server_cpu = atoi(argv[6]);
	size_t size = (req > resp ? req : resp) + 1;
	char *buf = calloc(1, size);
	sbuf = calloc(1, size);
	struct sockaddr_in addr = { .sin_family = AF_INET };
	socklen_t len = sizeof(addr);
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);

	srv = socket(AF_INET, type, 0);
	if (srv < 0 || bind(srv, (void *)&addr, len) ||
	    getsockname(srv, (void *)&addr, &len) || (!udp && listen(srv, 1))) {
		perror("server socket"); return 2;
	}
	pthread_t server;
	pthread_create(&server, 0, serve, &server_cpu);
	pin(atoi(argv[5]));
	int fd = socket(AF_INET, type, 0);
	if (fd < 0 || connect(fd, (void *)&addr, len)) { perror("connect"); return 2; }
	struct sigaction sa = { .sa_handler = stop };
	sigaction(SIGALRM, &sa, 0); /* no SA_RESTART: a blocked recv returns */
	struct timespec t0, t1;
	unsigned long n = 0;
	alarm((unsigned)seconds);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (stream) {
		ssize_t sent;
		while (!done && (sent = send(fd, buf, req, 0)) > 0) n += (size_t)sent;
	} else {
		while (!done && send(fd, buf, req, 0) > 0 && full(fd, buf, resp, udp)) n++;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double s = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("%.2f\n", (stream ? 8.0 : 1.0) * n / s);
	return 0; /* exit ends the server thread */
}
