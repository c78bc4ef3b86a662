/*
 * The listener's table of live connections (see daemon/conn_limits.h).
 */
#include "daemon/conn_limits.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

void conn_peer_addr(const struct sockaddr *sa, socklen_t len, char *buf, size_t size)
{
	struct sockaddr_in v4;

	buf[0] = '\0';
	if (sa->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;
		if (IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
			memset(&v4, 0, sizeof v4);
			v4.sin_family = AF_INET;
			memcpy(&v4.sin_addr, &s6->sin6_addr.s6_addr[12], 4);
			sa = (const struct sockaddr *)&v4;
			len = sizeof v4;
		}
	}
	if (getnameinfo(sa, len, buf, (socklen_t)size, NULL, 0, NI_NUMERICHOST) != 0)
		buf[0] = '\0';
}

int conn_table_add(struct conn_table *t, pid_t pid, const char *addr, bool is_ssh,
		   int startup_fd)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		struct conn_entry *e = realloc(t->e, cap * sizeof *e);
		if (!e)
			return -1;
		t->e = e;
		t->cap = cap;
	}
	struct conn_entry *c = &t->e[t->n++];
	c->pid = pid;
	snprintf(c->addr, sizeof c->addr, "%s", addr);
	c->is_ssh = is_ssh;
	c->startup_fd = startup_fd;
	return 0;
}

static void forget(struct conn_table *t, size_t i)
{
	if (t->e[i].startup_fd >= 0)
		close(t->e[i].startup_fd);
	t->e[i] = t->e[--t->n];
}

void conn_table_reap(struct conn_table *t)
{
	pid_t pid;

	while ((pid = waitpid(-1, NULL, WNOHANG)) > 0 || (pid < 0 && errno == EINTR)) {
		for (size_t i = 0; i < t->n; i++) {
			if (t->e[i].pid == pid) {
				forget(t, i);
				break;
			}
		}
	}
}

size_t conn_table_host_count(const struct conn_table *t, const char *addr)
{
	size_t n = 0;

	for (size_t i = 0; i < t->n; i++)
		n += !t->e[i].is_ssh && strcmp(t->e[i].addr, addr) == 0;
	return n;
}

size_t conn_table_unauthenticated(const struct conn_table *t)
{
	size_t n = 0;

	for (size_t i = 0; i < t->n; i++)
		n += t->e[i].startup_fd >= 0;
	return n;
}

size_t conn_table_startup_pollfds(const struct conn_table *t, struct pollfd *pf, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < t->n && n < max; i++) {
		if (t->e[i].startup_fd >= 0)
			pf[n++] = (struct pollfd){.fd = t->e[i].startup_fd, .events = POLLIN};
	}
	return n;
}

void conn_table_startup_done(struct conn_table *t, int fd)
{
	for (size_t i = 0; i < t->n; i++) {
		if (t->e[i].startup_fd == fd) {
			close(fd);
			t->e[i].startup_fd = -1;
			return;
		}
	}
}

void conn_table_free(struct conn_table *t)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->e[i].startup_fd >= 0)
			close(t->e[i].startup_fd);
	free(t->e);
	*t = (struct conn_table){0};
}

bool max_startups_should_drop(const struct max_startups *m, size_t unauthenticated,
			      unsigned r100)
{
	if (unauthenticated >= (size_t)m->full)
		return true;
	if (unauthenticated < (size_t)m->start)
		return false;
	/* sshd.c: should_drop_startup */
	unsigned p = (unsigned)(100 - m->rate) * (unsigned)(unauthenticated - (size_t)m->start) /
		     (unsigned)(m->full - m->start) + (unsigned)m->rate;
	return r100 < p;
}

long long conn_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void linger_drop(struct linger_set *s, size_t i)
{
	close(s->fd[i]);
	s->n--;
	memmove(&s->fd[i], &s->fd[i + 1], (s->n - i) * sizeof s->fd[0]);
	memmove(&s->until_ms[i], &s->until_ms[i + 1], (s->n - i) * sizeof s->until_ms[0]);
}

void linger_add(struct linger_set *s, int fd)
{
	if (s->n == LINGER_MAX)
		linger_drop(s, 0); /* the oldest */
	s->fd[s->n] = fd;
	s->until_ms[s->n++] = conn_now_ms() + LINGER_MS;
}

size_t linger_pollfds(const struct linger_set *s, struct pollfd *pf)
{
	for (size_t i = 0; i < s->n; i++)
		pf[i] = (struct pollfd){.fd = s->fd[i], .events = POLLIN};
	return s->n;
}

/* Read what is waiting on fd; false when the peer closed or failed. */
static bool drain(int fd)
{
	char buf[4096];
	ssize_t r;

	while ((r = recv(fd, buf, sizeof buf, 0)) > 0)
		;
	return r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
}

void linger_service(struct linger_set *s, const struct pollfd *pf, size_t n)
{
	long long now = conn_now_ms();

	/* pf lists s's fds in order; dropping shifts s, so match by fd */
	for (size_t k = 0; k < n; k++) {
		if (!pf[k].revents)
			continue;
		for (size_t i = 0; i < s->n; i++) {
			if (s->fd[i] == pf[k].fd) {
				if (!drain(s->fd[i]))
					linger_drop(s, i);
				break;
			}
		}
	}
	for (size_t i = 0; i < s->n;) {
		if (s->until_ms[i] <= now)
			linger_drop(s, i);
		else
			i++;
	}
}

int linger_timeout_ms(const struct linger_set *s)
{
	if (!s->n)
		return -1;
	long long left = s->until_ms[0] - conn_now_ms(); /* the oldest is due first */
	return left < 0 ? 0 : left > LINGER_MS ? LINGER_MS : (int)left;
}

void linger_free(struct linger_set *s)
{
	while (s->n)
		linger_drop(s, s->n - 1);
}
