/*
 * crelay: the C floor a relay's CPU per message is judged against.
 *
 *	crelay CHILD [ARG...]
 *
 * It starts CHILD on two pipes (as aegis wrap and the Go floor relay,
 * internal/floorrelay, start theirs), with stderr inherited, and copies
 * its own stdin to the child's stdin and the child's stdout to its own
 * stdout with one poll loop: poll, read up to 64 KiB (aegis's read size),
 * write. Nothing else: no threads, no parsing, no splice. Its stdin and
 * stdout are whatever the client handed it, pipes or UNIX socketpairs.
 *
 * Every fd it moves bytes through is non-blocking, so that a direction
 * whose reader is slow holds its bytes and waits for POLLOUT instead of
 * blocking the other direction (a blocking write could deadlock against
 * a child that writes while nobody reads it). A direction with bytes
 * pending does not read more until they are written: memory stays one
 * buffer per direction, and the writer's pace is the reader's.
 *
 * After stdin's end and its bytes written, it closes the child's stdin;
 * after the child's stdout ends and its bytes are written, its own
 * stdout. It exits with the child's status (128 + signal if killed), or
 * 1 when it cannot start the child or poll.
 *
 * The bench harness (package bench, crelay.go) compiles it with gcc at
 * run time; it is no part of aegis, which has no cgo.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define BUFSIZE (64 << 10)

/* dir is one direction: bytes read from in, written to out. */
struct dir {
	int in, out;
	char buf[BUFSIZE];
	size_t off, len; /* pending bytes are buf[off:len] */
	int eof;         /* in ended or failed: nothing more to read */
	int done;        /* out closed: the direction is over */
};

static void die(const char *what) {
	fprintf(stderr, "crelay: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void nonblock(int fd) {
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		die("fcntl O_NONBLOCK");
}

/* finish closes out once in has ended and every byte is written. */
static void finish(struct dir *d) {
	if (!d->done && d->eof && d->off == d->len) {
		close(d->out);
		d->done = 1;
	}
}

/* flush writes pending bytes until done or the reader is full. A failed
 * write (the reader gone) drops the direction's bytes and ends it. */
static void flush(struct dir *d) {
	while (d->off < d->len) {
		ssize_t n = write(d->out, d->buf + d->off, d->len - d->off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return;
			d->off = d->len = 0;
			d->eof = 1;
			break;
		}
		d->off += (size_t)n;
	}
	d->off = d->len = 0;
	finish(d);
}

/* fill reads once into the empty buffer and writes what it read. */
static void fill(struct dir *d) {
	ssize_t n = read(d->in, d->buf, BUFSIZE);
	if (n < 0) {
		if (errno == EINTR || errno == EAGAIN)
			return;
		n = 0;
	}
	if (n == 0) {
		d->eof = 1;
		finish(d);
		return;
	}
	d->off = 0;
	d->len = (size_t)n;
	flush(d);
}

int main(int argc, char **argv) {
	if (argc < 2) {
		fprintf(stderr, "usage: crelay CHILD [ARG...]\n");
		return 2;
	}
	/* A reader gone is a failed write, not the end of the relay. */
	signal(SIGPIPE, SIG_IGN);

	int toChild[2], fromChild[2];
	if (pipe2(toChild, O_CLOEXEC) < 0 || pipe2(fromChild, O_CLOEXEC) < 0)
		die("pipe");
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		/* dup2 clears close-on-exec on 0 and 1 only. */
		if (dup2(toChild[0], 0) < 0 || dup2(fromChild[1], 1) < 0)
			_exit(127);
		execvp(argv[1], argv + 1);
		fprintf(stderr, "crelay: exec %s: %s\n", argv[1], strerror(errno));
		_exit(127);
	}
	close(toChild[0]);
	close(fromChild[1]);

	static struct dir up, down; /* client → child, child → client */
	up.in = 0;
	up.out = toChild[1];
	down.in = fromChild[0];
	down.out = 1;
	nonblock(0);
	nonblock(1);
	nonblock(toChild[1]);
	nonblock(fromChild[0]);

	struct dir *dirs[2] = {&up, &down};
	while (!up.done || !down.done) {
		struct pollfd pfd[2];
		for (int i = 0; i < 2; i++) {
			struct dir *d = dirs[i];
			pfd[i].revents = 0;
			if (d->done) {
				pfd[i].fd = -1;
			} else if (d->off < d->len) {
				pfd[i].fd = d->out;
				pfd[i].events = POLLOUT;
			} else {
				pfd[i].fd = d->in;
				pfd[i].events = POLLIN;
			}
		}
		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			die("poll");
		}
		for (int i = 0; i < 2; i++) {
			struct dir *d = dirs[i];
			if (pfd[i].fd < 0 || pfd[i].revents == 0)
				continue;
			if (d->off < d->len)
				flush(d);
			else
				fill(d);
		}
	}

	int status;
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR)
			die("waitpid");
	}
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}
